//! Member selection: regular expressions searched, unanchored, in member
//! names in byte-wise sorted order; the first name that matches wins.
//!
//! This is the reference reader's rule (docs/FORMAT.md §4.1): it lists the
//! archive, sorts the names and takes the first that `re.findall` matches.
//! The accessors' patterns are compiled once, into one multi-pattern regex,
//! so that a single pass over the sorted names resolves all of them.

use std::sync::LazyLock;

use regex_automata::meta::Regex;
use regex_automata::{Input, PatternSet};

use crate::error::{Error, Result};
use crate::tar::{Entry, Index, Kind};

/// The members the accessors read, by the reference reader's patterns
/// (dots escaped).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Known {
    /// `info.json`: build metadata.
    Info,
    /// `neff.json`: the TVM-style graph.
    Neff,
    /// `sg\d+/def.json`: a subgraph's definition (flat `sgNN/` or under `sgLnk/`).
    Def,
    /// `sg\d+/tensor_map.json`: a subgraph's I/O binding and alias map.
    TensorMap,
    /// `kelf-0.json`, the name the reference reader opens.
    Kelf0,
    /// Any `kelf-*.json`, the fallback when there is no `kelf-0.json`.
    KelfAny,
}

impl Known {
    /// Every known member, in pattern-id order.
    pub const ALL: [Known; 6] = [
        Known::Info,
        Known::Neff,
        Known::Def,
        Known::TensorMap,
        Known::Kelf0,
        Known::KelfAny,
    ];

    /// The pattern, as the error for a missing member shows it.
    pub fn pattern(self) -> &'static str {
        match self {
            Known::Info => r"info\.json",
            Known::Neff => r"neff\.json",
            Known::Def => r"sg\d+/def\.json",
            Known::TensorMap => r"sg\d+/tensor_map\.json",
            Known::Kelf0 => r"kelf-0\.json",
            Known::KelfAny => r"kelf-[^/]*\.json",
        }
    }
}

/// Names are short and searched once each: the lazy DFA alone answers
/// quickly, so skip building the full DFA and one-pass engines, whose
/// construction would cost more than every search of a NEFF together.
fn builder() -> regex_automata::meta::Builder {
    let mut b = Regex::builder();
    b.configure(
        Regex::config()
            .dfa(false)
            .onepass(false)
            .backtrack(false)
            .auto_prefilter(false)
            .which_captures(regex_automata::nfa::thompson::WhichCaptures::None),
    );
    b
}

/// The accessor patterns with Unicode classes, as Python's `re` reads them
/// (`\d` is any Unicode decimal digit): for names with non-ASCII bytes.
static KNOWN: LazyLock<Regex> = LazyLock::new(|| {
    builder()
        .build_many(&Known::ALL.map(Known::pattern))
        .expect("the accessor patterns compile")
});

/// The same patterns with ASCII classes (`\d` is `[0-9]`, `[^/]` any byte
/// but `/`), for ASCII names. On an ASCII name both sets agree (any
/// character outside ASCII needs a non-ASCII byte), and this one builds in
/// a fraction of the time: Unicode `\d` alone costs ~0.2 ms per pattern,
/// paid by every one-shot `neff get`.
static KNOWN_ASCII: LazyLock<Regex> = LazyLock::new(|| {
    builder()
        .syntax(
            regex_automata::util::syntax::Config::new()
                .unicode(false)
                .utf8(false),
        )
        .build_many(&Known::ALL.map(Known::pattern))
        .expect("the accessor patterns compile")
});

/// The compiled accessor patterns that apply to `name`.
fn known_set(name: &[u8]) -> &'static Regex {
    if name.is_ascii() {
        &KNOWN_ASCII
    } else {
        &KNOWN
    }
}

/// Whether `name` matches the pattern of `k` (the precompiled set).
pub fn matches(k: Known, name: &[u8]) -> bool {
    let re = known_set(name);
    let mut set = PatternSet::new(re.pattern_len());
    re.which_overlapping_matches(&Input::new(name), &mut set);
    set.contains(regex_automata::PatternID::must(k as usize))
}

