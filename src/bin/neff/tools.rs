//! Output of `neff mem`, `neff optimize` and `neff diff`: the library
//! computes, this module prints (a table or one JSON object) and picks the
//! exit code. Names and paths in text output are escaped ([`quote_str`]).

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::quote::{one_line, quote_str};
use neff::mem::{self, human, Estimate, Total};
use neff::{Error, Neff, Options};
use rayon::prelude::*;
use serde::Serialize;

use super::{stdout_err, AtPath, Failure};

#[derive(Serialize)]
struct MemNeff<'a> {
    path: String,
    /// Page-rounded scratchpad of the graph (Σ over its cores).
    scratchpad: u64,
    persistent: u64,
    #[serde(flatten)]
    estimate: &'a Estimate,
}

#[derive(Serialize)]
struct MemReport<'a> {
    page_bytes: u64,
    neffs: Vec<MemNeff<'a>>,
    total: &'a Total,
}

/// `neff mem FILE... [--json] [--page-mib N]`.
pub fn mem(
    files: &[PathBuf],
    json: bool,
    page_mib: Option<u64>,
    opts: &Options,
) -> Result<u8, Failure> {
    let page = mem::page_bytes(page_mib, |k| std::env::var(k).ok()).at(Path::new("neff mem"))?;
    let estimate = |scratch: &mut neff::Scratch, f: &PathBuf| {
        // Reused buffers per worker, as `scan` does for a zoo.
        let n = Neff::open_scratch(f, opts, scratch).at(f)?;
        let e = mem::estimate(&n).at(f);
        n.recycle(scratch);
        e
    };
    let estimates: Vec<Result<Estimate, Failure>> = if files.len() == 1 {
        // One file is read outside the pool, where its payload may inflate
        // on every core (a pool's worker takes its pool to be busy).
        files
            .iter()
            .map(|f| estimate(&mut neff::Scratch::default(), f))
            .collect()
    } else {
        files
            .par_iter()
            .map_init(neff::Scratch::default, estimate)
            .collect()
    };
    let estimates: Vec<Estimate> = estimates.into_iter().collect::<Result<_, _>>()?;
    let first = files
        .first()
        .map_or(Path::new("neff mem"), PathBuf::as_path);
    let total = Total::of(&estimates, page).at(first)?;
    let mut neffs = Vec::with_capacity(files.len());
    for ((f, e), &s) in files.iter().zip(&estimates).zip(&total.graph_scratchpads) {
        neffs.push(MemNeff {
            path: crate::printable(f),
            scratchpad: s,
            persistent: e.persistent().at(f)?,
            estimate: e,
        });
    }
    let report = MemReport {
        page_bytes: page,
        neffs,
        total: &total,
    };
    let mut out = BufWriter::new(io::stdout().lock());
    if json {
        serde_json::to_writer(&mut out, &report).map_err(|e| stdout_err(e.into()))?;
        writeln!(out).map_err(stdout_err)?;
    } else {
        mem_table(&report, &mut out).map_err(stdout_err)?;
    }
    out.flush().map_err(stdout_err)?;
    Ok(0)
}

fn mem_table(r: &MemReport<'_>, out: &mut impl Write) -> io::Result<()> {
    let row = |out: &mut dyn Write, name: &str, cols: [String; 5]| {
        writeln!(
            out,
            "  {:<22}{:>14}{:>14}{:>14}{:>14}{:>14}",
            name, cols[0], cols[1], cols[2], cols[3], cols[4]
        )
    };
    for n in &r.neffs {
        writeln!(out, "{}", quote_str(&n.path))?;
        row(
            out,
            "subgraph",
            ["scratchpad", "code", "constants", "dma rings", "persistent"].map(String::from),
        )?;
        for sg in &n.estimate.subgraphs {
            let p = sg
                .code
                .saturating_add(sg.constants)
                .saturating_add(sg.dma_rings);
            row(
                out,
                &quote_str(&sg.name),
                [
                    human(sg.scratchpad),
                    human(sg.code),
                    human(sg.constants),
                    human(sg.dma_rings),
                    human(p),
                ],
            )?;
            let areas: Vec<String> = sg
                .scratchpad_areas
                .iter()
                .map(|(a, b)| format!("{} {}", quote_str(a), human(*b)))
                .collect();
            if !areas.is_empty() {
                writeln!(out, "  {:<22}areas: {}", "", areas.join(", "))?;
            }
            for m in &sg.missing_engines {
                writeln!(out, "  {:<22}missing engine file {}", "", quote_str(m))?;
            }
        }
        writeln!(
            out,
            "  {:<22}{:>14}{:>14}{:>14}{:>14}{:>14}",
            "graph (paged)",
            human(n.scratchpad),
            "",
            "",
            "",
            human(n.persistent)
        )?;
        writeln!(
            out,
            "  inputs: {} ({})",
            n.estimate.inputs.len(),
            human(n.estimate.input_bytes)
        )?;
    }
    let t = r.total;
    writeln!(
        out,
        "Total for {} graph(s), page {}:",
        t.graphs,
        human(t.page_bytes)
    )?;
    for (k, v) in [
        ("scratchpad (max)", t.max_scratchpad),
        ("persistent (sum)", t.persistent),
        ("runtime fixed", t.runtime_fixed),
        ("runtime per graph", t.runtime_graphs),
        ("total", t.total),
    ] {
        writeln!(out, "  {k:<22}{:>14}", human(v))?;
    }
    Ok(())
}

