//! `neff cache sync SRC DST`: the library's [`neff::cache::sync`], its
//! records and summary printed.

use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::PathBuf;
use std::time::SystemTime;

use neff::cache::{SyncAction, SyncOptions, Synced};

use crate::format::{Format, Rows};
use crate::{shown, stdout_err, AtPath, Failure};

/// The arguments of `neff cache sync`.
#[derive(clap::Args)]
pub(crate) struct SyncArgs {
    /// The cache copied from: a directory, an s3://, gs:// or az:// prefix,
    /// or an hf:// repository (hf://ORG/REPO[@REV]/PATH)
    src: PathBuf,
    /// The cache copied into: a directory (made when missing), or an s3://,
    /// gs:// or az:// prefix
    dst: PathBuf,
    /// Print what would be copied, skipped or left; write nothing
    #[arg(long)]
    dry_run: bool,
    /// Only entries of this compiler version (2.15: every build of 2.15);
    /// repeat for more. Entries of no version (vLLM's) are then left out
    #[arg(long = "version", value_name = "V")]
    versions: Vec<String>,
    /// Only entries whose name (MODULE_..., a vLLM key) matches PATTERN
    /// (* any run of characters, ? one); repeat for more
    #[arg(long = "glob", value_name = "PATTERN")]
    globs: Vec<String>,
    /// Only entries whose newest file was modified within DURATION (90m,
    /// 2d) or since TIME (2026-01-31T12:00:00Z)
    #[arg(long, value_name = "DURATION|TIME", value_parser = parse_since)]
    since: Option<SystemTime>,
    /// One JSON object per entry (NDJSON): --format ndjson
    #[arg(long, conflicts_with = "format")]
    json: bool,
    /// How to print the entries [default: table]
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// No progress line on a terminal
    #[arg(long)]
    no_progress: bool,
}

/// A time as `--since` takes it: a duration back from now, or an RFC 3339
/// time.
fn parse_since(s: &str) -> Result<SystemTime, String> {
    if let Ok(d) = humantime::parse_duration(s) {
        return SystemTime::now()
            .checked_sub(d)
            .ok_or_else(|| format!("{s:?}: too long ago"));
    }
    humantime::parse_rfc3339_weak(s).map_err(|_| {
        format!("{s:?}: neither a duration (90m, 2d) nor a time (2026-01-31T12:00:00Z)")
    })
}

/// `neff cache sync`: exit 0 when every selected entry is at the
/// destination (copied or already there, the same), 1 when one is not
/// (a conflict, locked, left), 3 when reading or writing failed.
pub(crate) fn sync(a: SyncArgs) -> Result<u8, Failure> {
    let format = crate::format::chosen(a.format, a.json, Format::Ndjson);
    let mut opts = SyncOptions::default().dry_run(a.dry_run);
    for v in a.versions {
        opts = opts.version(v);
    }
    for g in a.globs {
        opts = opts.glob(g);
    }
    if let Some(t) = a.since {
        opts = opts.since(t);
    }
    let bar =
        (!a.no_progress && format == Format::Table && io::stderr().is_terminal()).then(|| {
            let b = indicatif::ProgressBar::new_spinner();
            if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {prefix} {msg}") {
                b.set_style(style);
            }
            b.set_prefix(format!("syncing {} into {}", shown(&a.src), shown(&a.dst)));
            b.enable_steady_tick(std::time::Duration::from_millis(200));
            b
        });
    // With a store on either side, its requests and bytes as they go.
    let remote = [&a.src, &a.dst]
        .iter()
        .any(|p| neff::Source::of(p).is_remote());
    let ticker = bar
        .as_ref()
        .filter(|_| remote)
        .map(|b| crate::scan::Ticker::start(b.clone()));
    let done = neff::cache::sync(&a.src, &a.dst, &opts).at(&a.src);
    drop(ticker);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let done = done?;
    for e in &done.errors {
        eprintln!("neff: {}: {}", shown(&e.path), crate::line(&e.reason));
    }
    let mut out = BufWriter::new(io::stdout().lock());
    if format == Format::Table {
        table(&done, a.dry_run, &mut out).map_err(stdout_err)?;
    } else {
        let mut w = Rows::new(format, &mut out);
        done.entries
            .iter()
            .try_for_each(|e| w.row(e))
            .and_then(|()| w.finish().map(drop))
            .map_err(stdout_err)?;
    }
    out.flush().map_err(stdout_err)?;
    Ok(if done.has_io_error() {
        3
    } else {
        u8::from(done.has_left())
    })
}

/// One line per entry not copied or skipped, then the summary (`dry`:
/// what would be copied).
fn table(done: &Synced, dry: bool, out: &mut impl Write) -> io::Result<()> {
    for e in &done.entries {
        if matches!(e.action, SyncAction::Copied | SyncAction::Skipped) {
            continue;
        }
        let why = e.reason.as_deref().map(crate::line).unwrap_or_default();
        let sep = if why.is_empty() { "" } else { ": " };
        writeln!(out, "{:<8} {}{sep}{why}", e.action.name(), shown(&e.dest))?;
    }
    let part = |a: SyncAction| {
        let (n, b) = done.count(a);
        format!(
            "{}, {}",
            crate::format::entries(n),
            neff::cache::human_bytes(b)
        )
    };
    let copied = if dry {
        format!("{} would be copied", part(SyncAction::Copy))
    } else {
        format!("{} copied", part(SyncAction::Copied))
    };
    write!(
        out,
        "{copied}; {} skipped (the same already there); {} conflicts",
        part(SyncAction::Skipped),
        done.count(SyncAction::Conflict).0
    )?;
    let left = done
        .entries
        .iter()
        .filter(|e| {
            matches!(
                e.action,
                SyncAction::Locked | SyncAction::Left | SyncAction::Error
            )
        })
        .count();
    if left > 0 {
        write!(out, "; {left} left")?;
    }
    if done.passed_over > 0 {
        write!(
            out,
            "; {} not ok at the source (never copied)",
            done.passed_over
        )?;
    }
    if done.requests > 0 {
        write!(out, "; {} requests", done.requests)?;
    }
    writeln!(out)
}
