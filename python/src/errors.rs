//! `neff.NeffError` and the mapping of library errors to Python exceptions.
//!
//! Operating-system errors (`Error::Io`) become the matching `OSError`
//! subclass (`FileNotFoundError`, `PermissionError`, …); every other
//! refusal (bad header, corrupt payload, a guard of the reference reader,
//! JSON of the wrong shape) is a `NeffError` whose message is the
//! library's one-line reason, the text `neff` prints after `neff: <path>: `.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::PyErr;

create_exception!(
    neff,
    NeffError,
    PyException,
    "A NEFF the reader refuses: its message is the library's one-line reason \
     (for the reference reader's guards, its guard string verbatim)."
);

/// Converts a library error into the Python exception described above.
pub fn to_py(e: neff::Error) -> PyErr {
    match e {
        neff::Error::Io(io) => PyErr::from(io),
        other => NeffError::new_err(other.to_string()),
    }
}
