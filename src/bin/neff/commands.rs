//! The commands that read or write one NEFF (`ls`, `cat`, `get`, `info`,
//! `unpack`, `pack`, `verify`) and those that print what the program says
//! of itself (`index`, `man`, `completions`).

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use clap::{Args, CommandFactory};
use neff::accessors::Accessor;
use neff::{Error, Kind, Neff, Options};

use crate::format::Format;
use crate::quote::{one_line as line, quote};
use crate::{exit_code, one_line, shown, stdout_err, AtPath, Cli, Failure, IndexCmd};

// The arguments of `neff pack` (the variant's doc comment is its help).
#[derive(Args)]
pub(crate) struct PackArgs {
    pub(crate) dir: PathBuf,
    #[arg(short, long)]
    pub(crate) output: PathBuf,
    /// Raw tar, package version 1, SHA-256
    #[arg(long)]
    pub(crate) no_gzip: bool,
    /// Model name in the header [default: the directory's name]
    #[arg(long)]
    pub(crate) name: Option<String>,
    /// UUID in the header, 32 hex digits [default: random v4]
    #[arg(long, value_parser = crate::parse_uuid)]
    pub(crate) uuid: Option<[u8; 16]>,
    /// Every entry's mtime [default: $SOURCE_DATE_EPOCH, else the files']
    #[arg(long)]
    pub(crate) mtime: Option<u64>,
}

/// Standard output, locked, behind a 64 KiB buffer.
fn stdout() -> BufWriter<io::StdoutLock<'static>> {
    BufWriter::with_capacity(1 << 16, io::stdout().lock())
}

/// `neff ls`: the members of `file`, in `format`.
pub(crate) fn ls(file: &Path, format: Format, all: bool, opts: &Options) -> Result<u8, Failure> {
    let mut out = stdout();
    let neff = Neff::open_with(file, opts).at(file)?;
    write_ls(&neff, format, all, &mut out).map_err(stdout_err)?;
    out.flush().map_err(stdout_err)?;
    Ok(0)
}

/// `neff cat`: the bytes of the first member matching `pattern`.
pub(crate) fn cat(file: &Path, pattern: &str, opts: &Options) -> Result<u8, Failure> {
    let mut out = stdout();
    let pattern = neff::Pattern::new(pattern).at(file)?;
    let neff = Neff::open_with(file, opts).at(file)?;
    let e = neff.find(&pattern).at(file)?;
    neff.copy_data(e, &mut out).at(file)?;
    // Bytes already written are then zeros from a truncated file:
    // the exit code says so.
    out.flush().map_err(stdout_err)?;
    neff.check_unchanged().at(file)?;
    Ok(0)
}

/// `neff get`: one accessor's answer as a line of JSON.
pub(crate) fn get(file: &Path, accessor: Accessor, opts: &Options) -> Result<u8, Failure> {
    let mut out = stdout();
    // The collective accessors read only def.json's CC keys: skim
    // them while the walk is still going (see Options::early_cc).
    let opts = (*opts).early_cc(matches!(accessor, Accessor::HasCc | Accessor::CcWorldSize));
    let neff = Neff::open_with(file, &opts).at(file)?;
    let mut buf = Vec::new();
    let answer = accessor.write_json(&neff, &mut buf);
    neff.check_unchanged().at(file)?;
    answer.at(file)?;
    buf.push(b'\n');
    out.write_all(&buf).map_err(stdout_err)?;
    out.flush().map_err(stdout_err)?;
    Ok(0)
}

/// `neff info`: the summary, as a table or one JSON object.
pub(crate) fn info(file: &Path, json: bool, opts: &Options) -> Result<u8, Failure> {
    let mut out = stdout();
    let neff = Neff::open_with(file, opts).at(file)?;
    let s = neff::summary::Summary::of(&neff);
    neff.check_unchanged().at(file)?;
    if json {
        serde_json::to_writer(&mut out, &s).map_err(|e| stdout_err(e.into()))?;
        writeln!(out).map_err(stdout_err)?;
    } else {
        info_table(&s, &mut out).map_err(stdout_err)?;
    }
    out.flush().map_err(stdout_err)?;
    Ok(0)
}

