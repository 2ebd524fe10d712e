//! The integration tests, in one binary (cargo's guidance: each file under
//! `tests/` is its own binary, each linking the whole crate). One module
//! per behaviour the tests pin; `common` holds what they share. The few
//! that need a process of their own stay beside it (`tests/claims.rs`:
//! it reads the peak RSS of every child its process has waited for).

mod common;

mod ambiguity;
mod architecture;
mod atime;
mod cache;
mod cache_eras;
mod cache_explain;
mod cache_layouts;
mod cache_sync;
#[cfg(feature = "catalog")]
mod catalog;
#[cfg(feature = "catalog")]
mod catalog_queries;
mod changing_files;
mod cli;
mod closed_pipe;
mod diff;
mod differential;
#[cfg(feature = "fuzzing")]
mod fuzz_replay;
mod hostile;
mod interop;
mod json;
mod layering;
mod limits;
mod manpage;
mod mem;
mod optimize;
mod pack_unpack;
mod paths;
mod peer_archives;
mod prune_hostile;
mod reference;
#[cfg(feature = "remote")]
mod remote;
#[cfg(feature = "catalog")]
mod retire;
#[cfg(feature = "catalog")]
mod roots;
mod scan;
mod shapes;
mod sparse;
mod streamed;
mod tar_constructs;
mod threads;
