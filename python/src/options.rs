//! How Python callers say how a NEFF is read: the library's resource caps
//! (`neff.Limits`, handed over as a dict of the caps set) and read mode,
//! turned into `neff::Options`.

use std::collections::HashMap;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use neff::{Limits, Options, ReadMode};

/// `neff::Limits` from the caps a caller set (`{"max_inflated": 1 << 30}`);
/// a name the library does not have is a `ValueError`.
pub fn limits(set: Option<HashMap<String, u64>>) -> PyResult<Limits> {
    let mut l = Limits::default();
    let usize_of = |name: &str, v: u64| {
        usize::try_from(v).map_err(|_| PyValueError::new_err(format!("{name} {v} is too large")))
    };
    for (name, v) in set.unwrap_or_default() {
        l = match name.as_str() {
            "max_inflated" => l.max_inflated(v),
            "max_members" => l.max_members(usize_of(&name, v)?),
            "max_extended_header" => l.max_extended_header(v),
            "max_name_len" => l.max_name_len(usize_of(&name, v)?),
            "max_json_size" => l.max_json_size(v),
            "max_json_depth" => l.max_json_depth(usize_of(&name, v)?),
            "inflate_budget" => l.inflate_budget(v),
            "max_sparse_segments" => l.max_sparse_segments(usize_of(&name, v)?),
            "max_sparse_size" => l.max_sparse_size(v),
            _ => return Err(PyValueError::new_err(format!("no such limit: {name}"))),
        };
    }
    Ok(l)
}

/// `neff::Options` from the caps set and a read mode (`auto`, `map`,
/// `read`).
pub fn options(set: Option<HashMap<String, u64>>, read_mode: &str) -> PyResult<Options> {
    let mode = match read_mode {
        "auto" => ReadMode::Auto,
        "map" => ReadMode::Map,
        "read" => ReadMode::Read,
        other => {
            return Err(PyValueError::new_err(format!(
                "read_mode must be auto, map or read, not {other:?}"
            )))
        }
    };
    Ok(Options::default().limits(limits(set)?).read_mode(mode))
}
