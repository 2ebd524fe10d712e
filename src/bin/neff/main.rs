//! The `neff` command: a thin client of the `neff` library.
//!
//! The contract (commands, JSON keys, exit codes) is `docs/CLI.md`: 0 ok,
//! 1 refused, 2 usage, 3 I/O. Refusals print one line,
//! `neff: <path>: <reason>`, and nothing on stdout.

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, CommandFactory, Parser, Subcommand};

mod cache;
mod format;
mod quote;
mod scan;
mod tools;
use neff::{Accessor, Error, Kind, Limits, Neff, Options, ReadMode};
use quote::{one_line as line, one_line_bytes, quote};

/// The exit codes every command follows (docs/CLI.md), as `--help` and
/// the man page print them.
const EXIT_CODES: &str = "\
Exit status:
  0  success
  1  an input was read and refused (not a NEFF, corrupt, no member matches,
     a guard fired, a hash mismatch); `diff`: the NEFFs differ; `scan
     --strict`, `cache status`, `cache prune`: some file or entry is not ok
  2  usage error (an unknown flag, a bad glob); `diff`: an input is not a
     NEFF (trouble, as diff(1) says it)
  3  an input could not be read (no such file, permission denied; a scan
     root that cannot be opened, the other roots still scanned)
A command of several inputs (scan, verify, mem, cache) reports each bad
one, finishes the rest, and exits with the worst code it met.";

#[derive(Parser)]
#[command(
    name = "neff",
    version,
    about = "Read AWS Neuron NEFF files fast and safely",
    after_help = EXIT_CODES
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
    #[command(flatten)]
    caps: Caps,
    /// How files are brought into memory: map, read, or auto (map files of
    /// 64 KiB and more, read smaller ones)
    #[arg(long, global = true, value_enum, default_value_t = ReadModeArg::Auto)]
    read_mode: ReadModeArg,
    /// Say more on stderr: -v what each read chose, -vv every decision
    /// (inflate strategy and fallbacks, parallel rounds, each remote
    /// request), -vvv trace. RUST_LOG (e.g. RUST_LOG=neff=debug) sets the
    /// same, for any crate
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Worker threads for every command that fans out (a scan's workers,
    /// a large payload's parallel inflate in rounds of N segments, mem,
    /// the cache status) [default: one per core]
    #[arg(short = 'j', long = "threads", global = true, value_name = "N")]
    threads: Option<usize>,
    /// The AWS profile for s3:// URLs, from ~/.aws/config and
    /// ~/.aws/credentials (keys, credential_process, region, endpoint_url)
    /// [default: $AWS_PROFILE, else the environment's keys, else default]
    #[cfg(feature = "remote")]
    #[arg(long, global = true, value_name = "NAME")]
    profile: Option<String>,
    /// Remote objects a scan reads at once (each worker waits on its
    /// requests, not on a core) [default: 32]
    #[cfg(feature = "remote")]
    #[arg(long, global = true, value_name = "N")]
    io_depth: Option<usize>,
    /// Most bytes moved per remote object (index, members and all;
    /// reading through member data is chosen only under it, and a read
    /// past it fails naming the object), e.g. 16M [default: no cap]
    #[cfg(feature = "remote")]
    #[arg(long, global = true, value_name = "SIZE", value_parser = parse_size)]
    max_bytes_moved: Option<u64>,
    /// Send S3 requests unsigned (a public bucket)
    #[cfg(feature = "remote")]
    #[arg(long, global = true)]
    no_sign_request: bool,
    /// Agree to pay for requests to a requester-pays bucket
    #[cfg(feature = "remote")]
    #[arg(long, global = true)]
    requester_pays: bool,
}

