//! Why a compile missed: given an entry (its directory or its
//! `MODULE_<graph hash>+<flags hash>` name), a graph hash, or a job's
//! flags, the entries of a cache that share the graph under other flags
//! (with the difference of their flags files, `compile_flags.json` or
//! `compile_flags.txt`), the same key under other compiler releases, and
//! the flags hash a job's flags give by each rule public caches show
//! ([`HashRule`]). Entries are judged as
//! [`status`](super::status) judges them.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::entry;
use super::flags::{self, HashRule};
use super::found::CacheError;
use super::status::{status, CacheEntry};
use crate::error::{Error, Result};

/// What [`explain`] is asked about: an entry or a graph hash, and a job's
/// flags (either alone, or with the other).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExplainQuery {
    /// An entry: its directory, or its `MODULE_…` name alone (then every
    /// compiler release's entry of that name is asked about).
    pub entry: Option<PathBuf>,
    /// A graph hash (the part of an entry's name before `+`).
    pub graph: Option<String>,
    /// A job's flags, as `NEURON_CC_FLAGS` gives them split
    /// ([`split_flags`](super::split_flags)).
    pub flags: Option<Vec<String>>,
}

impl ExplainQuery {
    /// About the entry at `path` (or named so).
    pub fn entry(path: impl Into<PathBuf>) -> Self {
        ExplainQuery {
            entry: Some(path.into()),
            ..Self::default()
        }
    }

    /// About every entry of the graph `hash`.
    pub fn graph(hash: impl Into<String>) -> Self {
        ExplainQuery {
            graph: Some(hash.into()),
            ..Self::default()
        }
    }

    /// About a job compiled with `flags`: compared with every entry (with
    /// [`entry`](Self::entry) or [`graph`](Self::graph), with theirs only).
    pub fn with_flags(mut self, flags: Vec<String>) -> Self {
        self.flags = Some(flags);
        self
    }
}

/// How an entry relates to what was asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Relation {
    /// The entry asked about.
    Asked,
    /// The same key (graph and flags hash) under another compiler release.
    SameKey,
    /// The same graph under other flags, of the same compiler release.
    OtherFlags,
    /// The same graph under other flags and another compiler release.
    OtherFlagsOtherCompiler,
    /// An entry of the graph asked about (no flags to compare with).
    SameGraph,
    /// An entry whose flags are the job's (its flags hash is one the job's
    /// flags give, or its flags file lists the same flags), not the same key
    /// as the entry named.
    SameFlags,
}

impl Relation {
    /// Its name in reports (`same_key`, `other_flags`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Relation::Asked => "asked",
            Relation::SameKey => "same_key",
            Relation::OtherFlags => "other_flags",
            Relation::OtherFlagsOtherCompiler => "other_flags_other_compiler",
            Relation::SameGraph => "same_graph",
            Relation::SameFlags => "same_flags",
        }
    }
}

/// One entry of an [`Explanation`]: the entry as `status` judges it, its
/// flags, and how they differ from the flags compared with.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[non_exhaustive]
pub struct Related {
    /// The entry (its record's fields, as `cache status --json` prints them).
    #[serde(flatten)]
    pub entry: CacheEntry,
    /// How it relates to what was asked.
    pub relation: Relation,
    /// Its flags, from its `compile_flags.json` (or, in entries of 2.11 to
    /// 2.14, `compile_flags.txt`); `None` when it holds neither or they
    /// could not be read ([`flags_error`](Self::flags_error)).
    pub flags: Option<Vec<String>>,
    /// Why its flags could not be read (a link, a FIFO, too large, not a
    /// JSON list of strings).
    pub flags_error: Option<String>,
    /// The rule by which its flags give its flags hash, when one does.
    pub hash_rule: Option<HashRule>,
    /// Flags compared with (the job's, or the entry asked about's) that it
    /// lacks; empty when either side's flags are unknown.
    pub only_asked: Vec<String>,
    /// Its flags that those lack.
    pub only_here: Vec<String>,
}

