//! `neff cache explain`: the library's [`neff::cache::explain`], printed:
//! a table for people, or NDJSON records (the job's flags hashes first,
//! when flags were given, then one record per entry).

use std::collections::BTreeMap;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use neff::cache::{ExplainQuery, Explanation, HashRule, Related, Relation};
use serde::Serialize;

use crate::{shown, stdout_err, AtPath, Failure};

/// The arguments of `neff cache explain`.
#[derive(clap::Args)]
pub(crate) struct ExplainArgs {
    /// The cache [default: with an ENTRY given by its path, the cache
    /// holding it; else as `cache status`'s first default root]. A single
    /// argument named MODULE_* is the ENTRY
    root: Option<PathBuf>,
    /// The entry to explain: its directory, or its MODULE_<graph
    /// hash>+<flags hash> name alone (what a job looked up and missed)
    entry: Option<PathBuf>,
    /// Every entry of this graph hash (the part of an entry's name before +)
    #[arg(long, value_name = "HASH")]
    graph: Option<String>,
    /// A job's compile flags, as $NEURON_CC_FLAGS holds them (split as a
    /// shell splits them): the flags hash they give, and how each entry's
    /// flags differ from them
    #[arg(long, value_name = "FLAGS", allow_hyphen_values = true)]
    flags: Option<String>,
    /// One JSON object per line (NDJSON): with --flags, the job's first,
    /// then one per entry
    #[arg(long)]
    json: bool,
}

/// The job's line of `--json`.
#[derive(Serialize)]
struct Job<'a> {
    job: JobFlags<'a>,
}

#[derive(Serialize)]
struct JobFlags<'a> {
    flags: &'a [String],
    hashes: BTreeMap<&'static str, &'a str>,
}

/// `neff cache explain`: exit 0 when some entry matched, 1 when none did,
/// 2 for a usage error, 3 when part of the cache could not be read.
pub(crate) fn explain(args: ExplainArgs) -> Result<u8, Failure> {
    let ExplainArgs {
        mut root,
        mut entry,
        graph,
        flags,
        json,
    } = args;
    if entry.is_none() && root.as_deref().is_some_and(is_module) {
        entry = root.take();
    }
    let root = root.unwrap_or_else(|| cache_of(entry.as_deref()));
    let mut q = match (entry, graph) {
        (Some(e), None) => ExplainQuery::entry(e),
        (None, Some(g)) => ExplainQuery::graph(g),
        (Some(e), Some(g)) => {
            let mut q = ExplainQuery::entry(e);
            q.graph = Some(g);
            q
        }
        (None, None) => ExplainQuery::default(),
    };
    if let Some(text) = flags {
        let split = neff::cache::split_flags(&text).ok_or_else(|| Failure {
            path: root.clone(),
            err: neff::Error::Usage {
                reason: format!("--flags {text:?}: unbalanced quotes"),
            },
        })?;
        q = q.with_flags(split);
    }
    let x = neff::cache::explain(&root, &q).at(&root)?;
    let mut out = BufWriter::new(io::stdout().lock());
    let written = if json {
        records(&x, q.flags.is_some(), &mut out)
    } else {
        table(&x, &root, q.flags.is_some(), &mut out)
    };
    written.and_then(|()| out.flush()).map_err(stdout_err)?;
    for e in &x.errors {
        eprintln!("neff: {}: {}", shown(&e.path), crate::line(&e.reason));
    }
    Ok(match (x.errors.is_empty(), x.entries.is_empty()) {
        (false, _) => 3,
        (true, true) => 1,
        (true, false) => 0,
    })
}

/// Whether `p` names an entry (`MODULE_*`).
fn is_module(p: &Path) -> bool {
    p.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("MODULE_"))
}

/// The cache to read when no root is given: the one holding `entry`
/// where it is a path (above its `neuronxcc-*` directory, so that every
/// compiler release is seen), else the default root.
fn cache_of(entry: Option<&Path>) -> PathBuf {
    let parent = entry
        .filter(|e| e.components().count() > 1)
        .and_then(Path::parent);
    match parent {
        Some(p) => {
            let version = p
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("neuronxcc-"));
            match (version, p.parent()) {
                (true, Some(up)) if !up.as_os_str().is_empty() => up.to_path_buf(),
                (true, Some(_)) => PathBuf::from("."),
                _ => p.to_path_buf(),
            }
        }
        None => neff::cache::root_or_default(None),
    }
}

