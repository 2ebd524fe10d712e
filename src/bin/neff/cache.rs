//! `neff cache status` and `neff cache prune`: the library's
//! [`neff::cache`] reports, printed.

use std::io::{self, BufWriter, Write};
use std::path::Path;

use neff::cache::{CacheStatus, PruneOptions, State};
use neff::Error;

use crate::format::{Format, Rows};
use crate::{shown, stdout_err, AtPath, Failure};

/// The cache root to read: the one given, else the compiler wrapper's (a
/// directory, or an `s3://` prefix).
fn root_of(root: Option<String>) -> Result<String, Failure> {
    Ok(root.unwrap_or_else(neff::cache::default_root))
}

/// Bytes as people read them.
fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// `n entries` (or `1 entry`).
fn entries(n: usize) -> String {
    if n == 1 {
        "1 entry".into()
    } else {
        format!("{n} entries")
    }
}

/// Reports the parts of the cache that could not be read, on stderr.
fn report_errors(status: &CacheStatus) {
    for e in &status.errors {
        eprintln!("neff: {}: {}", crate::line(&e.path), crate::line(&e.reason));
    }
}

/// `neff cache status`: exit 0 when every entry is ok, 1 when some entry
/// is not, 3 when part of the cache could not be read.
pub(crate) fn status(root: Option<String>, format: Format) -> Result<u8, Failure> {
    let root = root_of(root)?;
    let path = Path::new(&root);
    let status = neff::cache::status(path).at(path)?;
    let mut out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let written = if format == Format::Table {
        table(&status, path, &mut out)
    } else {
        let mut w = Rows::new(format, &mut out);
        status
            .entries
            .iter()
            .try_for_each(|e| w.row(e))
            .and_then(|()| w.finish().map(drop))
    };
    written.and_then(|()| out.flush()).map_err(stdout_err)?;
    report_errors(&status);
    Ok(if !status.errors.is_empty() {
        3
    } else {
        u8::from(!status.all_ok())
    })
}

/// The human report: per compiler version, entries and bytes by state,
/// then every entry that is not ok with its reason.
fn table(status: &CacheStatus, root: &Path, out: &mut impl Write) -> io::Result<()> {
    let total: u64 = status.entries.iter().map(|e| e.bytes).sum();
    writeln!(
        out,
        "{}: {}, {}",
        shown(root),
        entries(status.entries.len()),
        bytes(total)
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
        writeln!(out, "\n{name}: {}, {}", entries(n), bytes(b))?;
        for s in State::ALL {
            if let Some(&(en, eb)) = v.states.get(&s) {
                writeln!(out, "  {:<11} {en:>6}  {:>10}", s.name(), bytes(eb))?;
            }
        }
    }
    let bad: Vec<_> = status
        .entries
        .iter()
        .filter(|e| !matches!(e.state, State::Ok | State::Empty))
        .collect();
    if !bad.is_empty() {
        writeln!(out, "\nnot ok:")?;
        for e in bad {
            let why = e.reason.as_deref().unwrap_or("");
            writeln!(
                out,
                "  {:<10} {}: {}",
                e.state.name(),
                crate::line(&e.path),
                crate::line(why)
            )?;
        }
    }
    Ok(())
}

/// `neff cache prune`: exit 0 when every selected entry was removed (or,
/// dry, could be), 1 when one was left (it changed, or a removal failed).
pub(crate) fn prune(root: String, opts: &PruneOptions, format: Format) -> Result<u8, Failure> {
    let json = format != Format::Table;
    let root = root_of(Some(root))?;
    let path = Path::new(&root);
    if !opts.selects_any() {
        return Err(Failure {
            path: path.into(),
            err: Error::Usage {
                reason: "nothing selected: give --failed, --corrupt, --locked-older-than, \
                         --incomplete-older-than or --keep-versions"
                    .into(),
            },
        });
    }
    let status = neff::cache::status(path).at(path)?;
    report_errors(&status);
    let done = neff::cache::prune(path, &status, opts);
    let mut out = BufWriter::new(io::stdout().lock());
    let mut rows = json.then(|| Rows::new(format, Vec::new()));
    let mut left = false;
    let mut total = 0;
    for r in &done {
        left |= r.error.is_some();
        if r.removed || !opts.apply {
            total += r.bytes;
        }
        if let Some(w) = rows.as_mut() {
            w.row(r).map_err(stdout_err)?;
            continue;
        }
        let what = match (&r.error, r.removed) {
            (Some(e), _) => format!("left: {}", crate::line(e)),
            (None, true) => "removed".into(),
            (None, false) => "would remove".into(),
        };
        writeln!(
            out,
            "{what} {} ({}, {}): {}",
            crate::line(&r.path),
            r.state.name(),
            bytes(r.bytes),
            r.why
        )
        .map_err(stdout_err)?;
    }
    if let Some(w) = rows {
        out.write_all(&w.finish().map_err(stdout_err)?)
            .map_err(stdout_err)?;
    } else {
        let verb = if opts.apply {
            "removed"
        } else {
            "would be removed (dry run: --apply removes them)"
        };
        writeln!(out, "{}, {} {verb}", entries(done.len()), bytes(total)).map_err(stdout_err)?;
    }
    out.flush().map_err(stdout_err)?;
    Ok(u8::from(left))
}
