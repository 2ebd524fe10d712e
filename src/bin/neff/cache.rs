//! `neff cache status` and `neff cache prune`: the library's
//! [`neff::cache`] reports, printed. Records carry absolute times; the
//! tables people read give ages.

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use neff::cache::{human_bytes, CacheEntry, CacheStatus, PruneOptions, State};

use crate::format::{entries, Format, Rows};
use crate::{shown, stdout_err, AtPath, Failure};

#[derive(clap::Subcommand)]
pub(crate) enum CacheCmd {
    /// Every entry's state (ok, corrupt, failed, locked, incomplete, empty,
    /// unreadable, unknown) and a summary per compiler version. Exit 0 when
    /// every entry is ok, 1 when some entry is not (or the root holds no
    /// compile cache), 3 when part of the cache could not be read
    Status {
        /// The cache [default: --cache_dir= in $NEURON_CC_FLAGS, else
        /// $NEURON_COMPILE_CACHE_URL, else /var/tmp/neuron-compile-cache;
        /// and each of vLLM's and the LNL stack's roots that exists:
        /// $VLLM_CACHE_ROOT/neuron/compile_cache or
        /// ~/.cache/vllm/neuron/compile_cache and
        /// /tmp/vllm_neuron_wdir_$USER/neuron/compile_cache,
        /// $NEURON_LIBTORCH_REMOTE_CACHE,
        /// $NEURON_LIBTORCH_CACHE_ROOT/neuron/compile_cache or
        /// ~/.cache/neuron_libtorch/neuron/compile_cache]
        root: Option<PathBuf>,
        /// One JSON object per entry (NDJSON) instead of the summary:
        /// --format ndjson
        #[arg(long, conflicts_with = "format")]
        json: bool,
        /// How to print the entries (table: the summary per version)
        /// [default: table]
        #[arg(long, value_enum)]
        format: Option<Format>,
    },
    /// Remove the entries selected: a dry run that lists them, their bytes
    /// and what --apply will do, unless --apply. Never an entry holding a
    /// fresh lock or one a live process holds, one that changed within
    /// --min-age, one that is unreadable or unknown, or one behind a link
    /// or a mount; never in / or a home directory. Exit 0 when every
    /// selected entry went (or would, or was already gone), 1 when one was
    /// (or would be) left (or the root is refused), 3 when part of the
    /// cache could not be read
    Prune {
        root: PathBuf,
        /// Failed compiles (model.log, no NEFF or a placeholder): replayed
        /// until removed
        #[arg(long)]
        failed: bool,
        /// Entries whose NEFF is refused, or missing beside model.done
        #[arg(long)]
        corrupt: bool,
        /// Locked entries whose lock is at least this old (90m, 2h, 1d);
        /// without it no entry holding a lock is removed. Refused while a
        /// neuronx-cc process runs on this host
        #[arg(long, value_name = "DURATION", value_parser = crate::parse_duration)]
        locked_older_than: Option<std::time::Duration>,
        /// Incomplete entries (a NEFF without model.done) untouched this long
        #[arg(long, value_name = "DURATION", value_parser = crate::parse_duration)]
        incomplete_older_than: Option<std::time::Duration>,
        /// Every entry of compiler releases older than the newest N (N >= 1;
        /// builds of one release count as one)
        #[arg(long, value_name = "N")]
        keep_versions: Option<usize>,
        /// Ok entries, least recently used first (the NEFF's access time,
        /// or its modification time where none is kept), until the cache
        /// holds at most SIZE (500M, 10G, 1.5T; KB, MB, GB: powers of 1000).
        /// Never one of the newest compiler release unless
        /// --include-current
        #[arg(long, value_name = "SIZE", value_parser = parse_size)]
        max_size: Option<u64>,
        /// With --max-size: entries of the newest compiler release may go too
        #[arg(long, requires = "max_size")]
        include_current: bool,
        /// Remove them (else only list them)
        #[arg(long)]
        apply: bool,
        /// Keep every entry anything in which changed (modification or
        /// change time, temporary files included) within DURATION, whatever
        /// selects it: a copy or a compile still writing it. 0s: off
        #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = crate::parse_duration)]
        min_age: std::time::Duration,
        /// One JSON object per selected entry (NDJSON): --format ndjson
        #[arg(long, conflicts_with = "format")]
        json: bool,
        /// How to print the selected entries [default: table]
        #[arg(long, value_enum)]
        format: Option<Format>,
    },
    /// Copy every ok entry of SRC that DST lacks into DST, each under a
    /// staging name, checked, then renamed into place (a reader never sees
    /// half an entry); nothing not ok, no lock, no link is ever copied, and
    /// nothing at DST is ever overwritten: an entry already there is
    /// skipped when it is the same, a conflict (untouched) when it differs,
    /// left alone when locked. Exit 0 when every selected entry is at DST,
    /// 1 when one is not (a conflict, locked, left), 3 when reading or
    /// writing failed
    Sync(crate::cache_sync::SyncArgs),
    /// Why a compile missed anyway: the entries of the same graph under
    /// other flags (with the flags only one side holds) or other compiler
    /// releases, and the flags hash a job's --flags give. Exit 0 when some
    /// entry matched, 1 when none did, 3 when part of the cache could not
    /// be read
    Explain(crate::explain::ExplainArgs),
}

