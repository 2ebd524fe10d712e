//! The remote read plan: how a NEFF in a bucket or behind a URL is read,
//! chosen once per object from what its first bytes and the link say
//! (the payload's kind and size, the object's size, the round trip, the
//! read mode, whether a scan's every other worker is busy). The one place
//! this policy lives; each way is the layer's that owns it (remote
//! objects, spools and landings in `remote`, the ranged and streamed
//! walks in `tar`, the inflater in `payload`).

use super::neff::{Neff, Options, Tar};
use super::walk::{inflating, walk};
use crate::error::{Error, Result};
use crate::header::{Compression, Header, PayloadSpan};
use crate::map::{FileBytes, ReadMode};
use crate::payload;
use crate::remote;
use crate::tar::{self, Archive};

/// How a remote object's payload is read, once its first bytes are in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    /// A gzip payload inflated as its parts arrive, the walk keeping the
    /// accessors' members: no temporary file, the transfer and the
    /// inflation overlapping. For a payload that would be inflated on one
    /// core anyway: small, or read by a scan's worker while every other
    /// worker reads too.
    Stream,
    /// A large gzip payload with threads to spare: spooled to a temporary
    /// file and inflated in parallel rounds from its map as the parts land.
    Landing,
    /// Spooled to a temporary file as it arrives, then read as a local file
    /// is: gzip that is not to be mapped (`--read-mode read`), or a raw
    /// object small enough that one more request for the rest costs less
    /// than walking its headers by ranges, a round trip each.
    Spool,
    /// A raw payload walked by ranged requests: its headers, and the
    /// members the accessors read.
    Ranged,
}

impl Plan {
    /// The plan for payload `span` of an object of `size` bytes, read in
    /// `mode`; `busy`: by a scan's worker whose every other worker is busy.
    fn of(span: PayloadSpan, size: u64, mode: ReadMode, busy: bool) -> Plan {
        let gzip = span.compression == Compression::Gzip;
        if gzip && (span.len < payload::PARALLEL_FROM || busy) {
            Plan::Stream
        } else if gzip && mode != ReadMode::Read {
            Plan::Landing
        } else if gzip || size <= remote::whole_below(remote::WHOLE_BELOW) {
            Plan::Spool
        } else {
            Plan::Ranged
        }
    }
}

/// [`Plan::Stream`]: the payload inflated as it arrives.
fn streamed(
    object: remote::Object,
    first: Vec<u8>,
    span: PayloadSpan,
    opts: &Options,
    busy: bool,
) -> Result<Neff> {
    let limits = &opts.limits;
    let cap = limits.max_inflated;
    let (from, held) = (&object, &first[..]);
    let gz = Archive::Stream(Box::new(move |_| {
        let s: Box<dyn tar::ByteStream + '_> = Box::new(remote_gz(from, held, span, cap, busy)?);
        Ok(s)
    }));
    let walked = walk(gz, None, limits)?;
    let tar = Tar::Streamed {
        retained: walked.retained,
        len: walked.len,
        spare: None,
        object: Some(object),
    };
    Ok(Neff::assembled(
        FileBytes::Owned(first),
        span,
        tar,
        walked.index,
        opts,
    ))
}

/// [`Plan::Landing`]: spooled, and inflated in rounds as the parts land.
fn landing(
    object: &remote::Object,
    first: &[u8],
    span: PayloadSpan,
    opts: &Options,
) -> Result<Neff> {
    object.spool_landing(first, |file, landing| {
        let bytes = FileBytes::from_open(file, object.size(), ReadMode::Map, Vec::new())?;
        let stored = bytes
            .get(span.start..span.start + span.len)
            .ok_or_else(|| Error::refused("the payload runs past the object"))?;
        let base = span.start as u64;
        let waits =
            |r: std::ops::Range<usize>| landing.wait(base + r.start as u64..base + r.end as u64);
        let release = |r: std::ops::Range<usize>| bytes.release(span.start + r.start, r.len());
        let gz = inflating(stored, &opts.limits, &release, Some(&waits));
        let walked = walk(gz, None, &opts.limits)?;
        let tar = Tar::Streamed {
            retained: walked.retained,
            len: walked.len,
            spare: None,
            object: None,
        };
        Ok(Neff::assembled(bytes, span, tar, walked.index, opts))
    })
}

