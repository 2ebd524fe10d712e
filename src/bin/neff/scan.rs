//! Output of `neff scan`: NDJSON, JSON, CSV or an aligned table on stdout,
//! a progress bar on a terminal's stderr, and a one-line summary at the
//! end.

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use neff::scan::{self, Record, ScanOptions};

use super::{stdout_err, Failure};
use crate::format::{Format, Rows};

fn table_row(r: &Record) -> String {
    let opt = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    format!(
        "{:<4} {:<8} {:>5} {:>6} {:>7}  {}{}",
        if r.ok { "ok" } else { "FAIL" },
        opt(r
            .arch
            .as_deref()
            .map(|a| crate::quote::one_line(a).into_owned())),
        opt(r.num_cores.map(|n| n.to_string())),
        opt(r.cc_world_size.map(|n| n.to_string())),
        opt(r.members.map(|n| n.to_string())),
        crate::quote::one_line(&r.path),
        match &r.error {
            Some(e) => format!("  ({})", crate::quote::one_line(e)),
            None if r.has_refusals() => format!(
                "  (refused: {})",
                r.errors
                    .keys()
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            None => String::new(),
        }
    )
}

/// The roots named on the command line, with each `-` replaced by the list
/// on standard input, and the list in `files_from` (a file, or `-`)
/// appended: every path in the order given.
pub fn with_lists(
    paths: Vec<PathBuf>,
    files_from: Option<&Path>,
    nul: bool,
) -> Result<Vec<PathBuf>, Failure> {
    let stdin_list = || {
        scan::path_list(io::stdin().lock(), nul).map_err(|e| Failure {
            path: PathBuf::from("<stdin>"),
            err: neff::Error::Io(e),
        })
    };
    let mut out = Vec::new();
    for p in paths {
        if p.as_os_str() == "-" {
            out.extend(stdin_list()?);
        } else {
            out.push(p);
        }
    }
    match files_from {
        Some(f) if f.as_os_str() == "-" => out.extend(stdin_list()?),
        Some(f) => {
            let file = std::fs::File::open(f).map_err(|e| Failure {
                path: f.to_path_buf(),
                err: neff::Error::Io(e),
            })?;
            out.extend(scan::path_list(file, nul).map_err(|e| Failure {
                path: f.to_path_buf(),
                err: neff::Error::Io(e),
            })?);
        }
        None => {}
    }
    Ok(out)
}

/// How to print a scan, and where its catalogue is.
pub struct How<'a> {
    pub format: Format,
    pub sorted: bool,
    pub strict: bool,
    pub no_progress: bool,
    /// `--index FILE`, and `--rebuild`.
    pub index: Option<(&'a Path, bool)>,
}

pub fn run(roots: &[PathBuf], opts: &ScanOptions, how: &How<'_>) -> Result<u8, Failure> {
    let &How {
        format,
        sorted,
        strict,
        no_progress,
        index,
    } = how;
    let t0 = Instant::now();
    let missing_root = report_unopenable(roots);
    // A glob that does not compile is refused before anything is read.
    opts.walk.check().map_err(|err| Failure {
        path: PathBuf::from("scan"),
        err,
    })?;
    let remote = roots.iter().any(|r| is_url(r));
    let bar = (!no_progress && io::stderr().is_terminal()).then(|| progress_bar(remote));
    let ticker = bar
        .as_ref()
        .filter(|_| remote)
        .map(|b| Ticker::start(b.clone()));
    let table = format == Format::Table;
    // (The table's header is printed with its first row, or at the end:
    // a scan that fails before any record prints nothing on stdout.)
    let out = Mutex::new((io::BufWriter::new(io::stdout()), !table));
    let line = |text: Option<String>| -> io::Result<()> {
        let (w, headed) = &mut *out.lock().expect("lock");
        if !std::mem::replace(headed, true) {
            let (ok, arch, cores, world) = ("ok", "arch", "cores", "world");
            writeln!(
                w,
                "{ok:<4} {arch:<8} {cores:>5} {world:>6} {:>7}  path",
                "members"
            )?;
        }
        text.map_or(Ok(()), |t| writeln!(w, "{t}"))
    };
    let rows = Mutex::new((!table).then(|| Rows::new(format, io::BufWriter::new(io::stdout()))));
    let held: Mutex<Vec<Record>> = Mutex::new(Vec::new());
    let (ok, failed, bytes) = (AtomicUsize::new(0), AtomicUsize::new(0), AtomicU64::new(0));
    let refused = AtomicUsize::new(0);
    let write_err: Mutex<Option<io::Error>> = Mutex::new(None);
    let print = |r: &Record| {
        let written = match rows.lock().expect("lock").as_mut() {
            Some(w) => w.row(r),
            None => line(Some(table_row(r))),
        };
        if let Err(e) = written {
            write_err.lock().expect("lock").get_or_insert(e);
        }
    };
    // A bucket or repository prefix whose listing fails is a root that
    // cannot be opened too: reported as such, its record kept.
    let unlisted = std::sync::atomic::AtomicBool::new(false);
    let emit = |r: Record| {
        if !r.ok
            && roots
                .iter()
                .any(|root| is_url(root) && crate::printable(root) == r.path)
        {
            eprintln!(
                "neff: {}: {}",
                crate::quote::one_line(&r.path),
                crate::quote::one_line(r.error.as_deref().unwrap_or("cannot be listed"))
            );
            unlisted.store(true, Ordering::Relaxed);
        }
        if r.ok { &ok } else { &failed }.fetch_add(1, Ordering::Relaxed);
        if r.has_refusals() {
            refused.fetch_add(1, Ordering::Relaxed);
        }
        bytes.fetch_add(r.bytes.unwrap_or(0), Ordering::Relaxed);
        if let Some(b) = &bar {
            b.inc(1);
        }
        if sorted {
            held.lock().expect("lock").push(r);
        } else {
            print(&r);
        }
    };
    let listed = |n: usize| {
        if let Some(b) = &bar {
            b.inc_length(n as u64);
        }
    };
    // A failure of the catalogue (held locked, read-only) ends the scan
    // once the records made so far are printed.
    let scanned = match index {
        None => scan::scan_listing(roots, opts, &listed, &emit)
            .map(|()| None)
            .map_err(|err| Failure {
                path: PathBuf::from("scan"),
                err,
            }),
        Some((db, rebuild)) => {
            neff::catalog::scan_indexed_listing(db, rebuild, roots, opts, &listed, &|r, _| emit(r))
                .map(|up| Some(up.from_index))
                .map_err(|err| Failure {
                    path: db.to_path_buf(),
                    err,
                })
        }
    };
    drop(ticker);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let mut held = held.into_inner().expect("lock");
    held.sort_by(|a, b| a.path.cmp(&b.path));
    for r in &held {
        print(r);
    }
    let printed = ok.load(Ordering::Relaxed) + failed.load(Ordering::Relaxed) > 0;
    let quiet = scanned.is_err() && !printed;
    if let Some(w) = rows.into_inner().expect("lock").filter(|_| !quiet) {
        w.finish().map_err(stdout_err)?;
    }
    if !quiet {
        line(None).map_err(stdout_err)?;
    }
    out.into_inner()
        .expect("lock")
        .0
        .flush()
        .map_err(stdout_err)?;
    if let Some(e) = write_err.into_inner().expect("lock") {
        return Err(stdout_err(e));
    }
    let from_index = scanned?;
    let secs = t0.elapsed().as_secs_f64();
    let (ok, failed) = (ok.into_inner(), failed.into_inner());
    let cached = from_index.map_or(String::new(), |n| format!(", {n} from the index"));
    eprintln!(
        "neff scan: {} files, {ok} ok, {failed} failed, {} with refused questions, {} bytes, {secs:.2} s, {:.0} NEFFs/s{cached}",
        ok + failed,
        refused.into_inner(),
        bytes.into_inner(),
        (ok + failed) as f64 / secs.max(1e-9)
    );
    Ok(if missing_root || unlisted.into_inner() {
        3
    } else {
        u8::from(strict && failed > 0)
    })
}

/// The progress bar: its length grows as the paths are listed (a
/// bucket's pages arrive while the first objects are read), indexed or
/// not; a scan of remote objects also shows what the network does.
fn progress_bar(remote: bool) -> indicatif::ProgressBar {
    let b = indicatif::ProgressBar::new(0);
    let template = "{bar:40} {pos}/{len} NEFFs {per_sec} eta {eta}";
    let template = if remote {
        format!("{template} {{msg}}")
    } else {
        template.to_string()
    };
    b.set_style(indicatif::ProgressStyle::with_template(&template).expect("static template"));
    b
}

/// Reports each local root named on the command line that cannot be
/// opened (missing, a dangling or looping link, a directory that may not
/// be listed, a file that may not be read) with one stderr line, as
/// ripgrep and fd do; returns whether there was one (exit 3). The scan
/// still walks every root: such a root's failed record is kept.
fn report_unopenable(roots: &[PathBuf]) -> bool {
    let mut any = false;
    for root in roots.iter().filter(|r| !is_url(r)) {
        let opened = std::fs::metadata(root).and_then(|m| match m.is_dir() {
            true => std::fs::read_dir(root).map(drop),
            false if m.is_file() => std::fs::File::open(root).map(drop),
            false => Ok(()),
        });
        if let Err(e) = opened {
            let dangling = std::fs::symlink_metadata(root).is_ok_and(|m| m.is_symlink());
            let why = match e.kind() {
                io::ErrorKind::NotFound if dangling => "a symbolic link to nothing".to_string(),
                _ => e.to_string(),
            };
            let why = crate::quote::one_line(&why);
            eprintln!("neff: {}: cannot be opened: {why}", crate::shown(root));
            any = true;
        }
    }
    any
}

/// Whether `root` names a remote object or prefix (not a local path).
fn is_url(root: &Path) -> bool {
    #[cfg(feature = "remote")]
    {
        root.to_str().is_some_and(neff::is_url)
    }
    #[cfg(not(feature = "remote"))]
    {
        let _ = root;
        false
    }
}

/// Updates a remote scan's progress line five times a second with the
/// process's requests and bytes ([`neff::remote_stats`]), until dropped.
struct Ticker {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Ticker {
    fn start(bar: indicatif::ProgressBar) -> Ticker {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                bar.set_message(remote_line());
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
        });
        Ticker {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// "12.3 MiB moved, 420 requests, 31 in flight".
#[cfg(feature = "remote")]
fn remote_line() -> String {
    let s = neff::remote_stats();
    format!(
        "{} moved, {} requests, {} in flight",
        indicatif::HumanBytes(s.bytes),
        s.requests,
        s.in_flight
    )
}

#[cfg(not(feature = "remote"))]
fn remote_line() -> String {
    String::new()
}