/// `neff cache`: runs `status`, `prune`, `sync` or `explain`.
pub(crate) fn command(what: CacheCmd) -> Result<u8, Failure> {
    match what {
        CacheCmd::Sync(args) => crate::cache_sync::sync(args),
        CacheCmd::Status { root, json, format } => {
            status(root, crate::format::chosen(format, json, Format::Ndjson))
        }
        CacheCmd::Explain(args) => crate::explain::explain(args),
        CacheCmd::Prune {
            root,
            failed,
            corrupt,
            locked_older_than,
            incomplete_older_than,
            keep_versions,
            max_size,
            include_current,
            apply,
            min_age,
            json,
            format,
        } => {
            let mut p = PruneOptions::default()
                .failed(failed)
                .corrupt(corrupt)
                .include_current(include_current)
                .apply(apply)
                .min_age(min_age);
            if let Some(b) = max_size {
                p = p.max_size(b);
            }
            if let Some(d) = locked_older_than {
                p = p.locked_older_than(d);
            }
            if let Some(d) = incomplete_older_than {
                p = p.incomplete_older_than(d);
            }
            if let Some(n) = keep_versions {
                p = p.keep_versions(n);
            }
            prune(
                root,
                &p,
                crate::format::chosen(format, json, Format::Ndjson),
            )
        }
    }
}

/// The cache root to read ([`neff::cache::root_or_default`]).
fn root_of(root: Option<PathBuf>) -> PathBuf {
    neff::cache::root_or_default(root)
}

/// Reports the parts of the cache that could not be read, on stderr.
fn report_errors(status: &CacheStatus) {
    for e in &status.errors {
        eprintln!("neff: {}: {}", shown(&e.path), crate::line(&e.reason));
    }
}

/// The exit code a report gives: 3 when part of the cache could not be
/// read, else `otherwise`.
fn exit(status: &CacheStatus, otherwise: bool) -> u8 {
    if status.has_unreadable() {
        3
    } else {
        u8::from(otherwise)
    }
}

/// `neff cache status`: exit 0 when every entry is ok, 1 when some entry
/// is not, 3 when part of the cache could not be read. Without a root,
/// every default root ([`neff::cache::default_roots`]) is read in turn: one
/// that does not exist or holds no cache is said so in one line on stderr
/// and passed over, unless no root could be read (then the first one's
/// failure is the answer); the exit code is the worst of the roots read.
pub(crate) fn status(root: Option<PathBuf>, format: Format) -> Result<u8, Failure> {
    let roots = match root {
        Some(r) => vec![root_of(Some(r))],
        None => neff::cache::default_roots(),
    };
    let mut read = Vec::new();
    let mut first_failure = None;
    for path in roots {
        match neff::cache::status(&path).at(&path) {
            Ok(s) => read.push((path, s)),
            Err(f) => {
                if first_failure.is_none() {
                    first_failure = Some(f);
                } else {
                    eprintln!(
                        "neff: {}: {} (passed over)",
                        shown(&f.path),
                        crate::one_line(&f.err)
                    );
                }
            }
        }
    }
    match first_failure {
        Some(f) if read.is_empty() => return Err(f),
        Some(f) => eprintln!(
            "neff: {}: {} (passed over)",
            shown(&f.path),
            crate::one_line(&f.err)
        ),
        None => {}
    }
    let mut out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let written = if format == Format::Table {
        read.iter().enumerate().try_for_each(|(i, (path, status))| {
            if i > 0 {
                writeln!(out)?;
            }
            table(status, path, &mut out)
        })
    } else {
        let mut w = Rows::new(format, &mut out);
        read.iter()
            .flat_map(|(_, s)| &s.entries)
            .try_for_each(|e| w.row(e))
            .and_then(|()| w.finish().map(drop))
    };
    written.and_then(|()| out.flush()).map_err(stdout_err)?;
    let mut code = 0;
    for (_, status) in &read {
        report_errors(status);
        code = code.max(exit(status, !status.all_ok()));
    }
    Ok(code)
}