/// `neff unpack`: every member under `output`; warnings on stderr.
pub(crate) fn unpack(file: &Path, output: &Path, opts: &Options) -> Result<u8, Failure> {
    let neff = Neff::open_with(file, opts).at(file)?;
    let report = neff::unpack::unpack(&neff, output).at(file)?;
    neff.check_unchanged().at(file)?;
    for w in &report.warnings {
        eprintln!("neff: {}: warning: {}", shown(file), line(w));
    }
    Ok(0)
}

/// `neff pack`: a NEFF of `dir`; no output file is left on failure.
pub(crate) fn pack(args: PackArgs) -> Result<u8, Failure> {
    let PackArgs {
        dir,
        output,
        no_gzip,
        name,
        uuid,
        mtime,
    } = args;
    let mtime = match mtime {
        Some(t) => Some(t),
        None => source_date_epoch(&dir)?,
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
    let done =
        neff::pack::pack_dir_to(&dir, &popts, &mut w).and_then(|()| w.flush().map_err(Error::Io));
    if let Err(err) = done {
        // Leave no half-written NEFF behind.
        let _ = std::fs::remove_file(&output);
        return Err(Failure { path: dir, err });
    }
    Ok(0)
}

/// `$SOURCE_DATE_EPOCH` if set; a value that is not whole seconds is a
/// usage error, reported at `dir`.
fn source_date_epoch(dir: &Path) -> Result<Option<u64>, Failure> {
    match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(v) => Ok(Some(v.trim().parse().map_err(|_| Failure {
            path: dir.to_path_buf(),
            err: Error::Usage {
                reason: format!("SOURCE_DATE_EPOCH={v:?} is not a whole number of seconds"),
            },
        })?)),
        Err(_) => Ok(None),
    }
}

/// `neff verify`: a line per file; the worst code met.
pub(crate) fn verify(files: &[PathBuf], opts: &Options) -> Result<u8, Failure> {
    let mut out = stdout();
    // Every file checked; the worst code met: 1 for a refusal, 3
    // for a file that could not be read at all (as `ls` says it).
    let mut code = 0;
    for f in files {
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
    Ok(code)
}

/// `neff index`: the catalogue's SQL (its schema, or a shard's merge).
pub(crate) fn index(what: &IndexCmd) -> Result<u8, Failure> {
    let mut out = stdout();
    let text = match what {
        IndexCmd::Schema => neff::catalog::schema_script(),
        IndexCmd::MergeSql { shard } => neff::catalog::merge_sql(shard),
    };
    out.write_all(text.as_bytes()).map_err(stdout_err)?;
    out.flush().map_err(stdout_err)?;
    Ok(0)
}

/// `neff man`: the page on stdout, or every page written into `dir`.
pub(crate) fn man(dir: Option<&Path>) -> Result<u8, Failure> {
    match dir {
        Some(dir) => man_pages(dir).map_err(Error::Io).at(dir)?,
        None => {
            let mut out = stdout();
            man_page(man_command())
                .render(&mut out)
                .map_err(stdout_err)?;
            out.flush().map_err(stdout_err)?;
        }
    }
    Ok(0)
}

/// `neff completions`: the script for `shell`.
pub(crate) fn completions(shell: clap_complete::Shell) -> Result<u8, Failure> {
    let mut out = stdout();
    // Made whole first: clap_complete panics on a failed write (a
    // closed pipe, `neff completions bash | head -1`).
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "neff", &mut script);
    out.write_all(&script).map_err(stdout_err)?;
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

/// Writes the members `ls` lists, in `format`.
fn write_ls(neff: &Neff, format: Format, all: bool, out: &mut impl Write) -> io::Result<()> {
    let shown = neff
        .entries()
        .iter()
        .filter(|e| all || e.kind == Kind::File);
    if format != Format::Table {
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
        if format == Format::Json {
            // One line, as it always was.
            serde_json::to_writer(&mut *out, &rows.collect::<Vec<_>>())?;
            return writeln!(out);
        }
        let mut w = crate::format::Rows::new(format, out);
        for mut row in rows {
            if format == Format::Csv {
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

/// The `info` table: the header's fields, then each subgraph's tensors.
fn info_table(s: &neff::summary::Summary, out: &mut impl Write) -> io::Result<()> {
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
