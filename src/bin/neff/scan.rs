//! Output of `neff scan`: NDJSON, JSON, CSV or an aligned table on stdout,
//! a progress bar on a terminal's stderr, and a one-line summary at the
//! end.

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use neff::scan::{self, Record, ScanOptions};
use neff::Source;

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

// The arguments of `neff scan` (the variant's doc comment is its help).
#[derive(clap::Args)]
pub(crate) struct ScanArgs {
    /// Directories walked for *.neff and files read whatever their
    /// name; `-` reads a list of paths from standard input
    #[arg(required_unless_present = "files_from")]
    pub(crate) paths: Vec<PathBuf>,
    /// Also scan the paths listed in FILE, one a line (`-`: standard
    /// input)
    #[arg(long, value_name = "FILE")]
    pub(crate) files_from: Option<PathBuf>,
    /// The lists (--files-from, `-`) are NUL-separated, as
    /// `find -print0` writes them (names with newlines)
    #[arg(short = '0', long = "null")]
    pub(crate) null: bool,
    /// Worker threads [default: -j/--threads, else one per core]
    #[arg(long, default_value_t = 0)]
    pub(crate) jobs: usize,
    /// Keep the files matching GLOB (gitignore syntax, relative to each
    /// root; repeatable); `!GLOB` excludes (a directory so excluded is
    /// not entered)
    #[arg(short = 'g', long = "glob", value_name = "GLOB")]
    pub(crate) globs: Vec<String>,
    /// Go at most N levels below each root (1: its own entries)
    #[arg(long, value_name = "N")]
    pub(crate) max_depth: Option<usize>,
    /// Do not follow symbolic links (followed by default; a loop is
    /// reported once)
    #[arg(long)]
    pub(crate) no_follow: bool,
    /// Do not enter a directory on another file system than its root's (a
    /// mount inside the tree)
    #[arg(long)]
    pub(crate) one_file_system: bool,
    /// One JSON object per line (NDJSON) instead of a table: --format
    /// ndjson
    #[arg(long, conflicts_with = "format")]
    pub(crate) json: bool,
    /// How to print the records [default: table]
    #[arg(long, value_enum)]
    pub(crate) format: Option<Format>,
    /// Keep files whose sorted index i has i mod N = K-1
    #[arg(long, value_parser = crate::parse_shard)]
    pub(crate) shard: Option<(usize, usize)>,
    /// No progress bar (it only shows when stderr is a terminal)
    #[arg(long)]
    pub(crate) no_progress: bool,
    /// Print the records sorted by path (the walk listed whole first, a
    /// path kept per file; records read a window at a time)
    #[arg(long)]
    pub(crate) sorted: bool,
    /// Exit 1 if any file failed
    #[arg(long)]
    pub(crate) strict: bool,
    /// Also check each payload's hash (reads every byte)
    #[arg(long)]
    pub(crate) verify: bool,
    /// Keep an SQLite catalogue of the scan in FILE: unchanged files are
    /// answered from it (schema: `neff index schema`)
    #[arg(long, value_name = "FILE")]
    pub(crate) index: Option<PathBuf>,
    /// Start the --index catalogue over (whatever FILE held)
    #[arg(long, requires = "index")]
    pub(crate) rebuild: bool,
    /// How long to wait for an --index catalogue another process holds
    /// locked (opening it, then each batch of rows), e.g. 5s, 2m; then
    /// exit 3, the records read so far printed [default: 60s]
    #[arg(long, value_name = "DURATION", value_parser = crate::parse_duration, requires = "index")]
    pub(crate) busy_timeout: Option<std::time::Duration>,
}

/// `neff scan`: the options the arguments set, then [`run`].
pub(crate) fn command(args: ScanArgs, opts: &neff::Options) -> Result<u8, Failure> {
    let ScanArgs {
        paths,
        files_from,
        null,
        jobs,
        globs,
        max_depth,
        no_follow,
        one_file_system,
        json,
        format,
        shard,
        no_progress,
        sorted,
        strict,
        verify,
        index,
        rebuild,
        busy_timeout,
    } = args;
    if let Some(d) = busy_timeout {
        neff::catalog::set_busy_timeout(d);
    }
    let paths = with_lists(paths, files_from.as_deref(), null)?;
    let sopts = ScanOptions::default()
        .open(*opts)
        .jobs(jobs)
        .shard(shard)
        .verify(verify)
        .sorted(sorted)
        .walk(
            scan::Walk::default()
                .globs(globs)
                .max_depth(max_depth)
                .follow_links(!no_follow)
                .one_file_system(one_file_system),
        );
    sopts.walk.check().map_err(|err| Failure {
        path: "--glob".into(),
        err,
    })?;
    let how = How {
        format: crate::format::chosen(format, json, Format::Ndjson),
        strict,
        no_progress,
        index: index.as_deref().map(|db| (db, rebuild)),
    };
    run(&paths, &sopts, &how)
}