/// A user's member pattern, compiled once (the reference reader's
/// `re.search` over member names: unanchored, first match in sorted name
/// order; see [`Neff::find`](crate::Neff::find)).
#[derive(Debug, Clone)]
pub struct Pattern {
    text: String,
    re: Regex,
}

impl Pattern {
    /// Compiles `pattern`; a bad one is a usage error.
    ///
    /// ```
    /// assert!(neff::Pattern::new(r"sg\d+/def\.json$").is_ok());
    /// assert_eq!(neff::Pattern::new("(").unwrap_err().kind(), neff::ErrorKind::Usage);
    /// ```
    pub fn new(pattern: &str) -> Result<Pattern> {
        Ok(Pattern {
            text: pattern.to_string(),
            re: compile(pattern)?,
        })
    }

    /// The pattern as given.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub(crate) fn regex(&self) -> &Regex {
        &self.re
    }
}

/// Compiles a user's pattern; a bad one is a usage error.
pub(crate) fn compile(pattern: &str) -> Result<Regex> {
    builder().build(pattern).map_err(|e| {
        let why = e
            .syntax_error()
            .map_or_else(|| e.to_string(), |s| s.to_string());
        Error::usage(format!(
            "invalid pattern {pattern:?}: {}",
            why.replace('\n', " ")
        ))
    })
}

/// Indices of the regular members, sorted by name bytes; where two members
/// share a name, only the later one in the archive (as `tar x` leaves it).
pub fn sorted_files(index: &Index, tar: &[u8]) -> Vec<u32> {
    let entries = &index.entries;
    // (name, archive position): sorting the pairs orders equal names by
    // archive position, as a stable sort by name would, and compares
    // slices already resolved.
    let mut named: Vec<(&[u8], u32)> = entries
        .iter()
        .enumerate()
        .filter(|(_, e)| e.kind == Kind::File)
        .map(|(i, e)| (index.resolve(&e.name, tar), i as u32))
        .collect();
    named.sort_unstable();
    let mut out: Vec<u32> = Vec::with_capacity(named.len());
    let mut last: Option<&[u8]> = None;
    for (name, i) in named {
        match out.last_mut() {
            Some(prev) if last == Some(name) => *prev = i,
            _ => out.push(i),
        }
        last = Some(name);
    }
    out
}

/// Bytes of JSON members, beyond the accessors' own, that a streamed walk
/// keeps (see [`Retention`]).
const RETAIN_JSON: u64 = 64 << 20;

/// What a streamed walk of a large gzip payload keeps ([`tar::walk`]'s
/// policy): the member each accessor would read ([`Best`]) when it is
/// under the JSON size cap, and other JSON members (every def.json a
/// summary or `mem` reads) while they fit in 64 MiB, so that reading them
/// does not inflate the payload again for each.
pub(crate) struct Retention {
    best: Best,
    extra: std::collections::HashSet<u64>,
    extra_bytes: u64,
    max_json_size: u64,
}

impl Retention {
    /// The policy under the JSON size cap of `limits`.
    pub(crate) fn new(limits: &crate::limits::Limits) -> Retention {
        Retention {
            best: Best::default(),
            extra: Default::default(),
            extra_bytes: 0,
            max_json_size: limits.max_json_size,
        }
    }
}

impl crate::tar::Keep for Retention {
    fn offer(&mut self, e: &Entry, name: &[u8], release: &mut dyn FnMut(u64)) -> bool {
        let extra = &self.extra;
        let picked = self.best.offer(name, e.offset, &mut |old| {
            if !extra.contains(&old) {
                release(old)
            }
        });
        if e.size > self.max_json_size {
            return false;
        }
        if !picked && name.ends_with(b".json") && self.extra_bytes + e.size <= RETAIN_JSON {
            self.extra.insert(e.offset);
            self.extra_bytes += e.size;
            return true;
        }
        picked
    }

    fn restart(&mut self) {
        self.best = Best::default();
        self.extra.clear();
        self.extra_bytes = 0;
    }
}

