//! The `Neff` class: one open, indexed NEFF shared by Python threads.
//!
//! Every method clones the shared handle, releases the GIL and asks the
//! library. `close()` drops this object's handle; the map is unmapped once
//! no call is still using it.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use neff::accessors::Accessor;
use neff::Neff as Reader;

use crate::errors::{to_py, NeffError};

/// An open NEFF (see `neff.open`).
#[pyclass(module = "neff._neff", frozen)]
pub struct Neff {
    inner: RwLock<Option<Arc<Reader>>>,
    path: PathBuf,
}

/// Opens and indexes the NEFF at `path` (GIL released): maps the file,
/// checks the header, inflates a gzip payload and walks the tar headers.
/// `early_cc=True` starts skimming a raw NEFF's def.json for its collective
/// keys during the walk (`neff::Options::early_cc`, as `neff get has-cc`
/// and `cc-world-size` do): for a caller whose first question is one of those.
/// `limits` caps resources (`neff.Limits` as a dict of the caps set);
/// `read_mode` is `auto`, `map` or `read` (`neff --read-mode`).
#[pyfunction]
#[pyo3(name = "open", signature = (path, early_cc = false, limits = None, read_mode = "auto"))]
pub fn open_path(
    py: Python<'_>,
    path: PathBuf,
    early_cc: bool,
    limits: Option<std::collections::HashMap<String, u64>>,
    read_mode: &str,
) -> PyResult<Neff> {
    let opts = crate::options::options(limits, read_mode)?.early_cc(early_cc);
    let reader = py
        .allow_threads(|| Reader::open_with(&path, &opts))
        .map_err(to_py)?;
    Ok(Neff {
        inner: RwLock::new(Some(Arc::new(reader))),
        path,
    })
}

impl Neff {
    fn reader(&self) -> PyResult<Arc<Reader>> {
        self.inner
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or_else(|| PyValueError::new_err("I/O operation on closed NEFF"))
    }

    /// As `neff` does after a read: a file truncated or rewritten while
    /// this call read it is reported as changed, whatever the answer (the
    /// bytes seen were zeros where the pages went), before the answer's
    /// own error.
    fn unchanged<T>(r: &Reader, answer: neff::Result<T>) -> PyResult<T> {
        r.check_unchanged().map_err(to_py)?;
        answer.map_err(to_py)
    }

    fn accessor(name: &str) -> PyResult<Accessor> {
        Accessor::from_name(name)
            .ok_or_else(|| PyValueError::new_err(format!("unknown accessor {name}")))
    }
}

