//! JSON members parsed in place with simd-json, into a tape whose strings
//! borrow from the member's bytes.
//!
//! simd-json rewrites strings in place as it unescapes them, so it needs the
//! member's bytes mutable: a parse owns a copy of the member. (A private
//! copy-on-write mapping of the member's pages measured the same, since the
//! parse writes back every string and so copies every page anyway. It was
//! removed with the unsafe code it needed.)
//!
//! simd-json's own scratch ([`simd_json::Buffers`]) is reused across parses.
//! A parse is refused before it starts when the member is over
//! [`Limits::max_json_size`](crate::Limits::max_json_size), and after the
//! (iterative, stack-safe) parse when it nests deeper than
//! [`Limits::max_json_depth`](crate::Limits::max_json_depth), so nothing
//! recursive ever sees a deep document.
//!
//! For the few top-level keys of a large def.json that the collective
//! accessors read, [`skim`] validates the member without building a tape
//! and parses only those keys' values.

pub mod as_python;
pub(crate) mod early;
pub mod skim;
mod value;
pub mod views;

use std::sync::{Mutex, OnceLock};

use self_cell::MutBorrow;
use simd_json::tape::{Node, Tape};
use simd_json::Buffers;

pub use value::{Json, Obj};

/// The def.json keys whose presence means a NEFF has collective (CC)
/// metadata (at the top level, or inside `CCInfo` in some producers'
/// layout).
pub const CC_KEYS: [&str; 3] = ["replica_groups", "src_target_pairs", "#rank_world_size"];

/// The top-level def.json keys the collective accessors read: [`CC_KEYS`]
/// and `CCInfo` (what a skim of a large def.json keeps).
pub const CC_TOP_KEYS: [&str; 4] = [CC_KEYS[0], CC_KEYS[1], CC_KEYS[2], "CCInfo"];

use crate::error::{Error, Result};
use crate::limits::Limits;

self_cell::self_cell!(
    /// A member's bytes and the tape that borrows from them (the cell's
    /// generated methods stay inside this module).
    struct Cell {
        owner: MutBorrow<Vec<u8>>,
        #[covariant]
        dependent: Tape,
    }
);

/// A parsed JSON member: its bytes and the tape that borrows from them.
pub struct Parsed(Cell);

impl std::fmt::Debug for Parsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parsed")
            .field("nodes", &self.0.borrow_dependent().0.len())
            .finish()
    }
}

impl Parsed {
    /// Parses `bytes` (already made private and mutable) as the JSON of `member`.
    pub fn parse(
        member: &str,
        bytes: Vec<u8>,
        limits: &Limits,
        buffers: &mut Buffers,
    ) -> Result<Parsed> {
        if let Some(at) = lone_surrogate(&bytes) {
            // simd-json would read it as U+0000; the caller re-encodes the
            // member (crate::json::as_python::for_tape) and parses that.
            return Err(Error::Json {
                member: member.to_string(),
                reason: format!("lone surrogate escape at byte {at}"),
            });
        }
        let parsed = Cell::try_new(MutBorrow::new(bytes), |b| {
            simd_json::to_tape_with_buffers(b.borrow_mut(), buffers)
        })
        .map_err(|e| Error::Json {
            member: member.to_string(),
            reason: e.to_string(),
        })?;
        let depth = depth(&parsed.borrow_dependent().0);
        if depth > limits.max_json_depth {
            return Err(Error::Limit {
                what: "JSON nesting depth",
                found: depth as u64,
                cap: limits.max_json_depth as u64,
            });
        }
        Ok(Parsed(parsed))
    }

    /// The root value.
    pub fn root(&self) -> Json<'_> {
        Json::new(&self.0.borrow_dependent().0)
    }
}

/// Refuses a JSON member of `size` bytes over the size cap, before any
/// byte of it is read.
pub(crate) fn check_size(size: u64, limits: &Limits) -> Result<()> {
    if size > limits.max_json_size {
        return Err(Error::Limit {
            what: "JSON member size",
            found: size,
            cap: limits.max_json_size,
        });
    }
    Ok(())
}

