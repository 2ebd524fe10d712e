//! `neff._neff`: the extension module behind the `neff` Python package.
//!
//! A thin client of the `neff` crate: it opens NEFFs, runs the library's
//! accessors and scans, and hands Python bytes, JSON text and scalars. No
//! parsing happens here; the GIL is released around every open, inflate,
//! parse and scan so that Python threads run in parallel.
//!
//! | module | what it owns |
//! |---|---|
//! | [`errors`] | `NeffError`, its subclasses, and how library errors become Python exceptions |
//! | [`open`] | the `Neff` class: one open NEFF |
//! | [`scan`] | `scan()`: a streaming iterator of scan records |
//! | [`cache`] | `cache_status()`, `cache_prune()`, `cache_explain()`: the compile cache's entries |
//! | [`cache_sync`] | `cache_sync()`: one cache's ok entries copied into another |
//! | [`catalog`] | `Catalog`: a scan catalogue, read-only |
//! | [`options`] | `neff.Limits` and read modes as the library's `Options` |

use pyo3::prelude::*;

mod cache;
mod cache_sync;
mod catalog;
mod errors;
mod open;
mod options;
mod scan;

/// The `neff._neff` module.
#[pymodule]
fn _neff(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_class::<open::Neff>()?;
    m.add_class::<scan::ScanIter>()?;
    m.add_class::<catalog::Catalog>()?;
    m.add_function(wrap_pyfunction!(open::verify, m)?)?;
    m.add_function(wrap_pyfunction!(open::open_path, m)?)?;
    m.add_function(wrap_pyfunction!(scan::scan_paths, m)?)?;
    m.add_function(wrap_pyfunction!(scan::list_files, m)?)?;
    m.add_function(wrap_pyfunction!(is_url, m)?)?;
    m.add_function(wrap_pyfunction!(set_threads, m)?)?;
    m.add_function(wrap_pyfunction!(set_io_depth, m)?)?;
    m.add_function(wrap_pyfunction!(set_max_bytes_moved, m)?)?;
    m.add_function(wrap_pyfunction!(remote_stats, m)?)?;
    m.add_function(wrap_pyfunction!(set_aws_profile, m)?)?;
    m.add_function(wrap_pyfunction!(set_s3_access, m)?)?;
    m.add_function(wrap_pyfunction!(cache::cache_status, m)?)?;
    m.add_function(wrap_pyfunction!(cache::cache_prune, m)?)?;
    m.add_function(wrap_pyfunction!(cache_sync::cache_sync, m)?)?;
    m.add_function(wrap_pyfunction!(cache::cache_explain, m)?)?;
    m.add(
        "ACCESSORS",
        neff::accessors::Accessor::ALL.map(|a| a.name()).to_vec(),
    )?;
    // The binding's version, which is the neff crate's (python/Cargo.toml).
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

/// Sets the library's worker count (`neff -j`): a scan's workers, a large
/// payload's parallel inflate. 0: one per core.
#[pyfunction]
fn set_threads(n: usize) {
    neff::set_threads(n);
}

/// Sets how many remote objects a scan reads at once (`neff --io-depth`).
/// 0: the default.
#[pyfunction]
fn set_io_depth(n: usize) {
    neff::set_io_depth(n);
}

/// Caps the bytes moved per remote object (`neff --max-bytes-moved`);
/// `None` lifts the cap.
#[pyfunction]
#[pyo3(signature = (n=None))]
fn set_max_bytes_moved(n: Option<u64>) {
    neff::set_remote_byte_cap(n);
}

/// The process's remote requests so far: `(requests, in_flight, bytes)`.
#[pyfunction]
fn remote_stats() -> (u64, u64, u64) {
    let s = neff::remote_stats();
    (s.requests, s.in_flight, s.bytes)
}

/// Uses the AWS profile `name` of `~/.aws` for every S3 request of this
/// process (`neff --profile`); only the first call counts.
#[pyfunction]
fn set_aws_profile(name: &str) {
    neff::set_aws_profile(name);
}

/// Sends S3 requests unsigned and/or agrees to pay for a requester-pays
/// bucket (`neff --no-sign-request`, `--requester-pays`); only the first
/// call counts.
#[pyfunction]
#[pyo3(signature = (no_sign_request = false, requester_pays = false))]
fn set_s3_access(no_sign_request: bool, requester_pays: bool) {
    neff::set_s3_access(no_sign_request, requester_pays);
}

/// Whether `path` names a remote object (`s3://`, `http://`, `https://`)
/// rather than a local file: the library's own test.
#[pyfunction]
fn is_url(path: &str) -> bool {
    neff::Source::of(path).is_remote()
}
