//! The module tree follows the data's path (docs/ARCHITECTURE.md):
//! header → payload → tar → select → json → reader → accessors, on a
//! foundation (error, limits, pool, map), with the tasks beside the path
//! (summary, verify, scan, catalog, pack, unpack, mem, optimize, diff).
//! No module may import one above it: this test reads every source file of
//! the library and fails on a `crate::` path that reaches up.
//!
//! Unit tests written inline (`#[cfg(test)] mod tests { .. }`) may use
//! anything: a test of the tar walk may build its archive with `pack`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each top-level module and its rank: a module may import only modules of
/// a lower rank (and itself). Tasks beside the path rank above it; those
/// built on other tasks rank above those.
pub(crate) const RANKS: &[(&str, u32)] = &[
    ("error", 0),
    ("limits", 0),
    // Where work runs: pools, their one size, helper threads.
    ("pool", 0),
    // The parts a range is read in: a shape, of no source.
    ("parts", 0),
    ("map", 1),
    // A source of bytes, as map is: remote objects read by range.
    ("remote", 1),
    // What a path names (a local file, a remote object or prefix),
    // decided once, and how it is printed (a URL's secrets hidden).
    ("source", 2),
    // What a walk looked at (the directories walked, the globs and
    // depth): scan's and the catalogue's, built on nothing of the path.
    ("places", 2),
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

/// Not layers: the crate root sits above every layer (it declares and
/// re-exports them; a module naming an item of the root's is refused
/// here, as a `crate::` path to no ranked module, and by the circle test
/// below), and the fuzz entry points (feature `fuzzing`) drive every layer
/// from outside.
const OUTSIDE: &[&str] = &["lib", "fuzzing"];

pub(crate) fn rank(module: &str) -> Option<u32> {
    RANKS.iter().find(|(m, _)| *m == module).map(|&(_, r)| r)
}

pub(crate) fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
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

/// `code` without its unit tests written inline: a `#[cfg(test)]` line,
/// then `mod tests {`, up to the `}` that closes it (rustfmt sets it at the
/// indent of the `mod` line). A file whose tests are out of line
/// (`#[cfg(test)] mod tests;`, their own file) is kept whole, as is
/// anything after an inline block: only the tests are left out.
fn without_tests(code: &str) -> String {
    let lines: Vec<&str> = code.split_inclusive('\n').collect();
    let mut out = String::with_capacity(code.len());
    let mut i = 0;
    while i < lines.len() {
        let next = lines[i + 1..].iter().position(|l| !l.trim().is_empty());
        let opens = next
            .map(|n| i + 1 + n)
            .filter(|&m| lines[i].trim() == "#[cfg(test)]" && lines[m].trim() == "mod tests {");
        let Some(m) = opens else {
            out.push_str(lines[i]);
            i += 1;
            continue;
        };
        let indent = &lines[m][..lines[m].len() - lines[m].trim_start().len()];
        let close = format!("{indent}}}");
        let end = lines[m + 1..]
            .iter()
            .position(|l| l.trim_end() == close)
            .map_or(lines.len(), |k| m + 1 + k + 1);
        i = end;
    }
    out
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
        for (target, line) in imports(&without_tests(&code)) {
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
    let got: Vec<String> = imports(&without_tests(code))
        .into_iter()
        .map(|(m, _)| m)
        .collect();
    assert_eq!(got, ["tar", "json", "select", "summary", "pack", "map"]);
}

/// The module path of a source file: `src/tar/index/mod.rs` → `tar::index`,
/// `src/lib.rs` → the root (empty).
pub(crate) fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut path: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_str().unwrap().to_string())
        .collect();
    if matches!(path.last().map(String::as_str), Some("mod" | "lib")) {
        path.pop();
    }
    path
}