/// Parses member `name`, whose bytes `read` gives, as Python's
/// `json.loads` reads it: with simd-json, and what simd-json refuses but
/// Python reads (NaN, Infinity, integers past 64 bits, lone surrogates)
/// re-encoded in a form a tape holds ([`as_python::for_tape`]) and parsed
/// again; what Python refuses too is refused with Python's reason.
/// (`again` gives the member's bytes for the re-encoding, borrowed where
/// they are held: simd-json parsed `bytes` in place.)
pub(crate) fn parse_member<'a>(
    name: &str,
    bytes: Vec<u8>,
    again: &mut dyn FnMut() -> Result<std::borrow::Cow<'a, [u8]>>,
    limits: &Limits,
    cache: &Cache,
) -> Result<Parsed> {
    let first = Parsed::parse(name, bytes, limits, &mut cache.buffers());
    match first {
        Err(Error::Json { .. }) => {
            let mut text = Vec::new();
            as_python::for_tape(&again()?, limits.max_json_depth, &mut text).map_err(|err| {
                Error::Json {
                    member: name.to_string(),
                    reason: err.to_string(),
                }
            })?;
            Parsed::parse(name, text, limits, &mut cache.buffers())
        }
        other => other,
    }
}

/// Writes member `name` (`bytes`) as Python's `json.dumps(json.loads(m),
/// separators=(",", ":"), ensure_ascii=False)` writes it ([`python`]).
pub(crate) fn dumps_member(
    name: &str,
    bytes: &[u8],
    limits: &Limits,
    out: &mut Vec<u8>,
) -> Result<()> {
    as_python::dumps(bytes, limits.max_json_depth, out).map_err(|err| Error::Json {
        member: name.to_string(),
        reason: err.to_string(),
    })
}

/// Where a `\uXXXX` escape of a surrogate stands without its partner, if
/// anywhere. simd-json would put U+0000 in the string; Python keeps the
/// lone code point, which no `&str` can hold.
pub(crate) fn lone_surrogate(s: &[u8]) -> Option<usize> {
    let unit = |at: usize| -> Option<u32> {
        let h = s.get(at + 2..at + 6)?;
        (s.get(at..at + 2)? == b"\\u")
            .then(|| u32::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok())
            .flatten()
    };
    let mut after_high = None;
    for at in memchr::memmem::find_iter(s, b"\\u") {
        // A real escape has an even run of backslashes before its own.
        let run = s[..at].iter().rev().take_while(|&&b| b == b'\\').count();
        if run % 2 == 1 {
            continue;
        }
        let Some(u) = unit(at) else { continue };
        let expected_low = after_high == Some(at);
        after_high = None;
        match u {
            0xD800..=0xDBFF => {
                let next = at + 6;
                if unit(next).is_some_and(|l| (0xDC00..=0xDFFF).contains(&l)) {
                    after_high = Some(next);
                } else {
                    return Some(at);
                }
            }
            0xDC00..=0xDFFF if !expected_low => return Some(at),
            _ => {}
        }
    }
    None
}

/// Deepest nesting of arrays and objects on a tape, computed iteratively.
pub fn depth(tape: &[Node<'_>]) -> usize {
    let mut ends: Vec<usize> = Vec::new();
    let mut max = 0;
    for (i, n) in tape.iter().enumerate() {
        while ends.last().is_some_and(|&e| e <= i) {
            ends.pop();
        }
        if let Node::Array { count, .. } | Node::Object { count, .. } = n {
            ends.push(i + 1 + count);
            max = max.max(ends.len());
        }
    }
    max
}

/// Per-NEFF cache of parsed members, one slot per accessor member, plus the
/// reused simd-json scratch.
#[derive(Default)]
pub struct Cache {
    pub(crate) slots: [OnceLock<Parsed>; 6],
    /// The CC keys of def.json, skimmed (see [`skim`]).
    pub(crate) def_cc: OnceLock<Parsed>,
    pub(crate) buffers: Mutex<Option<Buffers>>,
}

impl Cache {
    /// simd-json's scratch, reused by every parse of this NEFF.
    pub(crate) fn buffers(&self) -> BuffersGuard<'_> {
        let mut g = self.buffers.lock().unwrap_or_else(|p| p.into_inner());
        g.get_or_insert_with(|| Buffers::new(4096));
        BuffersGuard(g)
    }
}

/// The locked scratch of a [`Cache`].
pub(crate) struct BuffersGuard<'a>(std::sync::MutexGuard<'a, Option<Buffers>>);

impl std::ops::Deref for BuffersGuard<'_> {
    type Target = Buffers;
    fn deref(&self) -> &Buffers {
        self.0.as_ref().expect("filled by Cache::buffers")
    }
}

impl std::ops::DerefMut for BuffersGuard<'_> {
    fn deref_mut(&mut self) -> &mut Buffers {
        self.0.as_mut().expect("filled by Cache::buffers")
    }
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Cache")
    }
}