/// Which members a streamed walk keeps: for each [`Known`] pattern, the
/// member the accessors would pick among those seen so far (the first
/// matching name in byte order, the later of two equal names, as
/// [`resolve_known`] picks from [`sorted_files`]). At most one member per
/// pattern is held at a time; a better candidate releases the one before.
#[derive(Debug, Default)]
pub struct Best {
    best: [Option<(Box<[u8]>, u64)>; 6],
}

impl Best {
    /// Offers a regular member named `name` whose data starts at `offset`.
    /// Returns whether to keep it, and calls `release` with the offsets of
    /// members no pattern picks any more.
    pub fn offer(&mut self, name: &[u8], offset: u64, release: &mut dyn FnMut(u64)) -> bool {
        if memchr::memmem::find(name, b".json").is_none() {
            return false;
        }
        let mut set = PatternSet::new(Known::ALL.len());
        known_set(name).which_overlapping_matches(&Input::new(name), &mut set);
        let mut dropped = Vec::new();
        let mut keep = false;
        for p in set.iter() {
            let slot = &mut self.best[p.as_usize()];
            if slot.as_ref().is_none_or(|(n, _)| name <= &n[..]) {
                if let Some((_, old)) = slot.replace((name.into(), offset)) {
                    dropped.push(old);
                }
                keep = true;
            }
        }
        for old in dropped {
            if !self.best.iter().flatten().any(|(_, o)| *o == old) {
                release(old);
            }
        }
        keep
    }
}

/// The first of `sorted` whose name `re` matches.
pub fn first_match(re: &Regex, sorted: &[u32], index: &Index, tar: &[u8]) -> Option<u32> {
    sorted
        .iter()
        .copied()
        .find(|&i| re.is_match(index.resolve(&index.entries[i as usize].name, tar)))
}

/// Resolves every [`Known`] member in one pass over `sorted`. (Each
/// pattern holds the literal `.json`; a test pins that.)
pub fn resolve_known(sorted: &[u32], index: &Index, tar: &[u8]) -> [Option<u32>; 6] {
    let mut found = [None; 6];
    let mut left = found.len();
    let mut set = PatternSet::new(Known::ALL.len());
    let json = memchr::memmem::Finder::new(b".json");
    for &i in sorted {
        let name = index.resolve(&index.entries[i as usize].name, tar);
        // Every known pattern needs ".json": most members (engine
        // programs, weights) are ruled out without running the regex.
        if json.find(name).is_none() {
            continue;
        }
        set.clear();
        known_set(name).which_overlapping_matches(&Input::new(name), &mut set);
        for p in set.iter() {
            let slot = &mut found[p.as_usize()];
            if slot.is_none() {
                *slot = Some(i);
                left -= 1;
            }
        }
        if left == 0 {
            break;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_pattern_needs_the_literal_dot_json() {
        // resolve_known skips names without ".json" on this promise.
        for k in Known::ALL {
            assert!(k.pattern().ends_with(r"\.json"), "{}", k.pattern());
        }
        assert!(matches(Known::Def, b"sgLnk/sg00/def.json"));
        assert!(!matches(Known::Def, b"sg00/def.jso"));
    }

    #[test]
    fn unicode_digits_and_classes_match_as_in_python() {
        // Python's re: \d is any Unicode decimal digit, [^/] any character
        // but '/'. ASCII names take the ASCII set, others the Unicode one.
        assert!(matches(Known::Def, "sg\u{663}/def.json".as_bytes()));
        assert!(matches(
            Known::TensorMap,
            "x/sg\u{FF11}2/tensor_map.json".as_bytes()
        ));
        assert!(!matches(Known::Def, "sg\u{2162}/def.json".as_bytes())); // Roman numeral: not Nd
        assert!(matches(
            Known::KelfAny,
            "kelf-\u{e9}t\u{e9}.json".as_bytes()
        ));
        assert!(!matches(Known::KelfAny, b"kelf-a/b.json"));
        assert!(matches(Known::KelfAny, b"kelf-a\nb.json"));
        assert!(matches(Known::Def, b"sg007/def.json"));
        assert!(!matches(Known::Def, b"sg/def.json"));
        assert!(!matches(Known::Def, b"sgx/def.json"));
    }
}
