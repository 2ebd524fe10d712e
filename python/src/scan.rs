//! `scan()`: the library's zoo scan, streamed to Python one record at a time.
//!
//! The scan runs on its own thread (a rayon pool of `jobs` workers); each
//! record is serialized to the JSON line `neff scan --json` prints and
//! passed through a bounded channel, so memory stays flat however large
//! the zoo. The iterator waits for the next record with the GIL released.
//! Dropping the iterator early lets the scan finish without output.

use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Mutex;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use neff::scan::{self, ScanOptions};

use crate::errors::{to_py, NeffError};

/// Records waiting to be taken.
const QUEUE: usize = 1024;

/// An iterator of scan records, each the `neff scan --json` line as bytes.
#[pyclass(module = "neff._neff", frozen)]
pub struct ScanIter {
    rx: Mutex<Receiver<Result<Vec<u8>, Failed>>>,
}

/// Why the scan stopped early: the library's error (its kind picks the
/// exception class), or a record that could not be serialized.
enum Failed {
    Scan(neff::Error),
    Record(String),
}

#[pymethods]
impl ScanIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let next = py.allow_threads(|| {
            let rx = self.rx.lock().unwrap_or_else(|p| p.into_inner());
            rx.recv().ok()
        });
        match next {
            None => Ok(None),
            Some(Ok(line)) => Ok(Some(PyBytes::new(py, &line))),
            Some(Err(Failed::Scan(e))) => Err(to_py(e)),
            Some(Err(Failed::Record(e))) => Err(NeffError::new_err(e)),
        }
    }
}

/// Lists every `*.neff` under `paths` as `scan` would read them (sorted,
/// sharded): `(files, walk_errors)`, the errors as `neff scan --json` lines.
#[pyfunction]
#[pyo3(signature = (paths, shard = None))]
pub fn list_files(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    shard: Option<(usize, usize)>,
) -> PyResult<(Vec<String>, Vec<String>)> {
    check_shard(shard)?;
    py.allow_threads(|| {
        let (files, errors) = scan::list(&paths, shard);
        let errors = errors
            .iter()
            .map(|r| serde_json::to_string(r).map_err(|e| NeffError::new_err(e.to_string())))
            .collect::<PyResult<Vec<_>>>()?;
        Ok((
            files.iter().map(|p| p.display().to_string()).collect(),
            errors,
        ))
    })
}

fn check_shard(shard: Option<(usize, usize)>) -> PyResult<()> {
    if let Some((k, n)) = shard {
        if n == 0 || k == 0 || k > n {
            return Err(PyValueError::new_err(format!(
                "shard must be (K, N) with 1 <= K <= N, not ({k}, {n})"
            )));
        }
    }
    Ok(())
}

/// Scans every `*.neff` under `paths` (files named directly are kept
/// whatever their name) on `jobs` threads (0: one per core), keeping shard
/// `k` of `n` of the sorted list when `shard=(k, n)`. Records come in
/// completion order, walk errors as the walk meets them (first, when the
/// scan is sharded), as `neff scan --json` prints them.
/// A root that cannot be opened (missing, a dangling or looping link, a
/// directory its user may not read, a prefix that cannot be listed) is a
/// record too, `ok` False, its `path` the root as given: no exception.
///
/// As `neff scan`'s flags: `limits` (a dict of the caps set), `verify`
/// (check every payload's hash), `globs`, `max_depth`, `follow`,
/// `one_file_system` (the walk),
/// and `index` (a catalogue file kept current, `rebuild` to start it
/// over): records of unchanged files then come from it.
#[pyfunction]
#[pyo3(name = "scan", signature = (paths, jobs = 0, shard = None, limits = None, verify = false, globs = Vec::new(), max_depth = None, follow = true, index = None, rebuild = false, one_file_system = false))]
#[allow(clippy::too_many_arguments)]
pub fn scan_paths(
    paths: Vec<PathBuf>,
    jobs: usize,
    shard: Option<(usize, usize)>,
    limits: Option<std::collections::HashMap<String, u64>>,
    verify: bool,
    globs: Vec<String>,
    max_depth: Option<usize>,
    follow: bool,
    index: Option<PathBuf>,
    rebuild: bool,
    one_file_system: bool,
) -> PyResult<ScanIter> {
    check_shard(shard)?;
    let walk = scan::Walk::default()
        .globs(globs)
        .max_depth(max_depth)
        .follow_links(follow)
        .one_file_system(one_file_system);
    walk.check().map_err(to_py)?;
    let opts = ScanOptions::default()
        .jobs(jobs)
        .shard(shard)
        .open(crate::options::options(limits, "auto")?)
        .verify(verify)
        .walk(walk);
    let (tx, rx) = sync_channel(QUEUE);
    std::thread::Builder::new()
        .name("neff-scan".into())
        .spawn(move || {
            let line =
                |r: &scan::Record| serde_json::to_vec(r).map_err(|e| Failed::Record(e.to_string()));
            let tx = Mutex::new(tx);
            let emit = |r: scan::Record| {
                let l = line(&r);
                let _ = tx.lock().unwrap_or_else(|p| p.into_inner()).send(l);
            };
            let done = match &index {
                Some(db) => {
                    neff::catalog::scan_indexed(db, rebuild, &paths, &opts, &|r, _| emit(r))
                        .map(drop)
                }
                // A bucket's objects are read as its pages are listed.
                None => scan::scan_listing(&paths, &opts, &|_| (), &emit),
            };
            if let Err(e) = done {
                let _ = tx
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .send(Err(Failed::Scan(e)));
            }
        })
        .map_err(|e| NeffError::new_err(format!("cannot start the scan thread: {e}")))?;
    Ok(ScanIter { rx: Mutex::new(rx) })
}