impl Neff {
    /// Opens and indexes the NEFF at `url` (`s3://bucket/key`,
    /// `https://host/path`, `http://host/path`) without downloading it
    /// where it need not: one GET of its first 256 KiB (the whole of a small
    /// NEFF), then, for a raw payload, ranged GETs of the tar headers only
    /// (members are fetched when their data is asked for), and for a gzip
    /// payload the rest in parts, several in flight: under 16 MiB, or
    /// on a scan's worker while every other worker is busy, inflated as
    /// they arrive (the walk keeps the accessors' members; another
    /// member's data is inflated again from a new read), else spooled to
    /// an unlinked temporary file whose map is inflated in parallel rounds
    /// while the parts land in it (each read waits for its bytes), and
    /// read from afterwards as a local file is. Every
    /// request after the first is pinned to the first's ETag: an object
    /// replaced meanwhile is [`Error::ObjectChanged`]. From a server that
    /// ignores Range the object is read whole by one GET into such a file
    /// (up to `NEFF_REMOTE_SPOOL_MAX` bytes, else refused) and read from
    /// it. The environment (`AWS_*`, `NEFF_REMOTE_TIMEOUT`,
    /// `NEFF_REMOTE_RETRIES`, …) is in docs/GUIDE.md.
    #[cfg(feature = "remote")]
    pub fn open_url(url: &str, opts: &Options) -> Result<Neff> {
        if let Some(cap) = remote::byte_cap().filter(|&c| c < crate::header::HEADER_SIZE as u64) {
            // Not even the header fits under the cap on bytes moved.
            return Err(Error::Limit {
                what: "bytes moved from this object (--max-bytes-moved)",
                found: crate::header::HEADER_SIZE as u64,
                cap,
            });
        }
        let (mut object, first) = remote::Object::open(url)?;
        if first.len() as u64 >= object.size() {
            return Neff::from_file_bytes(FileBytes::Owned(first), opts, None);
        }
        if let Some(file) = object.take_whole() {
            // The server ignored the first Range: the object is whole in a
            // temporary file already, read as a local file is.
            let bytes = FileBytes::from_open(file, object.size(), opts.read_mode, first)?;
            return Neff::from_file_bytes(bytes, opts, None);
        }
        let header = Header::from_file_bytes(&first)?;
        let span = header.locate_payload_in(&first, object.size())?;
        log::debug!(
            "{}: a round trip's worth of bytes is {} now; objects up to {} are read whole",
            remote::redact(url),
            remote::through_below(),
            remote::whole_below(remote::WHOLE_BELOW)
        );
        // Whether this is a scan's worker with every other worker busy:
        // judged once, for both the choice below and the parts' size.
        let busy = crate::pool::saturated();
        match Plan::of(span, object.size(), opts.read_mode, busy) {
            Plan::Stream => streamed(object, first, span, opts, busy),
            Plan::Landing => landing(&object, &first, span, opts),
            Plan::Spool => {
                let (file, len) = object.spool(&first)?;
                let bytes = FileBytes::from_open(file, len, opts.read_mode, first)?;
                Neff::from_file_bytes(bytes, opts, None)
            }
            Plan::Ranged => {
                let ranged = Archive::Ranged {
                    from: &object,
                    base: span.start as u64,
                    len: span.len,
                    first: &first,
                };
                let walked = walk(ranged, None, &opts.limits)?;
                let tar = Tar::Remote {
                    object,
                    retained: walked.retained,
                };
                Ok(Neff::assembled(
                    FileBytes::Owned(first),
                    span,
                    tar,
                    walked.index,
                    opts,
                ))
            }
        }
    }
}

/// The gzip payload `span` of a remote object whose first bytes are
/// `first`, inflated as it is read (the rest read ahead, several parts in
/// flight), producing at most `cap` bytes; `busy`: read by a scan's worker
/// with every other worker busy.
pub(super) fn remote_gz<'o>(
    object: &'o remote::Object,
    first: &'o [u8],
    span: PayloadSpan,
    cap: u64,
    busy: bool,
) -> Result<payload::Pieces<remote::RangeReader<'o>>> {
    let end = span.start + span.len;
    let held = first.len().clamp(span.start, end);
    let head = first.get(span.start..held).unwrap_or_default();
    // Small parts first, so that the inflater starts soon; full parts at
    // once on a scan's worker whose every other worker is busy (its core
    // has other work meanwhile: fewer round trips count for more there).
    let first = match busy {
        true => remote::PART,
        false => remote::STREAM_PART,
    };
    let reader = object.reader(head, held as u64..end as u64, first)?;
    Ok(payload::Pieces::new(reader, cap))
}

/// A remote object is what the tar layer's ranged walk fetches from.
#[cfg(feature = "remote")]
impl tar::Fetch for remote::Object {
    fn fetch(&self, range: std::ops::Range<u64>) -> Result<Vec<u8>> {
        self.read(range)
    }
    fn through_below(&self) -> u64 {
        remote::through_below()
    }
    fn hop_worth(&self) -> Option<u64> {
        remote::hop_worth()
    }
    fn ahead<'s>(
        &'s self,
        range: std::ops::Range<u64>,
        first: u64,
    ) -> Result<Box<dyn tar::Ahead + 's>> {
        let parts = crate::parts::Parts::new(range, first, tar::MAX_PART);
        Ok(Box::new(self.read_ahead(parts)?))
    }
    fn budget(&self) -> Option<u64> {
        remote::Object::budget(self)
    }
}

/// A remote read-ahead is what the tar walk reads through.
#[cfg(feature = "remote")]
impl tar::Ahead for remote::ReadAhead<'_> {
    fn next_part(&mut self) -> Result<Option<tar::Part>> {
        remote::ReadAhead::next_part(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(compression: Compression, len: usize) -> PayloadSpan {
        PayloadSpan {
            start: 1024,
            len,
            compression,
        }
    }

    #[test]
    fn each_payload_is_read_the_way_its_kind_size_and_the_pool_say() {
        let big = payload::PARALLEL_FROM;
        let gz = Compression::Gzip;
        let map = ReadMode::Auto;
        assert_eq!(
            Plan::of(span(gz, big - 1), 1 << 40, map, false),
            Plan::Stream
        );
        assert_eq!(Plan::of(span(gz, big), 1 << 40, map, true), Plan::Stream);
        assert_eq!(Plan::of(span(gz, big), 1 << 40, map, false), Plan::Landing);
        assert_eq!(
            Plan::of(span(gz, big), 1 << 40, ReadMode::Read, false),
            Plan::Spool
        );
        let small = remote::whole_below(remote::WHOLE_BELOW);
        let raw = Compression::None;
        assert_eq!(Plan::of(span(raw, 1 << 30), small, map, false), Plan::Spool);
        assert_eq!(
            Plan::of(span(raw, 1 << 30), small + 1, map, true),
            Plan::Ranged
        );
    }
}