/// Expands a use tree (`a::{b, c::{d, e}}`) into its paths, each after
/// `prefix`.
fn expand_use(prefix: &[String], tree: &str, out: &mut Vec<Vec<String>>) {
    let tree = tree.trim();
    if let Some(inner) = tree.strip_prefix('{') {
        let inner = &inner[..inner.rfind('}').unwrap_or(inner.len())];
        let (mut depth, mut start) = (0, 0);
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand_use(prefix, &inner[start..i], out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        expand_use(prefix, &inner[start..], out);
        return;
    }
    let ident: String = tree
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    if ident.is_empty() {
        if !prefix.is_empty() {
            out.push(prefix.to_vec());
        }
        return;
    }
    let mut next = prefix.to_vec();
    next.push(ident.clone());
    match tree[ident.len()..].trim_start().strip_prefix("::") {
        Some(rest) => expand_use(&next, rest, out),
        None => out.push(next),
    }
}

/// Every path `code` names that starts at `crate`, `super` or `self`, or
/// at a child module of its own (`use child::X`): `use` trees expanded,
/// and paths written inline (`crate::payload::gzip::corrupt(..)`).
fn named_paths(code: &str, children: &BTreeSet<String>) -> Vec<Vec<String>> {
    let code: String = code
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = Vec::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("use ") {
        let before = rest[..at].chars().last();
        rest = &rest[at + 4..];
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let end = rest.find(';').unwrap_or(rest.len());
        let tree = rest[..end].trim();
        let root: String = tree
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if ["crate", "super", "self"].contains(&root.as_str()) || children.contains(&root) {
            let mut paths = Vec::new();
            expand_use(&[], tree, &mut paths);
            for p in paths {
                let mut p = p;
                if children.contains(&root) {
                    p.insert(0, "self".into());
                }
                out.push(p);
            }
        }
    }
    for key in ["crate::", "super::"] {
        let mut rest = code.as_str();
        while let Some(at) = rest.find(key) {
            let before = rest[..at].chars().last();
            let tail = &rest[at..];
            rest = &rest[at + key.len()..];
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let path: Vec<String> = tail
                .split("::")
                .map(|s| {
                    s.chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect::<String>()
                })
                .take_while(|s| !s.is_empty())
                .collect();
            // `super::{a, b}` is a use tree, expanded above: alone, the
            // `super` it starts with names no import.
            if path.len() > 1 {
                out.push(path);
            }
        }
    }
    out
}

/// The module a path written in module `from` leads to: the deepest module
/// it passes through (`super::block::Block` in `tar::sparse` → `tar::block`).
fn resolve(from: &[String], path: &[String], modules: &BTreeSet<Vec<String>>) -> Vec<String> {
    let mut at = from.to_vec();
    let mut segs = path.iter().peekable();
    match segs.peek().map(|s| s.as_str()) {
        Some("crate") => {
            at.clear();
            segs.next();
        }
        _ => {
            while let Some(s) = segs.peek() {
                match s.as_str() {
                    "super" => {
                        at.pop();
                    }
                    "self" => {}
                    _ => break,
                }
                segs.next();
            }
        }
    }
    for s in segs {
        let mut next = at.clone();
        next.push(s.clone());
        if !modules.contains(&next) {
            break;
        }
        at = next;
    }
    at
}

/// A cycle in `edges` (module → modules it imports), if there is one, as
/// the modules along it.
fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        m: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(m.to_string(), 1);
        stack.push(m.to_string());
        for n in edges.get(m).into_iter().flatten() {
            match state.get(n.as_str()) {
                Some(1) => {
                    let from = stack.iter().position(|s| s == n).unwrap();
                    let mut cycle = stack[from..].to_vec();
                    cycle.push(n.clone());
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(n, edges, state, stack) {
                        return Some(c);
                    }
                }
            }
        }
        stack.pop();
        state.insert(m.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for m in edges.keys() {
        if !state.contains_key(m) {
            if let Some(c) = visit(m, edges, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

/// What each module re-exports (`pub use a::X;`, `pub(crate) use a::{X,
/// Y};`): (module, item) → the path as that module writes it.
type Reexports = BTreeMap<(Vec<String>, String), Vec<String>>;

fn reexports_of(module: &[String], code: &str, children: &BTreeSet<String>, out: &mut Reexports) {
    for stmt in code.split(';') {
        // Past the attributes (`#[cfg(..)]`) and comments before it.
        let mut s = stmt.trim_start();
        loop {
            let past = if s.starts_with("#[") {
                // The `]` closing the attribute: brackets counted.
                let mut depth = 0;
                s.find(|c| {
                    depth += match c {
                        '[' => 1,
                        ']' => -1,
                        _ => 0,
                    };
                    c == ']' && depth == 0
                })
                .map(|at| at + 1)
            } else if s.starts_with("//") {
                s.find('\n')
            } else {
                break;
            };
            s = s[past.unwrap_or(s.len())..].trim_start();
        }
        let Some(tree) = ["pub use ", "pub(crate) use ", "pub(super) use "]
            .iter()
            .find_map(|p| s.strip_prefix(p))
        else {
            continue;
        };
        let mut paths = Vec::new();
        expand_use(&[], tree, &mut paths);
        for mut p in paths {
            if p.first().is_some_and(|r| children.contains(r)) {
                p.insert(0, "self".into());
            }
            if let Some(item) = p.last().cloned() {
                out.insert((module.to_vec(), item), p);
            }
        }
    }
}

/// The module a path written in `from` leads to, through re-exports: the
/// deepest module it names, then, where the next name is an item that
/// module re-exports, the module that re-export leads to (`crate::X`,
/// with `pub use stream::X` in the root, is `stream`).
fn resolve_through(
    from: &[String],
    path: &[String],
    modules: &BTreeSet<Vec<String>>,
    re: &Reexports,
) -> Vec<String> {
    let (mut from, mut path) = (from.to_vec(), path.to_vec());
    for _ in 0..8 {
        let at = resolve(&from, &path, modules);
        // The name after the module the path reached.
        let consumed = match path.first().map(String::as_str) {
            Some("crate") => 1 + at.len(),
            _ => {
                let ups = path
                    .iter()
                    .take_while(|s| *s == "super" || *s == "self")
                    .count();
                let base = from.len() - path.iter().take(ups).filter(|s| *s == "super").count();
                ups + at.len().saturating_sub(base)
            }
        };
        let Some(item) = path.get(consumed) else {
            return at;
        };
        match re.get(&(at.clone(), item.clone())) {
            Some(next) if next != &path => {
                from = at;
                path = next.clone();
            }
            _ => return at,
        }
    }
    resolve(&from, &path, modules)
}

/// Every module of the crate whose sources are at `src`, and the modules
/// each imports (re-exports resolved to the module defining the item;
/// unit tests left out).
fn import_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    sources(src, &mut files);
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_path(src, f)).collect();
    let children_of = |from: &[String]| -> BTreeSet<String> {
        modules
            .iter()
            .filter(|m| m.len() == from.len() + 1 && m.starts_with(from))
            .map(|m| m.last().unwrap().clone())
            .collect()
    };
    let code: Vec<(Vec<String>, String)> = files
        .iter()
        .map(|f| {
            let c = std::fs::read_to_string(f).unwrap();
            (module_path(src, f), without_tests(&c))
        })
        .collect();
    let mut re = Reexports::new();
    for (m, c) in &code {
        reexports_of(m, c, &children_of(m), &mut re);
    }
    // The crate root is a module like the others: its re-exports lead
    // down, and an item it defines itself, named by a module below it,
    // is an import running up (the test below refuses it).
    let name = |m: &[String]| match m.is_empty() {
        true => ROOT.to_string(),
        false => m.join("::"),
    };
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, c) in &code {
        for path in named_paths(c, &children_of(from)) {
            let to = resolve_through(from, &path, &modules, &re);
            if &to != from {
                edges.entry(name(from)).or_default().insert(name(&to));
            }
        }
    }
    edges
}

/// The crate root's name in the import graph.
const ROOT: &str = "crate";

/// The modules of `edges` that import an item the crate root defines
/// itself (not one it re-exports).
fn importers_of_the_root(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<&str> {
    edges
        .iter()
        .filter(|(_, to)| to.contains(ROOT))
        .map(|(from, _)| from.as_str())
        .collect()
}

/// The two crates' sources: the library and the inflater.
fn crates() -> [PathBuf; 2] {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    [root.join("src"), root.join("crates/neff-inflate/src")]
}

#[test]
fn no_circle_of_imports_in_either_crate_with_reexports_resolved() {
    let mut faults = Vec::new();
    for src in crates() {
        let edges = import_graph(&src);
        assert!(
            edges.values().map(BTreeSet::len).sum::<usize>() > 40,
            "the import graph of {} looks empty: {edges:?}",
            src.display()
        );
        let up = importers_of_the_root(&edges);
        if !up.is_empty() {
            faults.push(format!(
                "{}: {up:?} import an item the crate root defines: give it a module of its own",
                src.display()
            ));
        }
        if let Some(cycle) = find_cycle(&edges) {
            faults.push(format!(
                "a circle of imports in {}: {}",
                src.display(),
                cycle.join(" -> ")
            ));
        }
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

/// Most lines a source file may hold, an inline block of unit tests aside.
const MAX_FILE_LINES: usize = 1000;

/// The source files under `src` holding more than [`MAX_FILE_LINES`]
/// lines besides an inline block of unit tests, with their counts.
fn long_files(src: &Path) -> Vec<(PathBuf, usize)> {
    let mut files = Vec::new();
    sources(src, &mut files);
    files
        .into_iter()
        .filter_map(|f| {
            let code = std::fs::read_to_string(&f).unwrap();
            let n = without_tests(&code).lines().count();
            (n > MAX_FILE_LINES).then_some((f, n))
        })
        .collect()
}

#[test]
fn no_source_file_of_either_crate_holds_more_than_a_thousand_lines_before_its_tests() {
    for src in crates() {
        assert_eq!(long_files(&src), [], "split them by idea");
    }
}

#[test]
fn the_checkers_find_a_circle_hidden_by_a_reexport_and_a_file_too_long() {
    let d = tempfile::tempdir().unwrap();
    let put = |name: &str, text: &str| std::fs::write(d.path().join(name), text).unwrap();
    // `a` imports `Thing` through the root's re-export of `b`, and `b`
    // imports `a`: a circle only the re-export shows.
    put("lib.rs", "mod a;\nmod b;\npub use b::Thing;\n");
    put("a.rs", "use crate::Thing;\npub fn f() -> Thing { Thing }\n");
    put("b.rs", "pub struct Thing;\nfn g() { crate::a::f(); }\n");
    let cycle = find_cycle(&import_graph(d.path())).expect("the circle");
    assert!(cycle.contains(&"a".to_string()) && cycle.contains(&"b".to_string()));
    // The same without the re-export's circle: none.
    put("b.rs", "pub struct Thing;\n");
    assert_eq!(find_cycle(&import_graph(d.path())), None);
    // 1,001 lines before the tests: too long; 1,000 and tests after: not.
    put("b.rs", &"// x\n".repeat(MAX_FILE_LINES + 1));
    assert_eq!(long_files(d.path()).len(), 1);
    let ok = format!(
        "{}#[cfg(test)]\nmod tests {{\n{}}}\n",
        "// x\n".repeat(MAX_FILE_LINES),
        "// t\n".repeat(50)
    );
    put("b.rs", &ok);
    assert_eq!(long_files(d.path()), []);
    // Tests in a file of their own leave the file counted whole, and so
    // is what follows an inline block.
    let out_of_line = format!(
        "{}#[cfg(test)]\nmod tests;\n{}",
        "// x\n".repeat(900),
        "// y\n".repeat(200)
    );
    put("b.rs", &out_of_line);
    assert_eq!(long_files(d.path()).len(), 1);
    put("b.rs", &format!("{ok}{}", "// y\n".repeat(10)));
    assert_eq!(long_files(d.path()).len(), 1);
    put("b.rs", "pub struct Thing;\n");
    // An item the root defines, named from below (by `crate::` or
    // `super::`), is an import running up, circle or not.
    put(
        "lib.rs",
        "mod a;\nmod b;\npub use b::Thing;\npub struct Own;\n",
    );
    put("a.rs", "use crate::Own;\n");
    put(
        "b.rs",
        "pub struct Thing;\nfn f() -> super::Own { super::Own }\n",
    );
    assert_eq!(importers_of_the_root(&import_graph(d.path())), ["a", "b"]);
    put("a.rs", "use crate::Thing;\n");
    put("b.rs", "pub struct Thing;\n");
    assert_eq!(importers_of_the_root(&import_graph(d.path())), [""; 0]);
}

#[test]
fn the_circle_checker_finds_a_circle_through_a_parent_and_resolves_paths() {
    let mods: BTreeSet<Vec<String>> = [vec!["tar"], vec!["tar", "index"], vec!["tar", "block"]]
        .iter()
        .map(|m| m.iter().map(|s| s.to_string()).collect())
        .collect();
    let s = |v: &[&str]| -> Vec<String> { v.iter().map(|x| x.to_string()).collect() };
    let index = s(&["tar", "index"]);
    assert_eq!(
        resolve(&index, &s(&["super", "block", "Block"]), &mods),
        s(&["tar", "block"])
    );
    assert_eq!(resolve(&index, &s(&["super", "Block"]), &mods), s(&["tar"]));
    assert_eq!(
        resolve(&s(&["tar"]), &s(&["self", "index", "Entry"]), &mods),
        index
    );
    let children: BTreeSet<String> = ["index".to_string()].into();
    let code = "use index::{Entry, walk::{A, B}};\nuse super::{x, y::Z};\nfn f() { crate::error::debug(); }\n";
    let paths = named_paths(code, &children);
    assert!(
        paths.contains(&s(&["self", "index", "walk", "B"])),
        "{paths:?}"
    );
    assert!(paths.contains(&s(&["super", "y", "Z"])), "{paths:?}");
    assert!(
        paths.contains(&s(&["crate", "error", "debug"])),
        "{paths:?}"
    );
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    edges
        .entry("tar".into())
        .or_default()
        .insert("tar::index".into());
    edges
        .entry("tar::index".into())
        .or_default()
        .insert("tar::block".into());
    assert_eq!(find_cycle(&edges), None);
    edges
        .entry("tar::block".into())
        .or_default()
        .insert("tar".into());
    assert_eq!(
        find_cycle(&edges).unwrap(),
        s(&["tar", "tar::index", "tar::block", "tar"])
    );
}

#[test]
fn the_inflater_crate_holds_no_neff_type_and_the_reader_no_inflation() {
    // crates/neff-inflate depends on no crate of this workspace and names
    // none; `neff` reaches it only through its public API, from `payload`.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let krate = root.join("crates/neff-inflate");
    let manifest = std::fs::read_to_string(krate.join("Cargo.toml")).unwrap();
    let deps = manifest
        .split("\n[")
        .find(|s| s.starts_with("dependencies]"))
        .unwrap();
    assert!(
        !deps.lines().any(|l| l.starts_with("neff")),
        "the inflater depends on a neff crate:\n{deps}"
    );
    let mut files = Vec::new();
    sources(&krate.join("src"), &mut files);
    assert!(files.len() >= 10, "{files:?}");
    for f in &files {
        let code = std::fs::read_to_string(f).unwrap();
        assert!(
            !code.contains("neff::") && !code.contains("crate::pool::"),
            "{}: names a neff item",
            f.display()
        );
    }
    let mut users = Vec::new();
    sources(&root.join("src"), &mut users);
    for f in &users {
        let code = std::fs::read_to_string(f).unwrap();
        let module = module_of(&root.join("src"), f);
        if code.contains("neff_inflate::")
            && !["payload", "error", "fuzzing"].contains(&module.as_str())
        {
            panic!("{}: reaches the inflater outside payload", f.display());
        }
    }
}