/// Installs the logger: warnings by default, `neff`'s own lines at the
/// level `-v` asks for, then whatever `RUST_LOG` says. Each line is
/// `neff: <level>: <message>` on stderr.
fn init_log(verbose: u8) {
    use log::LevelFilter;
    let mut b = env_logger::Builder::new();
    b.filter_level(LevelFilter::Warn);
    let own = match verbose {
        0 => None,
        1 => Some(LevelFilter::Info),
        2 => Some(LevelFilter::Debug),
        _ => Some(LevelFilter::Trace),
    };
    if let Some(level) = own {
        b.filter_module("neff", level);
    }
    if let Ok(spec) = std::env::var("RUST_LOG") {
        b.parse_filters(&spec);
    }
    b.format(|buf, r| {
        let level = r.level().as_str().to_ascii_lowercase();
        let text = r.args().to_string();
        // neff's own lines print URLs made printable already; another
        // crate's (RUST_LOG) may quote one whole.
        #[cfg(feature = "remote")]
        let text = neff::redact_urls_in(&text);
        writeln!(buf, "neff: {level}: {text}")
    });
    b.target(env_logger::Target::Stderr).init();
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ReadModeArg {
    Auto,
    Map,
    Read,
}

/// Resource caps (sizes take K, M, G suffixes, powers of 1024).
#[derive(Args)]
struct Caps {
    /// Largest inflated payload [default: 4G]
    #[arg(long, global = true, value_parser = parse_size)]
    max_inflated: Option<u64>,
    /// Most archive entries [default: 1000000]
    #[arg(long, global = true)]
    max_members: Option<usize>,
    /// Largest PAX or GNU long-name extended header [default: 1M]
    #[arg(long, global = true, value_parser = parse_size)]
    max_extended_header: Option<u64>,
    /// Longest member name or link target [default: 64K]
    #[arg(long, global = true, value_parser = parse_size)]
    max_name_len: Option<u64>,
    /// Largest JSON member parsed [default: 256M]
    #[arg(long, global = true, value_parser = parse_size)]
    max_json_size: Option<u64>,
    /// Deepest JSON nesting [default: 512]
    #[arg(long, global = true)]
    max_json_depth: Option<usize>,
    /// Largest gzip payload inflated whole; larger ones are walked as a
    /// bounded stream (memory per NEFF, and per scan worker) [default: 64M]
    #[arg(long, global = true, value_parser = parse_size)]
    inflate_budget: Option<u64>,
    /// Most segments in an archive's GNU sparse maps, all together [default: 1048576]
    #[arg(long, global = true)]
    max_sparse_segments: Option<usize>,
    /// Largest real size of one GNU sparse member [default: 64G]
    #[arg(long, global = true, value_parser = parse_size)]
    max_sparse_size: Option<u64>,
}

impl Caps {
    fn limits(&self) -> Limits {
        let d = Limits::default();
        Limits::default()
            .max_inflated(self.max_inflated.unwrap_or(d.max_inflated))
            .max_members(self.max_members.unwrap_or(d.max_members))
            .max_extended_header(self.max_extended_header.unwrap_or(d.max_extended_header))
            .max_name_len(self.max_name_len.map_or(d.max_name_len, |v| v as usize))
            .max_json_size(self.max_json_size.unwrap_or(d.max_json_size))
            .max_json_depth(self.max_json_depth.unwrap_or(d.max_json_depth))
            .inflate_budget(self.inflate_budget.unwrap_or(d.inflate_budget))
            .max_sparse_segments(self.max_sparse_segments.unwrap_or(d.max_sparse_segments))
            .max_sparse_size(self.max_sparse_size.unwrap_or(d.max_sparse_size))
    }
}

fn parse_size(s: &str) -> Result<u64, String> {
    let (num, shift) = match s.as_bytes().last() {
        Some(b'K' | b'k') => (&s[..s.len() - 1], 10),
        Some(b'M' | b'm') => (&s[..s.len() - 1], 20),
        Some(b'G' | b'g') => (&s[..s.len() - 1], 30),
        _ => (s, 0),
    };
    let n: u64 = num.parse().map_err(|_| format!("{s:?} is not a size"))?;
    n.checked_mul(1 << shift)
        .ok_or_else(|| format!("{s:?} is too large"))
}

fn parse_uuid(s: &str) -> Result<[u8; 16], String> {
    let hex: String = s.chars().filter(|&c| c != '-').collect();
    if hex.len() != 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("{s:?} is not 32 hex digits"));
    }
    let mut u = [0u8; 16];
    for (i, b) in u.iter_mut().enumerate() {
        *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex checked");
    }
    Ok(u)
}

fn parse_shard(s: &str) -> Result<(usize, usize), String> {
    let bad = || format!("{s:?} is not K/N with 1 <= K <= N");
    let (k, n) = s.split_once('/').ok_or_else(bad)?;
    let (k, n): (usize, usize) = (k.parse().map_err(|_| bad())?, n.parse().map_err(|_| bad())?);
    if k == 0 || n == 0 || k > n {
        return Err(bad());
    }
    Ok((k, n))
}