/// How to print a scan, and where its catalogue is.
pub struct How<'a> {
    pub format: Format,
    pub strict: bool,
    pub no_progress: bool,
    /// `--index FILE`, and `--rebuild`.
    pub index: Option<(&'a Path, bool)>,
}

/// Scans `roots`, printing each record as it comes (in path order when
/// `opts.sorted`: the library hands them on so) and a summary line on
/// stderr; the exit code.
pub fn run(roots: &[PathBuf], opts: &ScanOptions, how: &How<'_>) -> Result<u8, Failure> {
    let t0 = Instant::now();
    // What each root names, decided here once and handed to the library.
    let roots: Vec<Source> = roots.iter().map(Source::of).collect();
    let roots = roots.as_slice();
    let missing_root = report_unopenable(roots);
    // A glob that does not compile is refused before anything is read.
    opts.walk.check().map_err(|err| Failure {
        path: PathBuf::from("scan"),
        err,
    })?;
    let remote = roots.iter().any(Source::is_remote);
    let bar = (!how.no_progress && io::stderr().is_terminal()).then(|| progress_bar(remote));
    let ticker = bar
        .as_ref()
        .filter(|_| remote)
        .map(|b| Ticker::start(b.clone()));
    let printer = Printer::new(how.format);
    let tally = Tally::default();
    let emit = |r: Record| {
        tally.count(roots, &r);
        if let Some(b) = &bar {
            b.inc(1);
        }
        printer.print(&r);
    };
    let listed = |n: usize| {
        if let Some(b) = &bar {
            b.inc_length(n as u64);
        }
    };
    let scanned = walk(roots, opts, how.index, &listed, &emit);
    drop(ticker);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let printed = tally.ok.load(Ordering::Relaxed) + tally.failed.load(Ordering::Relaxed) > 0;
    printer.finish(scanned.is_err() && !printed)?;
    let from_index = scanned?;
    Ok(tally.summary(t0, from_index, missing_root, how.strict))
}

/// Runs the scan, through the `--index` catalogue if there is one: how
/// many records it answered. A failure of the catalogue (held locked,
/// read-only) ends the scan once the records made so far are printed.
fn walk(
    roots: &[Source],
    opts: &ScanOptions,
    index: Option<(&Path, bool)>,
    listed: &(dyn Fn(usize) + Sync),
    emit: &(dyn Fn(Record) + Sync),
) -> Result<Option<usize>, Failure> {
    match index {
        None => scan::scan_listing(roots, opts, listed, emit)
            .map(|()| None)
            .map_err(|err| Failure {
                path: PathBuf::from("scan"),
                err,
            }),
        Some((db, rebuild)) => {
            neff::catalog::scan_indexed_listing(db, rebuild, roots, opts, listed, &|r, _| emit(r))
                .map(|up| Some(up.from_index))
                .map_err(|err| Failure {
                    path: db.to_path_buf(),
                    err,
                })
        }
    }
}

/// The records of a scan on stdout: table lines (the header printed with
/// the first row, or at the end), or rows of another format. The first
/// write error is kept for [`Printer::finish`].
struct Printer {
    /// The table's writer, and whether its header is printed (or needs
    /// none).
    out: Mutex<(io::BufWriter<io::Stdout>, bool)>,
    rows: Mutex<Option<Rows<io::BufWriter<io::Stdout>>>>,
    write_err: Mutex<Option<io::Error>>,
}

impl Printer {
    fn new(format: Format) -> Printer {
        let table = format == Format::Table;
        Printer {
            out: Mutex::new((io::BufWriter::new(io::stdout()), !table)),
            rows: Mutex::new((!table).then(|| Rows::new(format, io::BufWriter::new(io::stdout())))),
            write_err: Mutex::new(None),
        }
    }

