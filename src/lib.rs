//! `neff` reads AWS Neuron NEFF files (the compiled programs Trainium and
//! Inferentia run) from a memory map, without copying.
//!
//! A NEFF is a 1024-byte binary [`header`] followed by a tar archive, gzip
//! compressed in package version 2 and raw in version 1. The crate follows
//! the data's path, one module per step:
//!
//! | step | module | what it owns |
//! |---|---|---|
//! | file bytes | [`map`] | the memory maps (the crate's two `unsafe` blocks, both there) |
//! | header | [`header`] | the zerocopy header struct and structural checks |
//! | payload | [`payload`] | one libdeflate inflation of a gzip payload (split across cores when large) |
//! | tar index | [`tar`] | the walk over tar headers into spans |
//! | selection | [`select`] | precompiled patterns over sorted names |
//! | open NEFF | [`neff`] | [`Neff`], tying the above together |
//! | JSON | [`json`] | simd-json tapes over member bytes, typed views, a validating skim for a few keys of a large member |
//! | accessors | [`accessors`] | the reference reader's roster |
//! | hash | [`verify`] | MD5 / SHA-256 of the stored payload |
//! | caps | [`limits`] | what hostile input may make the reader allocate |
//! | report | [`summary`] | what `neff info` shows |
//! | zoo | [`scan`] | parallel records over directories of NEFFs |
//! | catalogue | [`index`] | the scan remembered in SQLite (`scan --index`), and [`index::Catalog`] to query it |
//! | writing | [`pack`] | PAX tar + gzip + header, reproducibly |
//! | extracting | [`unpack`] | validated, contained extraction |
//! | helpers | [`threads`] | short-lived helper threads placed on another CPU |
//!
//! Users of the Python NeffInfo reader: the table mapping each of its
//! getters (`getDefJson`, `getCCRankWorldSize`, …) to a function here is in
//! [`accessors`].
//!
//! ```no_run
//! let neff = neff::Neff::open("model.neff")?;
//! for e in neff.files() {
//!     println!("{} {}", neff.name_str(e), e.size);
//! }
//! # Ok::<(), neff::Error>(())
//! ```

pub mod accessors;
pub mod error;
#[doc(hidden)]
pub mod harness;
pub mod header;
pub mod index;
pub mod json;
pub mod limits;
pub mod map;
pub mod neff;
pub mod pack;
pub mod payload;
pub mod scan;
pub mod select;
pub mod summary;
pub mod tar;
pub mod threads;
pub mod unpack;
pub mod verify;

pub use accessors::Accessor;
pub use error::{Error, Result};
pub use header::Header;
pub use limits::Limits;
pub use map::ReadMode;
pub use neff::{Neff, Options};
pub use select::Known;
pub use tar::{Entry, Kind};