/// How long ago `t` was, as people read it (`3d ago`).
fn ago(t: Option<SystemTime>) -> String {
    match t {
        Some(t) => {
            let d = SystemTime::now().duration_since(t).unwrap_or_default();
            format!("{} ago", neff::cache::human(d))
        }
        None => "never".into(),
    }
}

/// An entry's reason for a person: its lock's age where it is locked.
fn reason(e: &CacheEntry) -> String {
    match (e.state, e.lock_modified, e.reason.as_deref()) {
        (State::Locked, Some(t), _) => format!("locked, lock last modified {}", ago(Some(t))),
        (State::Empty, _, None) => "none of the compiler's output".into(),
        (_, _, r) => crate::line(r.unwrap_or("")).into_owned(),
    }
}

/// The human report: per compiler version, entries and bytes by state,
/// then every entry that is not ok with its reason.
fn table(status: &CacheStatus, root: &Path, out: &mut impl Write) -> io::Result<()> {
    let total: u64 = status.entries.iter().map(|e| e.bytes).sum();
    let what = match neff::cache::root_version(root) {
        Some(v) => format!(" (the entries of compiler {v} only: a version's directory)"),
        None => String::new(),
    };
    writeln!(
        out,
        "{}{what}: {}, {}",
        shown(root),
        entries(status.entries.len()),
        human_bytes(total)
    )?;
    for v in status.by_version() {
        let (n, b) = v
            .states
            .values()
            .fold((0, 0), |(n, b), &(en, eb)| (n + en, b + eb));
        let name = v.compiler.map_or_else(
            || "(no compiler version)".into(),
            |c| format!("neuronxcc-{c}"),
        );
        writeln!(out, "\n{name}: {}, {}", entries(n), human_bytes(b))?;
        for s in State::ALL {
            if let Some(&(en, eb)) = v.states.get(&s) {
                writeln!(out, "  {:<11} {en:>6}  {:>10}", s.name(), human_bytes(eb))?;
            }
        }
    }
    let bad: Vec<_> = status
        .entries
        .iter()
        .filter(|e| e.state != State::Ok)
        .collect();
    if !bad.is_empty() {
        writeln!(out, "\nnot ok:")?;
        for e in bad {
            writeln!(
                out,
                "  {:<10} {}: {}",
                e.state.name(),
                shown(&e.path),
                reason(e)
            )?;
        }
    }
    // Ok entries with a note (a NEFF beside the loader's that is refused),
    // and the parts of the layout that are not entries.
    let noted: Vec<_> = status
        .entries
        .iter()
        .filter(|e| e.state == State::Ok && e.reason.is_some())
        .map(|e| (shown(&e.path), reason(e)))
        .chain(
            status
                .notes
                .iter()
                .map(|n| (shown(&n.path), crate::line(&n.what).into_owned())),
        )
        .collect();
    if !noted.is_empty() {
        writeln!(out, "\nnotes:")?;
        for (path, what) in noted {
            writeln!(out, "  {path}: {what}")?;
        }
    }
    Ok(())
}