fn parse_accessor(s: &str) -> Result<Accessor, String> {
    Accessor::from_name(s).ok_or_else(|| {
        let names: Vec<&str> = Accessor::ALL.iter().map(|a| a.name()).collect();
        format!("unknown accessor {s:?}; one of: {}", names.join(", "))
    })
}

#[derive(Subcommand)]
enum Cmd {
    /// List members in archive order
    Ls {
        file: PathBuf,
        /// One JSON array of {name, kind, size, offset, mtime, mode, link}:
        /// --format json
        #[arg(long, conflicts_with = "format")]
        json: bool,
        /// How to print the members: json, ndjson, csv (those fields), or
        /// table (names, as `tar tf`) [default: table]
        #[arg(long, value_enum)]
        format: Option<format::Format>,
        /// Also list directories, links and other entries
        #[arg(long)]
        all: bool,
    },
    /// Write one member's bytes to stdout (first match in sorted name order)
    Cat { file: PathBuf, pattern: String },
    /// Print an accessor's result as compact JSON (NeffInfo getter names work too)
    Get {
        file: PathBuf,
        /// info, neff, def, kelf, tensor-map, alias, must-alias, arch, has-cc,
        /// cc-world-size, num-cores
        #[arg(value_parser = parse_accessor)]
        accessor: Accessor,
    },
    /// Show the header and a summary
    Info {
        file: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Extract every member under DIR (validated first; never writes outside DIR)
    Unpack {
        file: PathBuf,
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Build a NEFF from a directory (PAX tar, gzip unless --no-gzip)
    Pack {
        dir: PathBuf,
        #[arg(short, long)]
        output: PathBuf,
        /// Raw tar, package version 1, SHA-256
        #[arg(long)]
        no_gzip: bool,
        /// Model name in the header [default: the directory's name]
        #[arg(long)]
        name: Option<String>,
        /// UUID in the header, 32 hex digits [default: random v4]
        #[arg(long, value_parser = parse_uuid)]
        uuid: Option<[u8; 16]>,
        /// Every entry's mtime [default: $SOURCE_DATE_EPOCH, else the files']
        #[arg(long)]
        mtime: Option<u64>,
    },
    /// Read every *.neff under PATHs in parallel: one record per NEFF
    Scan {
        /// Directories walked for *.neff and files read whatever their
        /// name; `-` reads a list of paths from standard input
        #[arg(required_unless_present = "files_from")]
        paths: Vec<PathBuf>,
        /// Also scan the paths listed in FILE, one a line (`-`: standard
        /// input)
        #[arg(long, value_name = "FILE")]
        files_from: Option<PathBuf>,
        /// The lists (--files-from, `-`) are NUL-separated, as
        /// `find -print0` writes them (names with newlines)
        #[arg(short = '0', long = "null")]
        null: bool,
        /// Worker threads [default: -j/--threads, else one per core]
        #[arg(long, default_value_t = 0)]
        jobs: usize,
        /// Keep the files matching GLOB (gitignore syntax, relative to each
        /// root; repeatable); `!GLOB` excludes (a directory so excluded is
        /// not entered)
        #[arg(short = 'g', long = "glob", value_name = "GLOB")]
        globs: Vec<String>,
        /// Go at most N levels below each root (1: its own entries)
        #[arg(long, value_name = "N")]
        max_depth: Option<usize>,
        /// Do not follow symbolic links (followed by default; a loop is
        /// reported once)
        #[arg(long)]
        no_follow: bool,
        /// One JSON object per line (NDJSON) instead of a table: --format
        /// ndjson
        #[arg(long, conflicts_with = "format")]
        json: bool,
        /// How to print the records [default: table]
        #[arg(long, value_enum)]
        format: Option<format::Format>,
        /// Keep files whose sorted index i has i mod N = K-1
        #[arg(long, value_parser = parse_shard)]
        shard: Option<(usize, usize)>,
        /// No progress bar (it only shows when stderr is a terminal)
        #[arg(long)]
        no_progress: bool,
        /// Buffer the records and print them sorted by path
        #[arg(long)]
        sorted: bool,
        /// Exit 1 if any file failed
        #[arg(long)]
        strict: bool,
        /// Also check each payload's hash (reads every byte)
        #[arg(long)]
        verify: bool,
        /// Keep an SQLite catalogue of the scan in FILE: unchanged files are
        /// answered from it (schema: `neff index schema`)
        #[arg(long, value_name = "FILE")]
        index: Option<PathBuf>,
        /// Start the --index catalogue over (whatever FILE held)
        #[arg(long, requires = "index")]
        rebuild: bool,
        /// How long to wait for an --index catalogue another process holds
        /// locked (opening it, then each batch of rows), e.g. 5s, 2m; then
        /// exit 3, the records read so far printed [default: 60s]
        #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "index")]
        busy_timeout: Option<std::time::Duration>,
    },
    /// Check header sizes and the payload hash (exit 1 if a file failed, 3
    /// if one could not be read at all)
    Verify {
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Device-memory estimate per NEFF and subgraph, and the total for the set
    Mem {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// One JSON object
        #[arg(long)]
        json: bool,
        /// Scratchpad page in MiB [default: $NEURON_SCRATCHPAD_PAGE_SIZE,
        /// else $NEURON_RT_ONE_TMPBUF_PAGE_SIZE_MB, else 64]
        #[arg(long)]
        page_mib: Option<u64>,
    },
    /// Rewrite with a raw payload, without debug-only members
    Optimize {
        file: PathBuf,
        #[arg(short, long)]
        output: PathBuf,
        /// Keep the debug-only members
        #[arg(long)]
        keep_debug: bool,
    },
    /// What differs between two NEFFs (exit 0 same, 1 differ, 2 trouble:
    /// an input that is not a NEFF; 3 an input that cannot be read)
    Diff {
        a: PathBuf,
        b: PathBuf,
        /// One JSON object
        #[arg(long)]
        json: bool,
    },
    /// The Neuron compile cache: each entry's state, and pruning
    Cache {
        #[command(subcommand)]
        what: CacheCmd,
    },
    /// About the `scan --index` catalogue
    Index {
        #[command(subcommand)]
        what: IndexCmd,
    },
    /// Print the man page (roff), generated from these definitions
    Man {
        /// Instead, write neff.1 and one page per subcommand (neff-scan.1,
        /// ...) into DIR
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Print a shell completion script: bash, zsh, fish, elvish or powershell
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

#[derive(Subcommand)]
enum CacheCmd {
    /// Every entry's state (ok, corrupt, failed, locked, incomplete, empty,
    /// unreadable, unknown) and a summary per compiler version. Exit 0 when
    /// every entry is ok, 1 when some entry is not, 3 when part of the
    /// cache could not be read
    Status {
        /// The cache [default: --cache_dir= in $NEURON_CC_FLAGS, else
        /// $NEURON_COMPILE_CACHE_URL, else /var/tmp/neuron-compile-cache]
        root: Option<PathBuf>,
        /// One JSON object per entry (NDJSON) instead of the summary:
        /// --format ndjson
        #[arg(long, conflicts_with = "format")]
        json: bool,
        /// How to print the entries (table: the summary per version)
        /// [default: table]
        #[arg(long, value_enum)]
        format: Option<format::Format>,
    },
    /// Remove the entries selected: a dry run that lists them, their bytes
    /// and what --apply will do, unless --apply. Never an entry holding a
    /// fresh lock, one that is unreadable or unknown, or one behind a link.
    /// Exit 0 when every selected entry went (or would), 1 when one was
    /// (or would be) left, 3 when part of the cache could not be read
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
        #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
        locked_older_than: Option<std::time::Duration>,
        /// Incomplete entries (a NEFF without model.done) untouched this long
        #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
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
        #[arg(long, value_name = "SIZE", value_parser = cache::parse_size)]
        max_size: Option<u64>,
        /// With --max-size: entries of the newest compiler release may go too
        #[arg(long, requires = "max_size")]
        include_current: bool,
        /// Remove them (else only list them)
        #[arg(long)]
        apply: bool,
        /// One JSON object per selected entry (NDJSON): --format ndjson
        #[arg(long, conflicts_with = "format")]
        json: bool,
        /// How to print the selected entries [default: table]
        #[arg(long, value_enum)]
        format: Option<format::Format>,
    },
}

/// A duration as people write it: `90s`, `30m`, `2h`, `7d`, `1h 30m`.
fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    humantime::parse_duration(s).map_err(|e| format!("{s:?}: {e}"))
}

#[derive(Subcommand)]
enum IndexCmd {
    /// Print the catalogue's SQL schema (run it in sqlite3 to make an
    /// empty catalogue)
    Schema,
    /// Print the SQL that folds a shard's catalogue (`scan --shard K/N
    /// --index SHARD`) into another: `neff index merge-sql s2.db | sqlite3 zoo.db`
    MergeSql { shard: String },
}

/// A failure tied to the file it concerns.
struct Failure {
    path: PathBuf,
    err: Error,
}

trait AtPath<T> {
    fn at(self, path: &Path) -> Result<T, Failure>;
}

impl<T> AtPath<T> for Result<T, Error> {
    fn at(self, path: &Path) -> Result<T, Failure> {
        self.map_err(|err| Failure {
            path: path.to_path_buf(),
            err,
        })
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_log(cli.verbose);
    if let Some(n) = cli.threads {
        neff::set_threads(n);
    }
    #[cfg(feature = "remote")]
    {
        if let Some(p) = &cli.profile {
            neff::set_aws_profile(p);
        }
        neff::set_s3_access(cli.no_sign_request, cli.requester_pays);
        if let Some(n) = cli.io_depth {
            neff::set_io_depth(n);
        }
        neff::set_remote_byte_cap(cli.max_bytes_moved);
    }
    let opts = Options::default()
        .limits(cli.caps.limits())
        .read_mode(match cli.read_mode {
            ReadModeArg::Auto => ReadMode::Auto,
            ReadModeArg::Map => ReadMode::Map,
            ReadModeArg::Read => ReadMode::Read,
        });
    match run(cli.cmd, &opts) {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            if matches!(&f.err, Error::Io(e) if e.kind() == io::ErrorKind::BrokenPipe) {
                return ExitCode::SUCCESS;
            }
            eprintln!("neff: {}: {}", shown(&f.path), one_line(&f.err));
            ExitCode::from(exit_code(&f.err))
        }
    }
}

/// An error as one line of text: control characters escaped as
/// `tar tf` escapes them, so no path or name can add a line.
fn one_line(e: &Error) -> String {
    line(&e.to_string()).into_owned()
}

/// A path as one line of text (see [`one_line`]).
/// A path as output prints it where the format escapes it (JSON) or the
/// caller does: a URL made printable ([`neff::redact_url`]), else as it is.
fn printable(p: &Path) -> String {
    #[cfg(feature = "remote")]
    if let Some(url) = p.to_str().filter(|s| neff::is_url(s)) {
        return neff::redact_url(url).into_owned();
    }
    p.display().to_string()
}

/// A URL is made printable first (its query values and userinfo hidden:
/// [`neff::redact_url`]).
fn shown(p: &Path) -> std::borrow::Cow<'_, str> {
    use std::os::unix::ffi::OsStrExt;
    #[cfg(feature = "remote")]
    if let Some(url) = p.to_str().filter(|s| neff::is_url(s)) {
        return line(&neff::redact_url(url)).into_owned().into();
    }
    one_line_bytes(p.as_os_str().as_bytes())
}

fn stdout_err(e: io::Error) -> Failure {
    Failure {
        path: PathBuf::from("<stdout>"),
        err: Error::Io(e),
    }
}

fn run(cmd: Cmd, opts: &Options) -> Result<u8, Failure> {
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    match cmd {
        Cmd::Ls {
            file,
            json,
            format,
            all,
        } => {
            let neff = Neff::open_with(&file, opts).at(&file)?;
            let format = format::chosen(format, json, format::Format::Json);
            ls(&neff, format, all, &mut out).map_err(stdout_err)?;
        }
        Cmd::Cat { file, pattern } => {
            let pattern = neff::Pattern::new(&pattern).at(&file)?;
            let neff = Neff::open_with(&file, opts).at(&file)?;
            let e = neff.find(&pattern).at(&file)?;
            neff.copy_data(e, &mut out).at(&file)?;
            // Bytes already written are then zeros from a truncated file:
            // the exit code says so.
            out.flush().map_err(stdout_err)?;
            neff.check_unchanged().at(&file)?;
        }
        Cmd::Get { file, accessor } => {
            // The collective accessors read only def.json's CC keys: skim
            // them while the walk is still going (see Options::early_cc).
            let opts =
                (*opts).early_cc(matches!(accessor, Accessor::HasCc | Accessor::CcWorldSize));
            let neff = Neff::open_with(&file, &opts).at(&file)?;
            let mut buf = Vec::new();
            let answer = accessor.write_json(&neff, &mut buf);
            neff.check_unchanged().at(&file)?;
            answer.at(&file)?;
            buf.push(b'\n');
            out.write_all(&buf).map_err(stdout_err)?;
        }
        Cmd::Info { file, json } => {
            let neff = Neff::open_with(&file, opts).at(&file)?;
            let s = neff::Summary::of(&neff);
            neff.check_unchanged().at(&file)?;
            if json {
                serde_json::to_writer(&mut out, &s).map_err(|e| stdout_err(e.into()))?;
                writeln!(out).map_err(stdout_err)?;
            } else {
                info_table(&s, &mut out).map_err(stdout_err)?;
            }
        }
        Cmd::Unpack { file, output } => {
            let neff = Neff::open_with(&file, opts).at(&file)?;
            let report = neff::unpack::unpack(&neff, &output).at(&file)?;
            neff.check_unchanged().at(&file)?;
            for w in &report.warnings {
                eprintln!("neff: {}: warning: {}", shown(&file), line(w));
            }
        }
        Cmd::Pack {
            dir,
            output,
            no_gzip,
            name,
            uuid,
            mtime,
        } => {
            let mtime = match mtime {
                Some(t) => Some(t),
                None => match std::env::var("SOURCE_DATE_EPOCH") {
                    Ok(v) => Some(v.trim().parse().map_err(|_| Failure {
                        path: dir.clone(),
                        err: Error::Usage {
                            reason: format!(
                                "SOURCE_DATE_EPOCH={v:?} is not a whole number of seconds"
                            ),
                        },
                    })?),
                    Err(_) => None,
                },
            };
            let name = name.unwrap_or_else(|| {
                std::fs::canonicalize(&dir)
                    .ok()
                    .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                    .unwrap_or_default()
            });
            let popts = neff::pack::PackOptions::default()
                .no_gzip(no_gzip)
                .name(name)
                .uuid(uuid)
                .mtime(mtime)
                .exclude(Some(output.clone()));
            let file = std::fs::File::create(&output)
                .map_err(Error::Io)
                .at(&output)?;
            let mut w = BufWriter::new(file);
            let done = neff::pack::pack_dir_to(&dir, &popts, &mut w)
                .and_then(|()| w.flush().map_err(Error::Io));
            if let Err(err) = done {
                // Leave no half-written NEFF behind.
                let _ = std::fs::remove_file(&output);
                return Err(Failure { path: dir, err });
            }
        }
        Cmd::Scan {
            paths,
            files_from,
            null,
            jobs,
            globs,
            max_depth,
            no_follow,
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
        } => {
            drop(out);
            if let Some(d) = busy_timeout {
                neff::catalog::set_busy_timeout(d);
            }
            let paths = scan::with_lists(paths, files_from.as_deref(), null)?;
            let sopts = neff::scan::ScanOptions::default()
                .open(*opts)
                .jobs(jobs)
                .shard(shard)
                .verify(verify)
                .walk(
                    neff::scan::Walk::default()
                        .globs(globs)
                        .max_depth(max_depth)
                        .follow_links(!no_follow),
                );
            sopts.walk.check().map_err(|err| Failure {
                path: "--glob".into(),
                err,
            })?;
            let how = scan::How {
                format: format::chosen(format, json, format::Format::Ndjson),
                sorted,
                strict,
                no_progress,
                index: index.as_deref().map(|db| (db, rebuild)),
            };
            return scan::run(&paths, &sopts, &how);
        }
        Cmd::Cache { what } => {
            drop(out);
            return match what {
                CacheCmd::Status { root, json, format } => {
                    cache::status(root, format::chosen(format, json, format::Format::Ndjson))
                }
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
                    json,
                    format,
                } => {
                    let mut p = neff::cache::PruneOptions::default()
                        .failed(failed)
                        .corrupt(corrupt)
                        .include_current(include_current)
                        .apply(apply);
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
                    cache::prune(
                        root,
                        &p,
                        format::chosen(format, json, format::Format::Ndjson),
                    )
                }
            };
        }
        Cmd::Index { what } => {
            let text = match what {
                IndexCmd::Schema => neff::catalog::schema_script(),
                IndexCmd::MergeSql { shard } => neff::catalog::merge_sql(&shard),
            };
            out.write_all(text.as_bytes()).map_err(stdout_err)?;
        }
        Cmd::Man { dir } => match dir {
            Some(dir) => man_pages(&dir).map_err(Error::Io).at(&dir)?,
            None => man_page(man_command())
                .render(&mut out)
                .map_err(stdout_err)?,
        },
        Cmd::Completions { shell } => {
            // Made whole first: clap_complete panics on a failed write (a
            // closed pipe, `neff completions bash | head -1`).
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "neff", &mut script);
            out.write_all(&script).map_err(stdout_err)?;
        }
        Cmd::Mem {
            files,
            json,
            page_mib,
        } => {
            drop(out);
            return tools::mem(&files, json, page_mib, opts);
        }
        Cmd::Optimize {
            file,
            output,
            keep_debug,
        } => {
            drop(out);
            return tools::optimize(&file, &output, keep_debug, opts);
        }
        Cmd::Diff { a, b, json } => {
            drop(out);
            return tools::diff(&a, &b, json, opts);
        }
        Cmd::Verify { files } => {
            // Every file checked; the worst code met: 1 for a refusal, 3
            // for a file that could not be read at all (as `ls` says it).
            let mut code = 0;
            for f in &files {
                let res = neff::verify(f, opts);
                match res {
                    Ok(()) => writeln!(out, "OK {}", shown(f)),
                    Err(e) => {
                        code = code.max(exit_code(&e));
                        writeln!(out, "FAIL {}: {}", shown(f), one_line(&e))
                    }
                }
                .map_err(stdout_err)?;
            }
            out.flush().map_err(stdout_err)?;
            return Ok(code);
        }
    }
    out.flush().map_err(stdout_err)?;
    Ok(0)
}

