//! The `neff` command: a thin client of the `neff` library.
//!
//! The contract (commands, JSON keys, exit codes) is `docs/CLI.md`: 0 ok,
//! 1 refused, 2 usage, 3 I/O. Refusals print one line,
//! `neff: <path>: <reason>`, and nothing on stdout.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

mod cache;
mod cache_sync;
mod commands;
mod explain;
mod format;
mod quote;
mod scan;
mod tools;
use neff::accessors::Accessor;
use neff::{Error, Limits, Options, ReadMode};
use quote::{one_line as line, one_line_bytes};

/// The command's allocator, chosen here rather than by a setting users
/// must know: glibc gives each of a bucket scan's threads (`--io-depth`
/// workers, the runtime's) an arena that keeps what the thread freed, so a
/// scan's peak RSS grew with its length; jemalloc's few arenas give pages
/// back as they decay (PERF.md `bucket-scale`). The library chooses none:
/// an embedder (the Python module) keeps its own.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

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
    after_help = EXIT_CODES,
    // The global options (caps, read mode, threads, remote I/O) after each
    // command's own in its help (and before `--help`), in the order declared
    // here: numbered from the start, as a command's own are, they fell among
    // a command's options once it had more of them than that number.
    next_display_order = 100
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
    /// requests, not on a core), entries a cache sync copies at once
    /// [default: 32]
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
    Pack(commands::PackArgs),
    /// Read every *.neff under PATHs in parallel: one record per NEFF
    Scan(scan::ScanArgs),
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
        what: cache::CacheCmd,
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

/// The command line parsed, or clap's usage error printed as the rest of
/// the tool prints a URL (a password, a query's values hidden:
/// [`neff::redact_urls_in`]) and the process ended with its code (2).
fn parse_args() -> Cli {
    match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            let text = e.render().to_string();
            #[cfg(feature = "remote")]
            let text = neff::redact_urls_in(&text);
            eprint!("{text}");
            std::process::exit(e.exit_code())
        }
    }
}

fn main() -> ExitCode {
    let cli = parse_args();
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
            eprintln!("neff: {}: {}", shown(&f.path), printable_error(&f.err));
            ExitCode::from(exit_code(&f.err))
        }
    }
}

/// An error as one line of text: control characters escaped as
/// `tar tf` escapes them, so no path or name can add a line.
fn one_line(e: &Error) -> String {
    line(&e.to_string()).into_owned()
}

/// An error as `main` prints it: one line ([`one_line`]), any URL in it
/// made printable ([`neff::redact_urls_in`]) whatever put it there (a
/// usage error quoting an argument, a message from a library).
fn printable_error(e: &Error) -> String {
    let text = one_line(e);
    #[cfg(feature = "remote")]
    let text = neff::redact_urls_in(&text).into_owned();
    text
}

/// A path as output prints it where the format escapes it (JSON) or the
/// caller does: a URL made printable ([`neff::redact_url`]), else as it is.
fn printable(p: &Path) -> String {
    neff::Source::of(p).shown()
}

/// A URL is made printable first (its query values and userinfo hidden:
/// [`neff::redact_url`]).
fn shown(p: &Path) -> std::borrow::Cow<'_, str> {
    use std::os::unix::ffi::OsStrExt;
    let source = neff::Source::of(p);
    if source.is_remote() {
        return line(&source.shown()).into_owned().into();
    }
    one_line_bytes(p.as_os_str().as_bytes())
}

fn stdout_err(e: io::Error) -> Failure {
    Failure {
        path: PathBuf::from("<stdout>"),
        err: Error::Io(e),
    }
}

/// Runs one command: its exit code, or the failure `main` reports.
fn run(cmd: Cmd, opts: &Options) -> Result<u8, Failure> {
    match cmd {
        Cmd::Ls {
            file,
            json,
            format,
            all,
        } => commands::ls(
            &file,
            format::chosen(format, json, format::Format::Json),
            all,
            opts,
        ),
        Cmd::Cat { file, pattern } => commands::cat(&file, &pattern, opts),
        Cmd::Get { file, accessor } => commands::get(&file, accessor, opts),
        Cmd::Info { file, json } => commands::info(&file, json, opts),
        Cmd::Unpack { file, output } => commands::unpack(&file, &output, opts),
        Cmd::Pack(args) => commands::pack(args),
        Cmd::Scan(args) => scan::command(args, opts),
        Cmd::Verify { files } => commands::verify(&files, opts),
        Cmd::Mem {
            files,
            json,
            page_mib,
        } => tools::mem(&files, json, page_mib, opts),
        Cmd::Optimize {
            file,
            output,
            keep_debug,
        } => tools::optimize(&file, &output, keep_debug, opts),
        Cmd::Diff { a, b, json } => tools::diff(&a, &b, json, opts),
        Cmd::Cache { what } => cache::command(what),
        Cmd::Index { what } => commands::index(&what),
        Cmd::Man { dir } => commands::man(dir.as_deref()),
        Cmd::Completions { shell } => commands::completions(shell),
    }
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
