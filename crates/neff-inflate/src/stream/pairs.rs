//! Members two at a time: while the one-core inflater goes on with the
//! member being read, the next member is inflated ahead on the free core,
//! from the first gzip header found after the position, and taken over
//! when the member before really ends there (else dropped: header-like
//! bytes occur inside DEFLATE data). Each side produces at most
//! [`MEMBER_OUT`] bytes a round. A large member is not inflated ahead (on
//! one core): it waits for its own rounds ([`super::rounds`]).

use flate2::Decompress;

use super::one_core::{inflate_some, OneCore};
use super::rounds::{header_after, is_large, LOOK_AHEAD};
use super::walk::Walk;
use crate::error::Result;
use crate::gzip;

/// Most output one side of a member round produces.
const MEMBER_OUT: usize = 16 << 20;

/// A member inflated ahead, from a header found by search (not yet known
/// to be the next member's start).
struct Ahead {
    /// Where its header starts, and its DEFLATE data.
    at: usize,
    data: usize,
    /// The input position its inflater reached.
    pos: usize,
    inflater: Decompress,
    crc: libdeflater::Crc,
    /// Its output, `buf[..len]` (all it produced).
    buf: Vec<u8>,
    len: usize,
    /// Its DEFLATE stream ended at `pos`.
    ended: bool,
}

/// The state of reading members two at a time.
#[derive(Default)]
pub(super) struct Pairs {
    /// A second member was met: members go two at a time from now on.
    pub(super) several: bool,
    /// The next member, inflated ahead on another core.
    ahead: Option<Ahead>,
    /// The buffer the next member ahead fills (of [`MEMBER_OUT`] bytes).
    spare: Vec<u8>,
    /// A header-like offset found not to start the next member (so that
    /// the same false candidate is not tried again).
    not_a_member: usize,
    /// No member header starts before this offset (searched already).
    no_header_before: usize,
    /// A large member starts here: it is read in rounds when it starts,
    /// not inflated ahead on the free core while the member before ends.
    pub(super) large_at: Option<usize>,
    /// Members taken over from the ones inflated ahead (for the tests).
    pub(super) adopted: usize,
}

impl Pairs {
    /// At a member's start (the one before ended at the walk's position):
    /// takes over the member inflated ahead if it starts where the walk
    /// finds the next member; `Some(ended)` when it did (its DEFLATE data
    /// ended already, or not), `None` when there is none to take.
    pub(super) fn adopt(&mut self, w: &mut Walk<'_>, one: &mut OneCore) -> Result<Option<bool>> {
        let Some(a) = self.ahead.take() else {
            return Ok(None);
        };
        // The next member's real start, read as the sequential walk reads it.
        match gzip::next_member(w.gz, w.pos)? {
            Some(m) if m.at == a.at && m.data == a.data => {
                w.at = m.at;
                *one.inflater() = a.inflater;
                w.crc = a.crc;
                w.out = a.len as u64;
                w.pos = a.pos;
                let len = a.len;
                let old = std::mem::take(&mut w.ready.buf);
                w.ready.set(a.buf, 0..len);
                self.spare = old;
                self.adopted += 1;
                Ok(Some(a.ended))
            }
            _ => {
                self.not_a_member = self.not_a_member.max(a.at);
                self.spare = a.buf;
                Ok(None)
            }
        }
    }

    /// One member round if a next member is in sight: `None` when there is
    /// none (the caller inflates on one core), else whether the member
    /// ended in it (its output is ready in the walk).
    pub(super) fn round(
        &mut self,
        w: &mut Walk<'_>,
        one: &mut OneCore,
        rounds_from: Option<usize>,
    ) -> Result<Option<bool>> {
        let Some(c) = self.candidate(w, rounds_from) else {
            return Ok(None);
        };
        self.member_round(w, one, c).map(Some)
    }

    /// After the member ended (its trailer checked, the walk past it): a
    /// member inflated ahead from before that point was no member start.
    pub(super) fn after_member(&mut self, pos: usize) {
        self.drop_overrun(pos);
    }