/// The NDJSON records: the job's hashes (with `--flags`), then the entries.
fn records(x: &Explanation, job: bool, out: &mut impl Write) -> io::Result<()> {
    if job {
        let line = Job {
            job: JobFlags {
                flags: x.flags.as_deref().unwrap_or_default(),
                hashes: x
                    .hashes
                    .iter()
                    .map(|(r, h)| (r.name(), h.as_str()))
                    .collect(),
            },
        };
        writeln!(
            out,
            "{}",
            serde_json::to_string(&line).map_err(io::Error::other)?
        )?;
    }
    for r in &x.entries {
        writeln!(
            out,
            "{}",
            serde_json::to_string(r).map_err(io::Error::other)?
        )?;
    }
    Ok(())
}

/// Flags as a person reads them (a shell could take them back).
fn spelled(flags: &[String]) -> String {
    if flags.is_empty() {
        return "(none)".into();
    }
    let plain = |f: &str| {
        !f.is_empty()
            && f.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_=.,/:+@%".contains(c))
    };
    flags
        .iter()
        .map(|f| match plain(f) {
            true => f.clone(),
            // Quoted and escaped as Rust spells a string: no control
            // character reaches the terminal.
            false => format!("{f:?}"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// What a rule is, for the table.
fn rule_said(r: HashRule) -> &'static str {
    match r {
        HashRule::Joined => {
            "the flags joined by spaces (as 2.13-2.14 entries with compile_flags.txt)"
        }
        HashRule::Json => "the flags as a JSON list (as 2.15-2.16 entries with compile_flags.json)",
        _ => "another rule",
    }
}

/// The human report.
fn table(x: &Explanation, root: &Path, job: bool, out: &mut impl Write) -> io::Result<()> {
    let what = match (&x.graph_hash, &x.flags_hash) {
        (Some(g), Some(f)) => format!("MODULE_{g}+{f}"),
        (Some(g), None) => format!("graph {g}"),
        _ => "the job's flags".into(),
    };
    let n = x
        .entries
        .iter()
        .filter(|r| r.relation != Relation::Asked)
        .count();
    let entries = if n == 1 { "entry" } else { "entries" };
    let what = crate::line(&what);
    writeln!(out, "{what} in {}: {n} related {entries}", shown(root))?;
    if job {
        let flags = x.flags.as_deref().unwrap_or_default();
        writeln!(out, "\njob's flags: {}", spelled(flags))?;
        for (r, h) in &x.hashes {
            writeln!(out, "  flags hash {h} by {}", rule_said(*r))?;
        }
        writeln!(
            out,
            "  (how a given wrapper forms the hash is not published: each rule is \
             one public caches show; an entry's own rule is shown below where its \
             flags give its hash)"
        )?;
    } else if let Some(f) = &x.flags {
        writeln!(out, "\nflags compared with: {}", spelled(f))?;
    }
    let asked = x.entries.iter().any(|r| r.relation == Relation::Asked);
    if x.flags_hash.is_some() && !asked {
        writeln!(out, "\nthe entry asked about is not in this cache")?;
    }
    for r in &x.entries {
        entry_lines(r, out)?;
    }
    Ok(())
}

/// One entry's lines of the table.
fn entry_lines(r: &Related, out: &mut impl Write) -> io::Result<()> {
    let e = &r.entry;
    let compiler = crate::line(e.compiler.as_deref().unwrap_or("(no compiler version)"));
    writeln!(
        out,
        "\n{:<26} {compiler}  {}  {}",
        r.relation.name(),
        e.state.name(),
        shown(&e.path)
    )?;
    match (&r.flags, &r.flags_error) {
        (Some(f), _) => writeln!(out, "  flags: {}", spelled(f))?,
        (None, Some(why)) => writeln!(out, "  flags unread: {}", crate::line(why))?,
        (None, None) => writeln!(out, "  flags: unknown (no compile_flags.json or .txt)")?,
    }
    if let (Some(h), Some(_)) = (&e.flags_hash, &r.flags) {
        match r.hash_rule {
            Some(rule) => writeln!(out, "  flags hash {h}: {}", rule_said(rule))?,
            None => writeln!(out, "  flags hash {h}: by no rule known here")?,
        }
    }
    if r.relation != Relation::Asked && (!r.only_asked.is_empty() || !r.only_here.is_empty()) {
        writeln!(out, "  only asked: {}", spelled(&r.only_asked))?;
        writeln!(out, "  only here:  {}", spelled(&r.only_here))?;
    }
    Ok(())
}
