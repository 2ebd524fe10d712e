//! `neff.NeffError`, its subclasses, and how library errors become Python
//! exceptions.
//!
//! Operating-system errors (`Error::Io`) become the matching `OSError`
//! subclass (`FileNotFoundError`, `PermissionError`, …), as `PyErr` makes
//! them from an `io::Error`. Every other error is an instance of the
//! `NeffError` subclass named after its [`neff::ErrorKind`] (`Header` →
//! `HeaderError`, …), whose message is the library's one-line reason: the
//! text `neff` prints after `neff: <path>: `. Three subclasses also derive
//! from the built-in exception that already means the same thing:
//! `OutOfMemoryError` from `MemoryError`, `NoMatchError` from `LookupError`
//! (as the `KeyError` of a missing exact name is) and `UsageError` from
//! `ValueError`.
//!
//! The subclasses are made once per interpreter with `type(name, bases,
//! namespace)`, since a class of two bases cannot be declared statically
//! with pyo3's `create_exception!`; their `__module__` is `neff`, where the
//! package exports them (so they pickle, e.g. across Ray tasks).

use neff::ErrorKind;
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyLookupError, PyMemoryError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyTuple, PyType};
use pyo3::PyErr;

create_exception!(
    neff,
    NeffError,
    PyException,
    "A NEFF the reader refuses: its message is the library's one-line reason \
     (for the reference reader's guards, its guard string verbatim). The \
     subclasses name the kind of refusal; NeffInfo raises NeffError itself."
);

/// A second base, beside `NeffError`, for the classes that have one.
#[derive(Clone, Copy)]
enum Also {
    Nothing,
    MemoryError,
    LookupError,
    ValueError,
}

/// One exception class per error kind except `Io`: (kind, class name,
/// second base, docstring). The order is the documented one.
const CLASSES: [(ErrorKind, &str, Also, &str); 15] = [
    (
        ErrorKind::Header,
        "HeaderError",
        Also::Nothing,
        "The 1024-byte header is not a NEFF header, or its sizes do not fit the file.",
    ),
    (
        ErrorKind::Gzip,
        "GzipError",
        Also::Nothing,
        "The gzip payload is corrupt or truncated.",
    ),
    (
        ErrorKind::Tar,
        "TarError",
        Also::Nothing,
        "The tar archive is malformed (the message gives the byte offset into the tar).",
    ),
    (
        ErrorKind::Hash,
        "HashError",
        Also::Nothing,
        "The payload's hash does not match the header's.",
    ),
    (
        ErrorKind::Limit,
        "LimitError",
        Also::Nothing,
        "A resource cap was reached (inflated size, entries, JSON size or depth, ...): \
         the input is refused, not obeyed.",
    ),
    (
        ErrorKind::Changed,
        "ChangedError",
        Also::Nothing,
        "The file was truncated or rewritten while it was read: nothing read from it is trusted.",
    ),
    (
        ErrorKind::OutOfMemory,
        "OutOfMemoryError",
        Also::MemoryError,
        "An allocation the input justified could not be made (also a MemoryError).",
    ),
    (
        ErrorKind::NoMatch,
        "NoMatchError",
        Also::LookupError,
        "No regular member's name matches the pattern (also a LookupError).",
    ),
    (
        ErrorKind::Json,
        "JsonError",
        Also::Nothing,
        "A JSON member is not valid JSON.",
    ),
    (
        ErrorKind::Shape,
        "ShapeError",
        Also::Nothing,
        "A JSON member is valid but not of the shape the accessor needs.",
    ),
    (
        ErrorKind::Guard,
        "GuardError",
        Also::Nothing,
        "A guard of the reference reader fired; the message is its string verbatim.",
    ),
    (
        ErrorKind::UnsafePath,
        "UnsafePathError",
        Also::Nothing,
        "Unpacking would write outside the target directory, or over itself.",
    ),
    (
        ErrorKind::Catalog,
        "CatalogError",
        Also::Nothing,
        "The SQLite catalogue of a scan refused or failed.",
    ),
    (
        ErrorKind::Refused,
        "RefusedError",
        Also::Nothing,
        "Refused for a reason not in the file's bytes (e.g. the path is a FIFO or a device).",
    ),
    (
        ErrorKind::Usage,
        "UsageError",
        Also::ValueError,
        "The request is malformed (e.g. a pattern that is not a regular expression; \
         also a ValueError).",
    ),
];

/// The classes of [`CLASSES`], in its order, made on first use.
static TYPES: GILOnceCell<Vec<Py<PyType>>> = GILOnceCell::new();

fn types(py: Python<'_>) -> PyResult<&Vec<Py<PyType>>> {
    TYPES.get_or_try_init(py, || {
        let type_ = py.get_type::<PyType>();
        let base = py.get_type::<NeffError>();
        CLASSES
            .iter()
            .map(|&(_, name, also, doc)| {
                let mut bases = vec![base.clone()];
                match also {
                    Also::Nothing => {}
                    Also::MemoryError => bases.push(py.get_type::<PyMemoryError>()),
                    Also::LookupError => bases.push(py.get_type::<PyLookupError>()),
                    Also::ValueError => bases.push(py.get_type::<PyValueError>()),
                }
                let bases = PyTuple::new(py, bases)?;
                let ns = PyDict::new(py);
                ns.set_item("__module__", "neff")?;
                ns.set_item("__doc__", doc)?;
                let cls = type_.call1((name, bases, ns))?;
                Ok(cls.downcast_into::<PyType>()?.unbind())
            })
            .collect()
    })
}

/// Adds `NeffError` and its subclasses to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("NeffError", py.get_type::<NeffError>())?;
    for (cls, &(_, name, _, _)) in types(py)?.iter().zip(CLASSES.iter()) {
        m.add(name, cls.bind(py))?;
    }
    Ok(())
}

/// The class for errors of `kind` (`NeffError` for a kind added to the
/// library after this table was written).
fn class_of(py: Python<'_>, kind: ErrorKind) -> PyResult<Bound<'_, PyType>> {
    let found = CLASSES.iter().position(|&(k, ..)| k == kind);
    Ok(match found {
        Some(i) => types(py)?[i].bind(py).clone(),
        None => py.get_type::<NeffError>(),
    })
}

/// Converts a library error into the Python exception described above.
pub fn to_py(e: neff::Error) -> PyErr {
    match e {
        neff::Error::Io(io) => PyErr::from(io),
        // A store or server that failed is an OSError, as with fsspec and
        // boto3 users: FileNotFoundError for a missing object, PermissionError
        // for a refusal.
        neff::Error::Remote { reason, io } => PyErr::from(std::io::Error::new(io, reason)),
        other => Python::with_gil(|py| match class_of(py, other.kind()) {
            Ok(cls) => PyErr::from_type(cls, other.to_string()),
            Err(failed) => failed,
        }),
    }
}