    /// A table line, after the header if it is not printed yet (`None`:
    /// only the header).
    fn line(&self, text: Option<String>) -> io::Result<()> {
        let (w, headed) = &mut *self.out.lock().expect("lock");
        if !std::mem::replace(headed, true) {
            let (ok, arch, cores, world) = ("ok", "arch", "cores", "world");
            writeln!(
                w,
                "{ok:<4} {arch:<8} {cores:>5} {world:>6} {:>7}  path",
                "members"
            )?;
        }
        text.map_or(Ok(()), |t| writeln!(w, "{t}"))
    }

    fn print(&self, r: &Record) {
        let written = match self.rows.lock().expect("lock").as_mut() {
            Some(w) => w.row(r),
            None => self.line(Some(table_row(r))),
        };
        if let Err(e) = written {
            self.write_err.lock().expect("lock").get_or_insert(e);
        }
    }

    /// Ends the output and flushes it; `quiet` (a scan that failed before
    /// any record) prints nothing more.
    fn finish(self, quiet: bool) -> Result<(), Failure> {
        if let Some(w) = self.rows.lock().expect("lock").take().filter(|_| !quiet) {
            w.finish().map_err(stdout_err)?;
        }
        if !quiet {
            self.line(None).map_err(stdout_err)?;
        }
        self.out
            .into_inner()
            .expect("lock")
            .0
            .flush()
            .map_err(stdout_err)?;
        if let Some(e) = self.write_err.into_inner().expect("lock") {
            return Err(stdout_err(e));
        }
        Ok(())
    }
}

/// A scan's counts, and whether a remote root could not be listed.
#[derive(Default)]
struct Tally {
    ok: AtomicUsize,
    failed: AtomicUsize,
    refused: AtomicUsize,
    bytes: AtomicU64,
    unlisted: AtomicBool,
}

impl Tally {
    /// Counts a record. A bucket or repository prefix whose listing fails
    /// is a root that cannot be opened too: reported as such, its record
    /// kept.
    fn count(&self, roots: &[Source], r: &Record) {
        if !r.ok
            && roots
                .iter()
                .any(|root| root.is_remote() && root.shown() == r.path)
        {
            eprintln!(
                "neff: {}: {}",
                crate::quote::one_line(&r.path),
                crate::quote::one_line(r.error.as_deref().unwrap_or("cannot be listed"))
            );
            self.unlisted.store(true, Ordering::Relaxed);
        }
        if r.ok { &self.ok } else { &self.failed }.fetch_add(1, Ordering::Relaxed);
        if r.has_refusals() {
            self.refused.fetch_add(1, Ordering::Relaxed);
        }
        self.bytes
            .fetch_add(r.bytes.unwrap_or(0), Ordering::Relaxed);
    }

    /// Prints the summary line on stderr; the exit code: 3 if a root could
    /// not be opened or listed, else 1 for `--strict` and a failed file.
    fn summary(
        self,
        t0: Instant,
        from_index: Option<usize>,
        missing_root: bool,
        strict: bool,
    ) -> u8 {
        let secs = t0.elapsed().as_secs_f64();
        let (ok, failed) = (self.ok.into_inner(), self.failed.into_inner());
        let cached = from_index.map_or(String::new(), |n| format!(", {n} from the index"));
        eprintln!(
            "neff scan: {} files, {ok} ok, {failed} failed, {} with refused questions, {} bytes, {secs:.2} s, {:.0} NEFFs/s{cached}",
            ok + failed,
            self.refused.into_inner(),
            self.bytes.into_inner(),
            (ok + failed) as f64 / secs.max(1e-9)
        );
        if missing_root || self.unlisted.into_inner() {
            3
        } else {
            u8::from(strict && failed > 0)
        }
    }
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
fn report_unopenable(roots: &[Source]) -> bool {
    let mut any = false;
    for root in roots.iter().filter_map(Source::local_path) {
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

/// Updates a remote scan's progress line five times a second with the
/// process's requests and bytes ([`neff::remote_stats`]), until dropped.
pub(crate) struct Ticker {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Ticker {
    pub(crate) fn start(bar: indicatif::ProgressBar) -> Ticker {
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