#[pymethods]
impl Neff {
    /// The path this NEFF was opened from.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.inner
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .is_none()
    }

    /// Drops this object's hold on the file (idempotent).
    fn close(&self) {
        *self.inner.write().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// `neff info --json` as JSON text: the decoded header and a summary.
    fn summary_json(&self, py: Python<'_>) -> PyResult<String> {
        let r = self.reader()?;
        let summary = py.allow_threads(|| neff::summary::Summary::of(&r));
        Neff::unchanged(&r, Ok(()))?;
        serde_json::to_string(&summary).map_err(|e| NeffError::new_err(e.to_string()))
    }

    /// Every regular member as `(name, size, kind)`, in archive order;
    /// with `all=True`, directories, links and other entries too.
    #[pyo3(signature = (all = false))]
    fn members(&self, py: Python<'_>, all: bool) -> PyResult<Vec<(String, u64, &'static str)>> {
        let r = self.reader()?;
        Ok(py.allow_threads(|| {
            r.entries()
                .iter()
                .filter(|e| all || e.kind == neff::Kind::File)
                .map(|e| (r.name_str(e).into_owned(), e.size, e.kind.as_str()))
                .collect()
        }))
    }

    /// The bytes of the regular member named exactly `name` (a copy).
    /// `KeyError` when there is none.
    fn read<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyBytes>> {
        let r = self.reader()?;
        let found = py.allow_threads(|| r.member(name.as_bytes()).map(|e| r.data(e)));
        match found {
            Some(data) => {
                // The copy reads a mapped member's pages: check after it.
                let data = data.map(|d| PyBytes::new(py, &d));
                Neff::unchanged(&r, data)
            }
            None => Err(PyKeyError::new_err(name.to_string())),
        }
    }

    /// The first regular member, in byte-wise name order, whose name the
    /// regular expression `pattern` matches (unanchored): `(name, bytes)`.
    /// No match raises `NoMatchError("no member matches <pattern>")`.
    fn find<'py>(&self, py: Python<'py>, pattern: &str) -> PyResult<(String, Bound<'py, PyBytes>)> {
        let r = self.reader()?;
        let found = py.allow_threads(|| {
            r.find_pattern(pattern)
                .and_then(|e| Ok((r.name_str(e).into_owned(), r.data(e)?)))
        });
        let found = found.map(|(name, data)| (name, PyBytes::new(py, &data)));
        Neff::unchanged(&r, found)
    }

    /// An accessor's answer as the compact JSON `neff get` prints (without
    /// the newline), by its `neff get` name or NeffInfo getter name.
    fn get_json<'py>(&self, py: Python<'py>, accessor: &str) -> PyResult<Bound<'py, PyBytes>> {
        let a = Neff::accessor(accessor)?;
        let r = self.reader()?;
        let mut out = Vec::new();
        let answer = py.allow_threads(|| a.write_json(&r, &mut out));
        Neff::unchanged(&r, answer)?;
        Ok(PyBytes::new(py, &out))
    }

    /// The single target arch (kelf's `target`).
    fn arch(&self, py: Python<'_>) -> PyResult<String> {
        let r = self.reader()?;
        let answer = py.allow_threads(|| neff::accessors::arch(&r).map(str::to_string));
        Neff::unchanged(&r, answer)
    }

    /// Whether def.json carries collective metadata.
    fn has_cc(&self, py: Python<'_>) -> PyResult<bool> {
        let r = self.reader()?;
        let answer = py.allow_threads(|| neff::accessors::has_cc(&r));
        Neff::unchanged(&r, answer)
    }

    /// The collective world size (≥ 1); refused with the guard strings.
    fn cc_world_size(&self, py: Python<'_>) -> PyResult<u128> {
        let r = self.reader()?;
        let answer = py.allow_threads(|| neff::accessors::cc_world_size(&r));
        Neff::unchanged(&r, answer)
    }

    /// The number of NeuronCores (neff.json's kelf nodes, else kelf graphs).
    fn num_cores(&self, py: Python<'_>) -> PyResult<u64> {
        let r = self.reader()?;
        let answer = py.allow_threads(|| neff::accessors::num_cores(&r));
        Neff::unchanged(&r, answer)
    }

    /// Whether the tensor map asks for a must-alias.
    fn must_alias(&self, py: Python<'_>) -> PyResult<bool> {
        let r = self.reader()?;
        let answer = py.allow_threads(|| neff::accessors::must_alias(&r));
        Neff::unchanged(&r, answer)
    }

    /// Whether the payload is gzip-compressed.
    fn is_compressed(&self) -> PyResult<bool> {
        Ok(self.reader()?.is_compressed())
    }
}

/// Checks the NEFF at `path` as `neff verify` does: its header's sizes and
/// its payload's hash (every byte read). Returns nothing; raises the
/// library's refusal (`HashError` for a hash that differs).
#[pyfunction]
#[pyo3(signature = (path, limits = None, read_mode = "auto"))]
pub fn verify(
    py: Python<'_>,
    path: PathBuf,
    limits: Option<std::collections::HashMap<String, u64>>,
    read_mode: &str,
) -> PyResult<()> {
    let opts = crate::options::options(limits, read_mode)?;
    py.allow_threads(|| neff::verify(&path, &opts))
        .map_err(to_py)
}
