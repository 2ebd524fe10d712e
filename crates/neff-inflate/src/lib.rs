//! A strict gzip inflater: whole in one pass, as a bounded stream, or on
//! several threads, from one slice of input (a memory map).
//!
//! - [`inflate`] / [`inflate_within`]: the one-shot path. A single-member
//!   payload goes to libdeflate in one pass into one huge-page buffer sized
//!   from its trailer, or is split across threads ([`parallel`]) when it is
//!   at least [`PARALLEL_FROM`] bytes and more than one thread is free.
//! - [`GzStream`]: the bounded stream. Output comes out in the caller's
//!   window, so memory follows the window, never the payload; large members
//!   are inflated in parallel rounds, runs of stored blocks are read where
//!   they lie, and every member's trailer is checked.
//!   Its input may still be arriving ([`GzStream::arriving`]: a file
//!   being downloaded under its map): each read waits for its bytes.
//! - [`GzReader`]: input that arrives in pieces (any `Read`: a network
//!   body, a pipe), inflated on the calling thread as it comes, with one
//!   buffer of input; the same framing and error texts.
//!
//! Both read the gzip framing the same strict way ([`gzip`]): RFC 1952's
//! reserved flag bits refused, every member's CRC-32 and length checked,
//! nothing after a member but another member or zero padding (libarchive
//! pads to its block), and a caller's cap on the output size. The texts of
//! their errors are the same, so an input gets one answer whichever path
//! read it.
//!
//! How many threads the engine may use is the caller's to say, at each
//! parallel step, through a [`Threads`] function: a program whose own pool
//! keeps every core busy says 1 and gets one-core inflation.
//!
//! ```
//! # fn main() -> neff_inflate::Result<()> {
//! use std::io::Write;
//! let data = b"tar bytes, and more tar bytes ".repeat(1000);
//! let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
//! gz.write_all(&data)?;
//! let gz = gz.finish()?;
//!
//! // Whole, on up to every thread of the current rayon pool:
//! let out = neff_inflate::inflate(&gz, 1 << 30, neff_inflate::pool_threads)?;
//! assert_eq!(&out[..], &data[..]);
//!
//! // As a stream, 4 KiB at a time:
//! let mut s = neff_inflate::GzStream::new(&gz, 1 << 30)?;
//! let (mut window, mut total) = (vec![0u8; 4096], 0);
//! loop {
//!     let n = s.fill(&mut window)?;
//!     if n == 0 {
//!         break;
//!     }
//!     assert_eq!(&window[..n], &data[total..total + n]);
//!     total += n;
//! }
//! assert_eq!(total, data.len());
//! # Ok(()) }
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod arriving;
mod buf;
mod deflate;
mod error;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod gzip;
mod hooks;
pub mod parallel;
mod pieces;
#[cfg(test)]
mod samples;
mod stored;
mod stream;
mod whole;

pub use arriving::Arriving;
pub use error::{Error, Result};
pub use hooks::{one_thread, pool_threads, Passed, Threads};
pub use parallel::PARALLEL_FROM;
pub use pieces::{GzReader, HEADER_MAX};
pub use stream::GzStream;
pub use whole::{inflate, inflate_within, Inflated, Whole};
