//! Member selection: regular expressions searched, unanchored, in member
//! names in byte-wise sorted order; the first name that matches wins.
//!
//! This is the reference reader's rule (NEFF-FORMAT.md §4.1): it lists the
//! archive, sorts the names and takes the first that `re.findall` matches.
//! The accessors' patterns are compiled once, into one multi-pattern regex,
//! so that a single pass over the sorted names resolves all of them.

use std::sync::LazyLock;

use regex_automata::meta::Regex;
use regex_automata::{Input, PatternSet};

use crate::error::{Error, Result};
use crate::tar::{Index, Kind};

/// The members the accessors read, by the reference reader's patterns
/// (dots escaped).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Known {
    Info,
    Neff,
    Def,
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
    b.configure(Regex::config().dfa(false).onepass(false).backtrack(false));
    b
}

static KNOWN: LazyLock<Regex> = LazyLock::new(|| {
    builder()
        .build_many(&Known::ALL.map(Known::pattern))
        .expect("the accessor patterns compile")
});

/// Whether `name` matches the pattern of `k` (the precompiled set).
pub fn matches(k: Known, name: &[u8]) -> bool {
    let mut set = PatternSet::new(KNOWN.pattern_len());
    KNOWN.which_overlapping_matches(&Input::new(name), &mut set);
    set.contains(regex_automata::PatternID::must(k as usize))
}

/// Compiles a user's pattern; a bad one is a usage error.
pub fn compile(pattern: &str) -> Result<Regex> {
    builder().build(pattern).map_err(|e| {
        let why = e
            .syntax_error()
            .map_or_else(|| e.to_string(), |s| s.to_string());
        Error::Usage(format!(
            "invalid pattern {pattern:?}: {}",
            why.replace('\n', " ")
        ))
    })
}

/// Indices of the regular members, sorted by name bytes; where two members
/// share a name, only the later one in the archive (as `tar x` leaves it).
pub fn sorted_files(index: &Index, tar: &[u8]) -> Vec<u32> {
    let entries = &index.entries;
    let mut idx: Vec<u32> = (0..entries.len() as u32)
        .filter(|&i| entries[i as usize].kind == Kind::File)
        .collect();
    let name = |i: u32| index.resolve(&entries[i as usize].name, tar);
    // Stable sort by name keeps archive order among equal names.
    idx.sort_by(|&a, &b| name(a).cmp(name(b)));
    let mut out: Vec<u32> = Vec::with_capacity(idx.len());
    for i in idx {
        match out.last_mut() {
            Some(last) if name(*last) == name(i) => *last = i,
            _ => out.push(i),
        }
    }
    out
}

/// The first of `sorted` whose name `re` matches.
pub fn first_match(re: &Regex, sorted: &[u32], index: &Index, tar: &[u8]) -> Option<u32> {
    sorted
        .iter()
        .copied()
        .find(|&i| re.is_match(index.resolve(&index.entries[i as usize].name, tar)))
}

/// Resolves every [`Known`] member in one pass over `sorted`.
pub fn resolve_known(sorted: &[u32], index: &Index, tar: &[u8]) -> [Option<u32>; 6] {
    let mut found = [None; 6];
    let mut left = found.len();
    let mut set = PatternSet::new(KNOWN.pattern_len());
    for &i in sorted {
        set.clear();
        KNOWN.which_overlapping_matches(
            &Input::new(index.resolve(&index.entries[i as usize].name, tar)),
            &mut set,
        );
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
