//! An open NEFF ([`Neff`]): the one place that ties the layers together.
//!
//! [`Neff::open`] maps the file ([`crate::map`]), checks the header
//! ([`crate::header`]), gets the tar bytes ([`crate::payload`]: the stored
//! bytes, or one inflation) and walks them into an index ([`crate::tar`]);
//! every later question is answered from those, without reading the file
//! again, with members chosen by [`crate::select`] and parsed by
//! [`crate::json`]. A gzip payload over [`Limits::inflate_budget`] is not
//! held whole: [`tar::walk`] walks it as a bounded stream, keeping what
//! [`select::Retention`] asks for, and any other member's data is inflated
//! again when asked for ([`Neff::data`], [`DataCursor`]). One policy lives
//! here, how a remote object is read (`remote_plan`); every other rule is
//! in the layer that owns it (docs/ARCHITECTURE.md).

mod cursor;
mod neff;
#[cfg(feature = "remote")]
mod remote_plan;

pub use cursor::DataCursor;
pub use neff::{Neff, Options, Scratch};