/// What [`explain`] found.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Explanation {
    /// The graph hash asked about (an entry's, or given).
    pub graph_hash: Option<String>,
    /// The flags hash of the entry named (its name's).
    pub flags_hash: Option<String>,
    /// The flags compared with: the job's, else the entry asked about's
    /// flags (or, where that entry is absent, one of the
    /// same key's).
    pub flags: Option<Vec<String>>,
    /// For a job's flags: the flags hash they give by each rule.
    pub hashes: Vec<(HashRule, String)>,
    /// The entries asked about first, then the related ones, by compiler
    /// version and path.
    pub entries: Vec<Related>,
    /// The parts of the cache that could not be read.
    pub errors: Vec<CacheError>,
}

/// The entries of the compile cache at `root` related to `query`: with an
/// entry, the entries of its graph (every other flags hash, every other
/// compiler release); with a graph hash, every entry of it; with a job's
/// flags alone, every entry of the compiler wrapper's layout, each marked
/// [`Relation::SameFlags`] or [`Relation::OtherFlags`]. Each comes with its
/// flags (from its flags file) and the flags only one side holds.
///
/// `Err` as [`status`] fails, and [`Error::Usage`] for a query that names
/// neither an entry, a graph nor flags, or an entry that is no
/// `MODULE_*` name.
pub fn explain(root: &Path, query: &ExplainQuery) -> Result<Explanation> {
    let named = match &query.entry {
        Some(p) => {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            match entry::hashes(name) {
                Some((g, f)) => Some((name.to_string(), g, f)),
                None => {
                    return Err(usage(
                        "an entry is a MODULE_<graph hash>+<flags hash> directory or name",
                    ))
                }
            }
        }
        None => None,
    };
    let graph = match (&named, &query.graph) {
        (Some(_), Some(_)) => return Err(usage("give an entry or --graph, not both")),
        (Some((_, g, _)), None) => Some(g.clone()),
        (None, g) => g.clone(),
    };
    if graph.is_none() && query.flags.is_none() {
        return Err(usage("give an entry, --graph HASH or --flags FLAGS"));
    }
    let st = status(root)?;
    let wanted = |e: &CacheEntry| {
        is_module(e)
            && graph
                .as_ref()
                .is_none_or(|g| e.graph_hash.eq_ignore_ascii_case(g))
    };
    let asked_path = query
        .entry
        .as_deref()
        .filter(|p| p.components().count() > 1);
    let asked_real = asked_path.and_then(|p| std::fs::canonicalize(p).ok());
    let is_asked = |e: &CacheEntry| match (&named, asked_path) {
        (None, _) => false,
        (Some((name, _, _)), None) => e.path.file_name().and_then(|n| n.to_str()) == Some(name),
        (Some(_), Some(p)) => {
            e.path == p
                || asked_real
                    .as_ref()
                    .is_some_and(|r| std::fs::canonicalize(&e.path).ok().as_ref() == Some(r))
        }
    };
    let mut asked = Vec::new();
    let mut others = Vec::new();
    for e in st.entries.into_iter().filter(|e| wanted(e)) {
        let r = related_of(e);
        if is_asked(&r.entry) {
            asked.push(r);
        } else {
            others.push(r);
        }
    }
    let flags_hash = named.as_ref().and_then(|(_, _, f)| f.clone());
    let hashes = query
        .flags
        .as_deref()
        .map(flags::flags_hashes)
        .unwrap_or_default();
    let reference = query.flags.clone().or_else(|| {
        asked
            .iter()
            .chain(
                others
                    .iter()
                    .filter(|r| flags_hash.is_some() && r.entry.flags_hash == flags_hash),
            )
            .find_map(|r| r.flags.clone())
    });
    let compilers: Vec<Option<String>> = asked.iter().map(|r| r.entry.compiler.clone()).collect();
    for r in &mut asked {
        r.relation = Relation::Asked;
    }
    let job = query.flags.as_deref().map(|f| (f, hashes.as_slice()));
    for r in &mut others {
        r.relation = relation(r, named.is_some(), flags_hash.as_deref(), &compilers, job);
    }
    let mut entries: Vec<Related> = asked.into_iter().chain(others).collect();
    if let Some(reference) = &reference {
        for r in &mut entries {
            if let Some(f) = &r.flags {
                r.only_asked = missing(reference, f);
                r.only_here = missing(f, reference);
            }
        }
    }
    Ok(Explanation {
        graph_hash: graph,
        flags_hash,
        flags: reference,
        hashes,
        entries,
        errors: st.errors,
    })
}