/// `neff cache prune`: exit 0 when every selected entry went (or, dry,
/// would), 1 when one was (or would be) left, 3 when part of the cache
/// could not be read (whatever went).
pub(crate) fn prune(root: PathBuf, opts: &PruneOptions, format: Format) -> Result<u8, Failure> {
    let json = format != Format::Table;
    let path = root_of(Some(root));
    opts.check().at(&path)?;
    neff::cache::refuse_pruning(&path).at(&path)?;
    let status = neff::cache::status(&path).at(&path)?;
    report_errors(&status);
    let done = neff::cache::prune(&path, &status, opts).at(&path)?;
    let mut out = BufWriter::new(io::stdout().lock());
    let mut rows = json.then(|| Rows::new(format, Vec::new()));
    let mut tally = Tally::default();
    for r in &done.removals {
        tally.count(r);
        if let Some(w) = rows.as_mut() {
            w.row(r).map_err(stdout_err)?;
            continue;
        }
        let what = match (&r.error, &r.kept, r.gone, opts.apply) {
            (Some(e), _, _, true) => format!("left: {}", crate::line(e)),
            (Some(e), _, _, false) => format!("would leave: {}", crate::line(e)),
            (None, Some(k), _, _) => format!("kept: {}", crate::line(k)),
            (None, None, true, _) => "already gone (removed by another process)".into(),
            (None, None, false, true) => "removed".into(),
            (None, None, false, false) => "would remove".into(),
        };
        writeln!(
            out,
            "{what} {} ({}, {}): {}",
            shown(&r.path),
            r.state.name(),
            human_bytes(r.bytes),
            r.why
        )
        .map_err(stdout_err)?;
    }
    if let Some(w) = rows {
        out.write_all(&w.finish().map_err(stdout_err)?)
            .map_err(stdout_err)?;
    } else {
        tally.summary(&mut out, opts.apply).map_err(stdout_err)?;
    }
    out.flush().map_err(stdout_err)?;
    if let Some(short) = &done.short {
        eprintln!("neff: {}: {}", shown(&path), crate::line(short));
    }
    Ok(exit(&status, tally.left.0 > 0))
}

/// Entries and bytes of a prune, by what became of them.
#[derive(Default)]
struct Tally {
    went: (usize, u64),
    left: (usize, u64),
    kept: (usize, u64),
    gone: (usize, u64),
}

impl Tally {
    fn count(&mut self, r: &neff::cache::Removal) {
        let t = if r.is_left() {
            &mut self.left
        } else if r.kept.is_some() {
            &mut self.kept
        } else if r.gone {
            &mut self.gone
        } else {
            &mut self.went
        };
        t.0 += 1;
        t.1 += r.bytes;
    }

    /// The summary line: what went (or would), and what did not.
    fn summary(&self, out: &mut impl Write, apply: bool) -> io::Result<()> {
        let (verb, leave) = if apply {
            ("removed", "left")
        } else {
            ("would be removed", "would be left")
        };
        let part = |(n, b): (usize, u64)| format!("{}, {}", entries(n), human_bytes(b));
        write!(out, "{} {verb}", part(self.went))?;
        if self.left.0 > 0 {
            write!(out, "; {} {leave}", part(self.left))?;
        }
        if self.kept.0 > 0 {
            write!(out, "; {} kept (changed within --min-age)", part(self.kept))?;
        }
        if self.gone.0 > 0 {
            write!(out, "; {} already gone", part(self.gone))?;
        }
        let dry = if apply {
            ""
        } else {
            " (dry run: --apply removes them)"
        };
        writeln!(out, "{dry}")
    }
}

/// A size as people write it: `500M`, `10GiB`, `1.5T`, `2GB`, `4096`: `K`,
/// `M`, `G`, `T` (with or without `iB`) are powers of 1024, `KB`, `MB`,
/// `GB`, `TB` powers of 1000.
pub(crate) fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("{s:?}: not a size (say 500M, 10G, 1.5T)"))?;
    let unit = unit.trim().to_ascii_lowercase();
    let power = |p: i32, base: f64| base.powi(p);
    let m = match unit.as_str() {
        "" | "b" => 1.0,
        "k" | "ki" | "kib" => power(1, 1024.0),
        "m" | "mi" | "mib" => power(2, 1024.0),
        "g" | "gi" | "gib" => power(3, 1024.0),
        "t" | "ti" | "tib" => power(4, 1024.0),
        "kb" => power(1, 1000.0),
        "mb" => power(2, 1000.0),
        "gb" => power(3, 1000.0),
        "tb" => power(4, 1000.0),
        _ => {
            return Err(format!(
                "{s:?}: unknown unit (say K, M, G, T, or KB, MB, GB, TB)"
            ))
        }
    };
    let v = n * m;
    if !v.is_finite() || v >= u64::MAX as f64 {
        return Err(format!("{s:?}: too large"));
    }
    Ok(v as u64)
}
