//! An open NEFF ([`Neff`]): the one place that ties the layers together.
//!
//! [`Neff::open`] maps the file ([`crate::map`]), checks the header
//! ([`crate::header`]), gets the tar bytes ([`crate::payload`]: the stored
//! bytes, or one inflation) and walks them into an index ([`crate::tar`]);
//! every later question is answered from those, without reading the file
//! again, with members chosen by [`crate::select`] and parsed by
//! [`crate::json`]. A gzip payload over [`Limits::inflate_budget`] is not
//! held whole: the walk reads it as a bounded stream, keeping what
//! [`select::Retention`] asks for, and any other member's data is inflated
//! again when asked for ([`Neff::data`], [`DataCursor`]). Two policies live
//! here: which archive the tar walk is given (a slice, a map, a stream,
//! ranged reads) and what it keeps of it (`walk`, the reader's one call
//! into `tar::walk`), and how a remote object is read (`remote_plan`);
//! every other rule is in the layer that owns it (docs/ARCHITECTURE.md).
//!
//! [`Neff`]'s methods are in `neff.rs` but for one in each file that
//! builds on it: [`Neff::cursor`] in `cursor.rs`, `Neff::open_url` in
//! `remote_plan.rs` (each imports `neff`, and `neff` importing them back
//! would be an import circle).

mod cursor;
mod neff;
#[cfg(feature = "remote")]
mod remote_plan;
mod walk;

pub use cursor::DataCursor;
pub use neff::{Neff, Options, Scratch};