/// The command the man pages describe: the parser's, without the `help`
/// subcommand (it has no page of its own).
fn man_command() -> clap::Command {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    cmd
}

/// The page of `cmd` (the whole command or a subcommand), its footer
/// naming the program and version, as the top page's does.
fn man_page(cmd: clap::Command) -> clap_mangen::Man {
    clap_mangen::Man::new(cmd).source(concat!("neff ", env!("CARGO_PKG_VERSION")))
}

/// `man --dir`: neff.1 and a page per subcommand, nested ones included
/// (neff-scan.1, neff-index-schema.1, ...).
fn man_pages(dir: &Path) -> io::Result<()> {
    fn write(cmd: &clap::Command, dir: &Path) -> io::Result<()> {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            write(sub, dir)?;
        }
        man_page(cmd.clone()).generate_to(dir).map(drop)
    }
    write(&man_command(), dir)
}

fn ls(neff: &Neff, format: format::Format, all: bool, out: &mut impl Write) -> io::Result<()> {
    let shown = neff
        .entries()
        .iter()
        .filter(|e| all || e.kind == Kind::File);
    if format != format::Format::Table {
        #[derive(serde::Serialize)]
        struct Row<'a> {
            name: std::borrow::Cow<'a, str>,
            kind: &'static str,
            size: u64,
            offset: u64,
            mtime: i64,
            mode: u32,
            #[serde(skip_serializing_if = "Option::is_none")]
            link: Option<std::borrow::Cow<'a, str>>,
        }
        /// A row with every column (CSV needs them all in every row).
        #[derive(serde::Serialize)]
        struct Full<'a> {
            #[serde(flatten)]
            row: Row<'a>,
            link: Option<std::borrow::Cow<'a, str>>,
        }
        let rows = shown.map(|e| Row {
            name: neff.name_str(e),
            kind: e.kind.as_str(),
            size: e.size,
            offset: e.offset,
            mtime: e.mtime,
            mode: e.mode,
            link: neff.link(e).map(String::from_utf8_lossy),
        });
        if format == format::Format::Json {
            // One line, as it always was.
            serde_json::to_writer(&mut *out, &rows.collect::<Vec<_>>())?;
            return writeln!(out);
        }
        let mut w = format::Rows::new(format, out);
        for mut row in rows {
            if format == format::Format::Csv {
                let link = row.link.take();
                w.row(&Full { row, link })?;
            } else {
                w.row(&row)?;
            }
        }
        return w.finish().map(drop);
    }
    for e in shown {
        out.write_all(quote(neff.name(e)).as_bytes())?;
        match e.kind {
            // (An entry with an empty name prints empty, as `tar tf` does.)
            Kind::Dir if !neff.name(e).is_empty() => out.write_all(b"/")?,
            Kind::Symlink | Kind::Hardlink => {
                if let Some(l) = neff.link(e) {
                    out.write_all(b" -> ")?;
                    out.write_all(quote(l).as_bytes())?;
                }
            }
            _ => {}
        }
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// The exit code of the command-line contract (docs/CLI.md): 3 when the
/// operating system failed us (I/O, the file changed under the read, no
/// memory), 2 for usage errors, 1 for every refusal of the input.
fn exit_code(e: &Error) -> u8 {
    use neff::ErrorKind as K;
    match e.kind() {
        K::Io | K::Changed | K::OutOfMemory => 3,
        K::Usage => 2,
        _ => 1,
    }
}

fn info_table(s: &neff::Summary, out: &mut impl Write) -> io::Result<()> {
    let features = if s.features.is_empty() {
        "N/A".to_string()
    } else {
        s.features.join(", ")
    };
    let rows: [(&str, String); 16] = [
        ("Package Version", s.pkg_version.to_string()),
        ("Header Size", format!("{} (bytes)", s.header_size)),
        ("Data Size", format!("{} (bytes)", s.data_size)),
        ("Major Version", s.version_major.to_string()),
        ("Minor Version", s.version_minor.to_string()),
        ("Build Version", s.build_version.clone()),
        ("Number of Neuron cores", s.requested_tpb_count.to_string()),
        ("Hash", s.hash.clone()),
        ("UUID", s.uuid.clone()),
        ("Network Name", s.name.clone()),
        ("Enabled Features", features),
        ("Feature Bits", format!("0x{:x}", s.feature_bits)),
        ("LNC Size", s.vnc_size.to_string()),
        (
            "Payload",
            if s.compressed {
                format!("gzip, {} bytes of tar inside", s.tar_size)
            } else {
                format!("raw tar, {} bytes", s.tar_size)
            },
        ),
        ("Members", s.members.to_string()),
        ("Entries", s.entries.to_string()),
    ];
    writeln!(out, "NEFF Header:")?;
    for (k, v) in rows {
        writeln!(out, "  {:<24}{}", format!("{k}:"), line(&v))?;
    }
    if s.subgraphs.is_empty() {
        return Ok(());
    }
    let dims = |t: &neff::summary::Tensor| match &t.shape {
        Some(d) => format!(
            "[{}]",
            d.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
        ),
        None => "-".into(),
    };
    writeln!(out, "\nNEFF Nodes:")?;
    writeln!(
        out,
        "  {:<6}{:<12}{:<16}{:<28}{:>14}  {:<5}{:<16}DataType",
        "NODE", "Executor", "Name", "Variable", "Size", "Type", "Shape"
    )?;
    for (i, sg) in s.subgraphs.iter().enumerate() {
        writeln!(out, "  {:<6}{:<12}{}", i, "NeuronCore", line(&sg.name))?;
        if let Some(e) = &sg.error {
            writeln!(out, "  {:<34}(unreadable: {})", "", line(e))?;
        }
        for (kind, list) in [("IN", &sg.inputs), ("OUT", &sg.outputs)] {
            for t in list {
                let size = t.size.map_or("-".into(), |s| s.to_string());
                writeln!(
                    out,
                    "  {:<34}{:<28}{:>14}  {:<5}{:<16}{}",
                    "",
                    line(&t.name),
                    size,
                    kind,
                    dims(t),
                    line(t.dtype.as_deref().unwrap_or("-"))
                )?;
            }
        }
        if !sg.features.is_empty() {
            let features = sg.features.join(", ");
            writeln!(out, "  {:<34}features: {}", "", line(&features))?;
        }
    }
    Ok(())
}
