//! `Catalog`: a `neff scan --index` catalogue opened read-only, as the
//! library's `neff::catalog::Catalog` answers it (records as the JSON text
//! `neff scan --json` prints).

use std::path::PathBuf;
use std::sync::Mutex;

use pyo3::prelude::*;

use neff::catalog::{Catalog as Inner, Filter};

use crate::errors::{to_py, NeffError};

/// A catalogue opened read-only (see `neff.Catalog`).
#[pyclass(module = "neff._neff", frozen)]
pub struct Catalog {
    // An SQLite connection is used by one thread at a time.
    inner: Mutex<Inner>,
}

fn line(r: &neff::scan::Record) -> PyResult<String> {
    serde_json::to_string(r).map_err(|e| NeffError::new_err(e.to_string()))
}

#[pymethods]
impl Catalog {
    /// Opens the catalogue at `path` read-only: refuses a file that is not
    /// a catalogue, or one of another schema version (`CatalogError`).
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<Catalog> {
        let inner = py.allow_threads(|| Inner::open(&path)).map_err(to_py)?;
        Ok(Catalog {
            inner: Mutex::new(inner),
        })
    }

    /// The record of the file at `path` (however its path is typed), as
    /// JSON text; `None` when it is not in the catalogue.
    fn by_path(&self, py: Python<'_>, path: &str) -> PyResult<Option<String>> {
        let r = py
            .allow_threads(|| {
                self.inner
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .by_path(path)
            })
            .map_err(to_py)?;
        r.as_ref().map(line).transpose()
    }

    /// The records matching every condition given, in path order, as JSON
    /// texts.
    #[pyo3(signature = (ok = None, arch = None, min_cc_world_size = None, max_cc_world_size = None, path_prefix = None, input = None, input_shape = None, uuid = None))]
    #[allow(clippy::too_many_arguments)]
    fn query(
        &self,
        py: Python<'_>,
        ok: Option<bool>,
        arch: Option<String>,
        min_cc_world_size: Option<u64>,
        max_cc_world_size: Option<u64>,
        path_prefix: Option<String>,
        input: Option<String>,
        input_shape: Option<Vec<u64>>,
        uuid: Option<String>,
    ) -> PyResult<Vec<String>> {
        let mut f = Filter::default();
        f.ok = ok;
        f.arch = arch;
        f.min_cc_world_size = min_cc_world_size;
        f.max_cc_world_size = max_cc_world_size;
        f.path_prefix = path_prefix;
        f.input = input;
        f.input_shape = input_shape;
        f.uuid = uuid;
        let records = py
            .allow_threads(|| {
                self.inner
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .records(&f)
            })
            .map_err(to_py)?;
        records.iter().map(line).collect()
    }

    /// How many rows the catalogue holds.
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        py.allow_threads(|| self.inner.lock().unwrap_or_else(|p| p.into_inner()).len())
            .map_err(to_py)
    }
}