    fn drop_overrun(&mut self, pos: usize) {
        if let Some(a) = self.ahead.take() {
            if a.at < pos {
                // The member being read runs over it: not a member start.
                self.not_a_member = a.at;
                self.spare = a.buf;
            } else {
                self.ahead = Some(a);
            }
        }
    }

    /// A header that may start the next member, searched for within
    /// [`LOOK_AHEAD`] bytes of input past the position (and past any
    /// candidate found wrong, and any stretch already searched). A large
    /// member (of `rounds_from` bytes or more, when rounds are on) is not a
    /// candidate: inflated ahead it would be read on one core, where it
    /// starts its own rounds once the member before ends.
    fn candidate(&mut self, w: &Walk<'_>, rounds_from: Option<usize>) -> Option<(usize, usize)> {
        if self.ahead.is_some() || self.large_at.is_some_and(|at| at >= w.pos) {
            return None;
        }
        let from = w.pos.max(self.not_a_member + 1).max(self.no_header_before);
        let end = w.pos.saturating_add(LOOK_AHEAD).min(w.gz.len());
        if from >= end {
            return None;
        }
        let found = header_after(w.gz, from, end);
        match found {
            None => self.no_header_before = end,
            Some((at, data))
                if rounds_from.is_some_and(|f| is_large(w.gz, w.gz.len(), data, f).0) =>
            {
                self.large_at = Some(at);
                return None;
            }
            Some(_) => {}
        }
        found
    }

    /// One member round: the member being inflated goes on (up to
    /// [`MEMBER_OUT`] bytes, made ready in the walk) while, on another
    /// core, the member that may start at `candidate` is inflated ahead
    /// (up to [`MEMBER_OUT`] too). When the member being read ends, the
    /// next one is read from its real start: if that is where the one
    /// ahead started, its output and inflater are taken over (nothing
    /// inflated twice); else it is dropped. Whether the member ended.
    fn member_round(
        &mut self,
        w: &mut Walk<'_>,
        one: &mut OneCore,
        candidate: (usize, usize),
    ) -> Result<bool> {
        let gz = w.gz;
        let mut here_buf = w.ready.take_buf(MEMBER_OUT);
        let mut ahead_buf = std::mem::take(&mut self.spare);
        if ahead_buf.len() < MEMBER_OUT {
            ahead_buf = vec![0u8; MEMBER_OUT];
        }
        let (inflater, crc, pos) = (one.inflater(), &mut w.crc, w.pos);
        let (here, ahead) = rayon::join(
            || {
                let r = inflate_some(inflater, &gz[pos..], &mut here_buf);
                if let Ok((_, n, _)) = r {
                    crc.update(&here_buf[..n]);
                }
                r
            },
            || {
                let (at, data) = candidate;
                let mut z = Decompress::new(false);
                let r = inflate_some(&mut z, &gz[data..], &mut ahead_buf);
                r.map(|(used, n, ended)| {
                    let mut c = libdeflater::Crc::new();
                    c.update(&ahead_buf[..n]);
                    (at, data, used, n, ended, z, c)
                })
            },
        );
        match ahead {
            Ok((at, data, used, len, ended, inflater, crc)) => {
                self.ahead = Some(Ahead {
                    at,
                    data,
                    pos: data + used,
                    inflater,
                    crc,
                    len,
                    buf: ahead_buf,
                    ended,
                });
            }
            Err(()) => {
                self.not_a_member = candidate.0;
                self.spare = ahead_buf;
            }
        }
        let Ok((used, n, ended)) = here else {
            w.ready.set(here_buf, 0..0);
            return Err(w.corrupt());
        };
        w.ready.set(here_buf, 0..n);
        w.pos += used;
        w.passed(w.pos);
        w.out += n as u64;
        if !ended {
            if n == 0 && used == 0 {
                return Err(w.corrupt());
            }
            self.drop_overrun(w.pos);
        }
        Ok(ended)
    }
}