/// A job's flags and the (rule, flags hash) pairs they give.
type Job<'a> = (&'a [String], &'a [(HashRule, String)]);

/// `e` with its flags read, related to nothing yet.
fn related_of(e: CacheEntry) -> Related {
    let (flags, flags_error) = match flags_of(&e) {
        Ok(f) => (f, None),
        Err(why) => (None, Some(why)),
    };
    let hash_rule = match (&flags, &e.flags_hash) {
        (Some(f), Some(h)) => HashRule::matching(f, h),
        _ => None,
    };
    Related {
        entry: e,
        relation: Relation::SameGraph,
        flags,
        flags_error,
        hash_rule,
        only_asked: Vec::new(),
        only_here: Vec::new(),
    }
}

/// How `r` relates to an entry named (`named`, of flags hash `flags_hash`,
/// met under `compilers`) and to a `job`'s flags and the hashes they give:
/// the same key first, then the job's flags, then other flags.
fn relation(
    r: &Related,
    named: bool,
    flags_hash: Option<&str>,
    compilers: &[Option<String>],
    job: Option<Job<'_>>,
) -> Relation {
    let same_key =
        named && r.entry.flags_hash.is_some() && r.entry.flags_hash.as_deref() == flags_hash;
    if same_key {
        return Relation::SameKey;
    }
    if job.is_some_and(|j| has_flags_of(r, j)) {
        return Relation::SameFlags;
    }
    // Absent from the cache, the entry asked about has no release to
    // compare with.
    let other_compiler = !compilers.is_empty() && !compilers.contains(&r.entry.compiler);
    match (named, job, other_compiler) {
        (false, None, _) => Relation::SameGraph,
        (true, _, true) => Relation::OtherFlagsOtherCompiler,
        _ => Relation::OtherFlags,
    }
}

/// Whether `r` was compiled with the `job`'s flags: its flags hash is one
/// they give, or its flags file lists them.
fn has_flags_of(r: &Related, (flags, hashes): Job<'_>) -> bool {
    let by_hash = r
        .entry
        .flags_hash
        .as_ref()
        .is_some_and(|h| hashes.iter().any(|(_, x)| x.eq_ignore_ascii_case(h)));
    by_hash || r.flags.as_deref() == Some(flags)
}

/// A usage error of [`explain`].
fn usage(reason: &str) -> Error {
    Error::Usage {
        reason: reason.into(),
    }
}

/// Whether `e` is an entry of the compiler wrapper's layout (`MODULE_*`).
fn is_module(e: &CacheEntry) -> bool {
    e.path
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("MODULE_"))
}

/// The flags of `e` (from its flags file), or why they could not be
/// read.
fn flags_of(e: &CacheEntry) -> std::result::Result<Option<Vec<String>>, String> {
    #[cfg(feature = "remote")]
    if let Some(url) = super::root::url_of(&e.path) {
        return flags::read_flags_url(url).map_err(|err| err.to_string());
    }
    flags::read_flags(&e.path).map_err(|err| err.to_string())
}

/// The flags of `a` that `b` lacks, in `a`'s order, each once.
fn missing(a: &[String], b: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for f in a {
        if !b.contains(f) && !out.contains(f) {
            out.push(f.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_difference_keeps_order_and_names_each_flag_once() {
        let a = v(&["--target=trn1", "-O2", "-O2", "--lnc=2"]);
        let b = v(&["--target=trn1", "-O1"]);
        assert_eq!(missing(&a, &b), v(&["-O2", "--lnc=2"]));
        assert_eq!(missing(&b, &a), v(&["-O1"]));
    }

    #[test]
    fn a_query_names_something() {
        let dir = tempfile::tempdir().unwrap();
        let e = explain(dir.path(), &ExplainQuery::default()).unwrap_err();
        assert!(e.to_string().contains("--graph"), "{e}");
        let e = explain(dir.path(), &ExplainQuery::entry("not-an-entry")).unwrap_err();
        assert!(e.to_string().contains("MODULE_"), "{e}");
        let mut q = ExplainQuery::entry("MODULE_1+ab");
        q.graph = Some("1".into());
        let e = explain(dir.path(), &q).unwrap_err();
        assert!(e.to_string().contains("not both"), "{e}");
    }
}
