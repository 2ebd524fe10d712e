//! The module tree follows the data's path (docs/ARCHITECTURE.md):
//! header → payload → tar → select → json → reader → accessors, on a
//! foundation (error, limits, map, threads), with the tasks beside the path
//! (summary, verify, scan, catalog, pack, unpack, mem, optimize, diff).
//! No module may import one above it: this test reads every source file of
//! the library and fails on a `crate::` path that reaches up.
//!
//! Unit tests (`#[cfg(test)] mod tests`) may use anything: a test of the tar
//! walk may build its archive with `pack`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Each top-level module and its rank: a module may import only modules of
/// a lower rank (and itself). Tasks beside the path rank above it; those
/// built on other tasks rank above those.
const RANKS: &[(&str, u32)] = &[
    ("error", 0),
    ("limits", 0),
    ("map", 1),
    ("threads", 1),
    // A source of bytes, as map is: remote objects read by range.
    ("remote", 1),
    ("header", 2),
    ("payload", 3),
    ("tar", 4),
    ("select", 5),
    ("json", 6),
    ("reader", 7),
    ("accessors", 8),
    // Beside the path.
    ("summary", 9),
    ("verify", 9),
    ("mem", 9),
    ("optimize", 9),
    // The compile cache: entries judged by reading their NEFFs.
    ("cache", 9),
    ("unpack", 9),
    ("pack", 10),
    ("scan", 10),
    ("diff", 11),
    ("catalog", 11),
];

/// Not layers: the crate root re-exports everything, and the fuzz entry
/// points (feature `fuzzing`) drive every layer from outside.
const OUTSIDE: &[&str] = &["lib", "fuzzing"];

fn rank(module: &str) -> Option<u32> {
    RANKS.iter().find(|(m, _)| *m == module).map(|&(_, r)| r)
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            if p.file_name().unwrap() != "bin" {
                sources(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top-level module a source file belongs to (`src/tar/index.rs` → `tar`).
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_str()
        .unwrap();
    first.trim_end_matches(".rs").to_string()
}

/// The top-level modules named by `crate::` paths in `code`, with the line
/// each is on: `crate::tar::Index`, and each item of `use crate::{a, b::c}`.
fn imports(code: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let t = line.trim_start();
        if t.starts_with("//") {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                // `use crate::{a::X, b, c::{..}}` on one line (rustfmt
                // splits long groups over lines: handled below).
                let end = group.find('}').unwrap_or(group.len());
                for item in group[..end].split(',') {
                    let name: String = item
                        .trim()
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    if !name.is_empty() {
                        out.push((name, n + 1));
                    }
                }
            } else {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                out.push((name, n + 1));
            }
        }
    }
    // Multi-line groups: `use crate::{` then one item per line.
    let lines: Vec<&str> = code.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim_end().ends_with("crate::{") {
            i += 1;
            while i < lines.len() && !lines[i].trim_start().starts_with('}') {
                let name: String = lines[i]
                    .trim()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    out.push((name, i + 1));
                }
                i += 1;
            }
        }
        i += 1;
    }
    out
}

/// `code` without its unit tests: everything from `#[cfg(test)]` followed
/// by `mod tests` on.
fn without_tests(code: &str) -> &str {
    let mut at = 0;
    for line in code.split_inclusive('\n') {
        if line.trim() == "#[cfg(test)]"
            && code[at + line.len()..]
                .trim_start()
                .starts_with("mod tests")
        {
            return &code[..at];
        }
        at += line.len();
    }
    code
}

#[test]
fn no_module_imports_one_above_it_on_the_data_path() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    let mut faults = Vec::new();
    let mut seen = BTreeSet::new();
    for f in &files {
        let module = module_of(&src, f);
        if OUTSIDE.contains(&module.as_str()) {
            continue;
        }
        seen.insert(module.clone());
        let own = rank(&module).unwrap_or_else(|| {
            panic!(
                "{}: module {module} has no rank in tests/layering.rs",
                f.display()
            )
        });
        let code = std::fs::read_to_string(f).unwrap();
        for (target, line) in imports(without_tests(&code)) {
            if target == module {
                continue;
            }
            match rank(&target) {
                Some(r) if r < own => {}
                Some(r) => faults.push(format!(
                    "{}:{line}: {module} (rank {own}) imports {target} (rank {r})",
                    f.display()
                )),
                // `crate::Error` and other re-exports at the root are the
                // same items as their modules'; name the module instead.
                None => faults.push(format!(
                    "{}:{line}: {module} names crate::{target}: use the defining module's path",
                    f.display()
                )),
            }
        }
    }
    assert!(
        faults.is_empty(),
        "imports that reach up the data path:\n{}",
        faults.join("\n")
    );
    let ranked: BTreeSet<String> = RANKS.iter().map(|(m, _)| m.to_string()).collect();
    let unused: Vec<_> = ranked.difference(&seen).collect();
    assert!(
        unused.is_empty(),
        "ranked modules with no source: {unused:?}"
    );
}

#[test]
fn the_checker_sees_single_grouped_and_multi_line_imports() {
    let code = "use crate::tar::Index;\nuse crate::{json::Json, select};\nuse crate::{\n    pack::gzip,\n    map,\n};\n// crate::scan in a comment\nfn f() { crate::summary::of(); }\n#[cfg(test)]\nmod tests {\n    use crate::diff;\n}\n";
    let got: Vec<String> = imports(without_tests(code))
        .into_iter()
        .map(|(m, _)| m)
        .collect();
    assert_eq!(got, ["tar", "json", "select", "summary", "pack", "map"]);
}
