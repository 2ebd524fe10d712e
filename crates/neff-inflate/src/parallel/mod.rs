//! Inflating one large gzip member's raw DEFLATE data on several cores,
//! and the one size from which any path does (`PARALLEL_FROM`).
//!
//! This module sees raw DEFLATE data only: its callers strip the gzip
//! framing ([`super::gzip`]) and check the output against the trailer.
//!
//! DEFLATE is sequential: each block may copy from the 32 KiB before it. To
//! split the work anyway (as pugz and rapidgzip do), the compressed stream is
//! cut, whole ([`inflate`], for the one-shot path), into as many chunks as
//! there are threads:
//!
//! 1. near each cut, the block finder (`deflate::plausible_start`)
//!    looks for the bit where a block starts;
//! 2. chunk 0 is inflated by libdeflate, given the stream up to the first
//!    block boundary with a final empty block appended;
//! 3. every other chunk is decoded by the marker decoder until its last
//!    32 KiB of output no longer depend on the unknown window, and from that
//!    block on by libdeflate, primed with those 32 KiB;
//! 4. the chunks are joined in order, each chunk's markers resolved from the
//!    bytes before it.
//!
//! The streamed walk takes the same pieces in bounded `Rounds` of N
//! segments instead, so that memory follows a round, never the payload;
//! a round that fails leaves `Rounds::resume`, where a one-core inflater
//! takes over without going back. How many threads are free is the
//! caller's to say ([`crate::Threads`]).
//!
//! Nothing here is trusted: the caller checks the joined output's length
//! and CRC-32 against the gzip trailer, and on any failure (no boundary
//! found, a window that never clears, a mismatch) inflates sequentially.

mod cuts;
mod search;
mod segment;
mod split;
mod streamed;
#[cfg(test)]
mod tests;

pub(crate) use search::{inflate_between, BETWEEN_ROOM};
pub use split::{inflate, split_inflate};
pub(crate) use streamed::Rounds;

/// The one threshold for "parallel or not": a gzip payload of at least
/// this many compressed bytes is inflated on more than one core, whole
/// ([`inflate`], by the one-shot path) or in bounded rounds (`Rounds`,
/// by the streamed walk); a smaller one on one core, by either path.
///
/// Going parallel costs CPU up front on both paths: a chunk or segment
/// after the first is marker-decoded (slowly, bit by bit) until its last
/// 32 KiB no longer depend on the unknown window, and its output is
/// resolved and copied into place. Below 16 MiB of gzip that cost is not
/// won back: on payloads of 9–12 MiB of gzip (text and noise mixed, 2:1 to
/// 10:1) the split took 2.1–2.3 times the CPU time of one libdeflate pass
/// and the rounds 1.8–2.3 times that of one zlib-rs pass, so two cores at
/// best break even (the split was 8 MiB, the rounds 16 MiB, until both
/// paths took this one threshold). The rounds need the room besides: two
/// first segments of 4 MiB, each cut searched up to 1 MiB further, before
/// what is left runs to the stream's end (and can overflow a segment's
/// output cap, failing the rounds and restarting the walk).
pub const PARALLEL_FROM: usize = 16 << 20;
