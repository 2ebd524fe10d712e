//! `neff` reads AWS Neuron NEFF files (the compiled programs Trainium and
//! Inferentia run) from a memory map, without copying.
//!
//! A NEFF is a 1024-byte binary [`Header`] followed by a tar archive, gzip
//! compressed in package version 2 and raw in version 1 (`docs/FORMAT.md`).
//! [`Neff::open`] maps the file, checks the header, inflates a gzip payload
//! once (or walks it as a bounded stream when it is large) and indexes the
//! tar's members; the reference reader's questions ([`accessors`]) are then
//! answered from that one open file.
//!
//! The API, in one screen:
//!
//! | what | where |
//! |---|---|
//! | open a NEFF, list and read its members | [`Neff`], [`Options`], [`Entry`], [`Kind`], [`Limits`], [`ReadMode`] |
//! | the reference `NeffInfo` getters | [`accessors`] (and their `neff get` names, [`accessors::Accessor`]), [`Known`] |
//! | typed views of the JSON sidecars | [`views`] |
//! | what `neff info` shows | [`summary::Summary`] |
//! | check the payload hash | [`verify()`] |
//! | a directory of NEFFs in parallel | [`scan`], [`set_threads`] |
//! | a Neuron compile cache's entries: states, pruning | [`cache`] |
//! | the SQLite catalogue of a scan (feature `catalog`) | `catalog` |
//! | write and extract | [`pack`], [`unpack`] |
//! | device memory, fast loading, comparing | [`mem`], [`optimize`], [`diff`] |
//! | errors | [`Error`], [`ErrorKind`] |
//!
//! How the crate is built inside (one private module per step of the data's
//! path: header → payload → tar → select → json → reader → accessors) is
//! `docs/ARCHITECTURE.md`.
//!
//! ```
//! use neff::accessors::Accessor;
//! use neff::Neff;
//!
//! // A small NEFF bundled with the crate's tests.
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/acc/cc-replica-groups-gz.neff");
//! let neff = Neff::open(path)?;
//! for e in neff.files() {
//!     println!("{} {}", neff.name_str(e), e.size);
//! }
//! // The reference reader's questions, answered from the one open file.
//! assert_eq!(neff::accessors::cc_world_size(&neff)?, 2);
//! assert_eq!(neff::accessors::arch(&neff)?, "cayman");
//! // What `neff get FILE alias` prints: json.dumps of the answer.
//! let mut out = Vec::new();
//! Accessor::Alias.write_json(&neff, &mut out)?;
//! assert!(out.starts_with(b"{"));
//! # Ok::<(), neff::Error>(())
//! ```

#![deny(missing_docs)]
#![deny(unsafe_code)]

// The data's path, lowest first. Private: what users need is re-exported
// below; docs/ARCHITECTURE.md says what each owns, and tests/it/layering.rs
// keeps every module from importing one above it.
pub mod accessors;
mod error;
mod header;
mod json;
mod limits;
#[allow(unsafe_code)] // Memory maps: the crate's only unsafe code.
mod map;
#[cfg(feature = "remote")]
mod parts;
mod payload;
mod places;
mod pool;
mod reader;
#[cfg(feature = "remote")]
mod remote;
mod select;
mod source;
mod tar;

// Beside the path: tasks built on an open NEFF.
pub mod cache;
#[cfg(feature = "catalog")]
pub mod catalog;
pub mod diff;
pub mod mem;
pub mod optimize;
pub mod pack;
pub mod scan;
pub mod summary;
pub mod unpack;
mod verify;

/// Internals driven by the fuzz targets in `fuzz/` (feature `fuzzing`);
/// not part of the API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;

pub use error::{Error, ErrorKind, Result};
pub use header::{Compression, Header, PayloadSpan};
pub use limits::Limits;
pub use map::ReadMode;
pub use pool::{set_io_depth, set_threads, DEFAULT_IO_DEPTH};
pub use reader::{DataCursor, Neff, Options, Scratch};
#[cfg(feature = "remote")]
pub use remote::{
    redact as redact_url, redact_text as redact_urls_in, set_access as set_s3_access,
    set_byte_cap as set_remote_byte_cap, set_profile as set_aws_profile, stats as remote_stats,
    Stats as RemoteStats, WHOLE_BELOW as REMOTE_WHOLE_BELOW,
};
pub use select::{Known, Pattern};
pub use source::Source;
pub use tar::{Entry, Kind, Piece, Segment};
pub use verify::{verify, verify_bytes};

/// Typed views of the JSON sidecars (`def.json`, `kelf-*.json`,
/// `tensor_map.json`), borrowed from a parsed member.
pub mod views {
    pub use crate::json::views::*;
    pub use crate::json::{Json, Parsed};
}
