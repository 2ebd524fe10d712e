//! `neff` reads AWS Neuron NEFF files (the compiled programs Trainium and
//! Inferentia run) from a memory map, without copying.
//!
//! A NEFF is a 1024-byte binary [`header`] followed by a tar archive, gzip
//! compressed in package version 2 and raw in version 1. The crate follows
//! the data's path, one module per step:
//!
//! | step | module | what it owns |
//! |---|---|---|
//! | file bytes | [`map`] | the memory maps and their SIGBUS guard (every `unsafe` block of the crate is there) |
//! | header | [`header`] | the zerocopy header struct and structural checks |
//! | payload | [`payload`] | a gzip payload inflated whole (libdeflate, split across cores when large) or as a bounded stream (zlib-rs, parallel rounds on a free core) |
//! | tar index | [`tar`] | the walk over tar headers (in memory, by `pread`, or over the inflating stream) into spans |
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
//! | device memory | [`mem`] | the §7 estimate per subgraph, NEFF and set |
//! | fast loading | [`optimize`] | raw payload, debug-only members dropped |
//! | comparing | [`diff`] | header, member and JSON-structure differences |
//! | text | [`quote`] | names and paths escaped for plain-text output, as `tar tf` escapes them |
//! | helpers | [`threads`] | short-lived helper threads placed on another CPU |
//!
//! Users of the Python NeffInfo reader: the table mapping each of its
//! getters (`getDefJson`, `getCCRankWorldSize`, …) to a function here is in
//! [`accessors`].
//!
//! ```
//! use neff::{Accessor, Neff};
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

pub mod accessors;
pub mod diff;
pub mod error;
#[doc(hidden)]
pub mod harness;
pub mod header;
pub mod index;
pub mod json;
pub mod limits;
pub mod map;
pub mod mem;
pub mod neff;
pub mod optimize;
pub mod pack;
pub mod payload;
pub mod quote;
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
