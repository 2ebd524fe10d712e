//! `cache_status()`, `cache_prune()` and `cache_explain()`: the library's compile-cache
//! reports (`neff::cache`), each record the JSON object `neff cache
//! status --json` (or `prune --json`) prints, with the GIL released while
//! the cache is read.

use std::path::PathBuf;
use std::time::Duration;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use neff::cache::PruneOptions;

use crate::errors::{to_py, NeffError};

/// Serializes each item to its JSON text.
fn lines<T: serde::Serialize>(items: &[T]) -> PyResult<Vec<String>> {
    items
        .iter()
        .map(|x| serde_json::to_string(x).map_err(|e| NeffError::new_err(e.to_string())))
        .collect()
}

/// The cache root to read ([`neff::cache::root_or_default`]).
fn root_of(root: Option<PathBuf>) -> PathBuf {
    neff::cache::root_or_default(root)
}

/// Every entry's state: `(entries, errors)`, each a list of JSON texts.
#[pyfunction]
#[pyo3(signature = (root = None))]
pub fn cache_status(py: Python<'_>, root: Option<PathBuf>) -> PyResult<(Vec<String>, Vec<String>)> {
    let root = root_of(root);
    let status = py
        .allow_threads(|| neff::cache::status(&root))
        .map_err(to_py)?;
    Ok((lines(&status.entries)?, lines(&status.errors)?))
}

/// What [`cache_explain`] says beside its entries: the graph and flags
/// hash asked about, the flags compared with, the job's flags hashes.
#[derive(serde::Serialize)]
struct Asked<'a> {
    graph_hash: Option<&'a str>,
    flags_hash: Option<&'a str>,
    flags: Option<&'a [String]>,
    hashes: std::collections::BTreeMap<&'static str, &'a str>,
}

/// Why a compile missed: `(asked, entries, errors)`, JSON texts (`asked`:
/// [`Asked`]; each entry as `neff cache explain --json` prints it).
#[pyfunction]
#[pyo3(signature = (root = None, entry = None, graph = None, flags = None))]
pub fn cache_explain(
    py: Python<'_>,
    root: Option<PathBuf>,
    entry: Option<PathBuf>,
    graph: Option<String>,
    flags: Option<Vec<String>>,
) -> PyResult<(String, Vec<String>, Vec<String>)> {
    let root = root_of(root);
    let mut q = match entry {
        Some(e) => neff::cache::ExplainQuery::entry(e),
        None => neff::cache::ExplainQuery::default(),
    };
    q.graph = graph;
    if let Some(f) = flags {
        q = q.with_flags(f);
    }
    let x = py
        .allow_threads(|| neff::cache::explain(&root, &q))
        .map_err(to_py)?;
    let asked = Asked {
        graph_hash: x.graph_hash.as_deref(),
        flags_hash: x.flags_hash.as_deref(),
        flags: x.flags.as_deref(),
        hashes: x.hashes.iter().map(|(r, h)| (r.name(), h.as_str())).collect(),
    };
    let asked = serde_json::to_string(&asked).map_err(|e| NeffError::new_err(e.to_string()))?;
    Ok((asked, lines(&x.entries)?, lines(&x.errors)?))
}

/// The entries selected, removed when `apply`: `(removals, errors,
/// unreadable, short)` (JSON texts, whether part of the cache could not be
/// read, and why `max_size` was not reached). Durations in seconds, sizes
/// in bytes; `min_age` `None`: the CLI's default.
#[pyfunction]
#[pyo3(signature = (root, failed = false, corrupt = false, locked_older_than = None,
    incomplete_older_than = None, keep_versions = None, max_size = None,
    include_current = false, apply = false, min_age = None))]
#[allow(clippy::too_many_arguments)]
pub fn cache_prune(
    py: Python<'_>,
    root: PathBuf,
    failed: bool,
    corrupt: bool,
    locked_older_than: Option<f64>,
    incomplete_older_than: Option<f64>,
    keep_versions: Option<usize>,
    max_size: Option<u64>,
    include_current: bool,
    apply: bool,
    min_age: Option<f64>,
) -> PyResult<(Vec<String>, Vec<String>, bool, Option<String>)> {
    let root = root_of(Some(root));
    let secs = |s: f64| {
        Duration::try_from_secs_f64(s)
            .map_err(|_| PyValueError::new_err(format!("{s}: not a duration in seconds")))
    };
    let mut opts = PruneOptions::default()
        .failed(failed)
        .corrupt(corrupt)
        .include_current(include_current)
        .apply(apply);
    if let Some(b) = max_size {
        opts = opts.max_size(b);
    }
    if let Some(s) = locked_older_than {
        opts = opts.locked_older_than(secs(s)?);
    }
    if let Some(s) = incomplete_older_than {
        opts = opts.incomplete_older_than(secs(s)?);
    }
    if let Some(n) = keep_versions {
        opts = opts.keep_versions(n);
    }
    if let Some(s) = min_age {
        opts = opts.min_age(secs(s)?);
    }
    opts.check()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let (status, removed) = py
        .allow_threads(|| {
            neff::cache::refuse_pruning(&root)?;
            let status = neff::cache::status(&root)?;
            let removed = neff::cache::prune(&root, &status, &opts)?;
            Ok::<_, neff::Error>((status, removed))
        })
        .map_err(to_py)?;
    Ok((
        lines(&removed.removals)?,
        lines(&status.errors)?,
        status.has_unreadable(),
        removed.short,
    ))
}