/// `neff optimize FILE -o OUT [--keep-debug]`: written to a temporary file
/// next to OUT and renamed over it, so that OUT is never half-written (and
/// may be FILE itself).
pub fn optimize(
    file: &Path,
    output: &Path,
    keep_debug: bool,
    opts: &Options,
) -> Result<u8, Failure> {
    // Rewriting the tar needs all of it: inflated whole, whatever its size.
    let mut whole = *opts;
    whole.limits.inflate_budget = u64::MAX;
    let n = Neff::open_with(file, &whole).at(file)?;
    let dir = match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let base = output
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    let tmp = dir.join(format!(".{base}.optimize-{}", std::process::id()));
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(Error::Io)
        .at(output)?;
    let mut w = BufWriter::with_capacity(1 << 20, f);
    let o = neff::optimize::OptimizeOptions::default().keep_debug(keep_debug);
    let done = neff::optimize::optimize_to(&n, &o, &mut w)
        .and_then(|_| w.flush().map_err(Error::Io))
        .and_then(|()| std::fs::rename(&tmp, output).map_err(Error::Io));
    if let Err(err) = done {
        let _ = std::fs::remove_file(&tmp);
        return Err(Failure {
            path: output.to_path_buf(),
            err,
        });
    }
    Ok(0)
}

/// `neff diff A B [--json]`: exit 0 same, 1 differ.
/// `neff diff`: 0 same, 1 differ; as diff(1), 2 for trouble (an input
/// that is not a NEFF, or that `diff` cannot compare), never "differ"; 3
/// for an input that cannot be read.
pub fn diff(a: &Path, b: &Path, json: bool, opts: &Options) -> Result<u8, Failure> {
    let compared = (|| {
        let na = Neff::open_with(a, opts).at(a)?;
        let nb = Neff::open_with(b, opts).at(b)?;
        neff::diff::diff(&na, &nb).at(if nb.changed() { b } else { a })
    })();
    let d = match compared {
        Ok(d) => d,
        Err(f) if crate::exit_code(&f.err) == 3 => return Err(f),
        Err(f) => {
            eprintln!(
                "neff: {}: {}",
                crate::shown(&f.path),
                crate::one_line(&f.err)
            );
            return Ok(2);
        }
    };
    let mut out = BufWriter::new(io::stdout().lock());
    if json {
        serde_json::to_writer(&mut out, &d).map_err(|e| stdout_err(e.into()))?;
        writeln!(out).map_err(stdout_err)?;
    } else {
        diff_text(&d, &mut out).map_err(stdout_err)?;
    }
    out.flush().map_err(stdout_err)?;
    Ok(u8::from(!d.same))
}

fn v(x: &serde_json::Value) -> String {
    one_line(&x.to_string()).into_owned()
}

fn opt(x: Option<u64>) -> String {
    x.map_or("-".into(), |n| n.to_string())
}

fn diff_text(d: &neff::diff::Diff, out: &mut impl Write) -> io::Result<()> {
    for c in &d.header {
        writeln!(out, "header {}: {} -> {}", c.field, v(&c.a), v(&c.b))?;
    }
    let m = &d.members;
    for x in &m.removed {
        writeln!(out, "removed {} ({} bytes)", quote_str(&x.name), x.size)?;
    }
    for x in &m.added {
        writeln!(out, "added {} ({} bytes)", quote_str(&x.name), x.size)?;
    }
    for x in &m.changed {
        writeln!(
            out,
            "changed {} ({} -> {} bytes, sha256 {:.12} -> {:.12})",
            quote_str(&x.name),
            x.size_a,
            x.size_b,
            x.sha256_a,
            x.sha256_b
        )?;
    }
    for x in &d.vars.removed {
        writeln!(
            out,
            "var removed {}: {} ({} bytes)",
            quote_str(&x.member),
            quote_str(&x.name),
            opt(x.size)
        )?;
    }
    for x in &d.vars.added {
        writeln!(
            out,
            "var added {}: {} ({} bytes)",
            quote_str(&x.member),
            quote_str(&x.name),
            opt(x.size)
        )?;
    }
    for x in &d.vars.resized {
        writeln!(
            out,
            "var resized {}: {} {} -> {} bytes",
            quote_str(&x.member),
            quote_str(&x.name),
            opt(x.a),
            opt(x.b)
        )?;
    }
    for x in &d.io {
        writeln!(
            out,
            "io {}: {} {} {} -> {}",
            quote_str(&x.member),
            quote_str(&x.name),
            x.field,
            v(&x.a),
            v(&x.b)
        )?;
    }
    for x in &d.cc {
        writeln!(
            out,
            "cc {}: {} {} -> {}",
            quote_str(&x.member),
            quote_str(&x.field),
            v(&x.a),
            v(&x.b)
        )?;
    }
    for x in &d.kelf {
        writeln!(
            out,
            "kelf {}: {} {} -> {}",
            quote_str(&x.member),
            x.field,
            v(&x.a),
            v(&x.b)
        )?;
    }
    for x in &d.alias {
        writeln!(
            out,
            "alias {}: {} {} -> {}",
            quote_str(&x.member),
            quote_str(&x.name),
            v(&x.a),
            v(&x.b)
        )?;
    }
    for c in &d.accessors {
        writeln!(out, "get {}: {} -> {}", c.field, v(&c.a), v(&c.b))?;
    }
    Ok(())
}
