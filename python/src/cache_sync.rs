//! `cache_sync()`: the library's [`neff::cache::sync`], each record the
//! JSON object `neff cache sync --json` prints, with the GIL released
//! while the caches are read and written.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use neff::cache::SyncOptions;

use crate::errors::{to_py, NeffError};

/// Serializes each item to its JSON text.
fn lines<T: serde::Serialize>(items: &[T]) -> PyResult<Vec<String>> {
    items
        .iter()
        .map(|x| serde_json::to_string(x).map_err(|e| NeffError::new_err(e.to_string())))
        .collect()
}

/// Every `ok` entry of `src` that `dst` lacks, copied (unless `dry_run`):
/// `(entries, errors, passed_over, requests)`, the first two JSON texts.
/// `since`: seconds since the epoch.
#[pyfunction]
#[pyo3(signature = (src, dst, dry_run = false, versions = Vec::new(), globs = Vec::new(),
    since = None, io_depth = None))]
pub fn cache_sync(
    py: Python<'_>,
    src: PathBuf,
    dst: PathBuf,
    dry_run: bool,
    versions: Vec<String>,
    globs: Vec<String>,
    since: Option<f64>,
    io_depth: Option<usize>,
) -> PyResult<(Vec<String>, Vec<String>, usize, u64)> {
    let mut opts = SyncOptions::default().dry_run(dry_run);
    for v in versions {
        opts = opts.version(v);
    }
    for g in globs {
        opts = opts.glob(g);
    }
    if let Some(s) = since {
        let t = Duration::try_from_secs_f64(s)
            .ok()
            .and_then(|d| SystemTime::UNIX_EPOCH.checked_add(d))
            .ok_or_else(|| PyValueError::new_err(format!("{s}: not a time in seconds")))?;
        opts = opts.since(t);
    }
    if let Some(n) = io_depth {
        opts = opts.io_depth(n);
    }
    let done = py
        .allow_threads(|| neff::cache::sync(&src, &dst, &opts))
        .map_err(to_py)?;
    Ok((
        lines(&done.entries)?,
        lines(&done.errors)?,
        done.passed_over,
        done.requests,
    ))
}
