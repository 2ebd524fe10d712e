//! docs/ARCHITECTURE.md is true to the code: its three tables of modules
//! (foundation, the path, beside the path) name every module of the
//! library once, each in the layer the layering test ranks it in, the
//! path's in the order of their ranks; every table cell is a short line;
//! and every `module::name` it mentions, of either crate, exists.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::layering::{module_path, rank, sources};

fn architecture() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/ARCHITECTURE.md"))
        .unwrap()
}

/// The modules named in the first column of the table that follows the
/// line holding `heading`, in order.
fn table(doc: &str, heading: &str) -> Vec<String> {
    let after = &doc[doc.find(heading).unwrap_or_else(|| panic!("no {heading}"))..];
    after
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| {
            let first = l.split('|').nth(1)?.trim();
            let name = first.strip_prefix('`')?.strip_suffix('`')?;
            Some(name.to_string())
        })
        .collect()
}

/// The library's top-level modules (the crate root and the fuzz entry
/// points are no layer).
fn top_modules(src: &Path) -> BTreeSet<String> {
    let mut files = Vec::new();
    sources(src, &mut files);
    files
        .iter()
        .filter_map(|f| module_path(src, f).first().cloned())
        .filter(|m| m != "fuzzing")
        .collect()
}

#[test]
fn the_architecture_tables_name_every_module_in_the_layer_it_is_ranked_in() {
    let doc = architecture();
    let foundation = table(&doc, "**Foundation**");
    let path = table(&doc, "**The path**");
    let beside = table(&doc, "**Beside the path**");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut seen = BTreeSet::new();
    let twice: Vec<&String> = foundation
        .iter()
        .chain(&path)
        .chain(&beside)
        .filter(|m| !seen.insert(*m))
        .collect();
    assert!(
        twice.is_empty(),
        "listed more than once in the module tables: {twice:?}"
    );
    let named: BTreeSet<String> = foundation
        .iter()
        .chain(&path)
        .chain(&beside)
        .cloned()
        .collect();
    assert_eq!(named, top_modules(&src), "the tables against src/");
    let ranks = |ms: &[String]| -> Vec<u32> {
        ms.iter()
            .map(|m| rank(m).unwrap_or_else(|| panic!("{m} has no rank in tests/it/layering.rs")))
            .collect()
    };
    // The path, bottom to top, in rank order; the foundation below its
    // top (`accessors`); the tasks above it.
    let p = ranks(&path);
    assert!(
        p.windows(2).all(|w| w[0] <= w[1]),
        "the path bottom to top: {path:?}"
    );
    assert_eq!(path.last().map(String::as_str), Some("accessors"));
    let top = *p.last().unwrap();
    assert!(
        ranks(&foundation).iter().all(|&r| r < top),
        "foundation: {foundation:?}"
    );
    assert!(
        ranks(&beside).iter().all(|&r| r > top),
        "beside: {beside:?}"
    );
}

/// The longest a table cell may be: a line, not a paragraph (what needs
/// more is prose below the table).
const CELL_MAX: usize = 300;

#[test]
fn every_table_cell_of_the_architecture_is_a_short_line() {
    let doc = architecture();
    let long: Vec<String> = doc
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim_start().starts_with('|'))
        .flat_map(|(n, l)| {
            l.trim().trim_matches('|').split('|').filter_map(move |c| {
                let c = c.trim();
                let chars = c.chars().count();
                (chars > CELL_MAX).then(|| format!("line {}: {chars} characters: {c:.60}…", n + 1))
            })
        })
        .collect();
    assert!(
        long.is_empty(),
        "cells over {CELL_MAX} characters:\n{}",
        long.join("\n")
    );
}

/// The source text of module `path` of the crate at `src` (its file, or
/// its directory's `mod.rs`), if it exists.
fn module_text(src: &Path, path: &[String]) -> Option<String> {
    let rel: PathBuf = path.iter().collect();
    let file = src.join(&rel).with_extension("rs");
    let dir = src.join(&rel).join("mod.rs");
    let lib = src.join("lib.rs");
    let f = if path.is_empty() {
        lib
    } else if file.exists() {
        file
    } else {
        dir
    };
    std::fs::read_to_string(f).ok()
}

/// Whether `word` stands in `text` as a whole identifier.
fn has_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(i, _)| {
        let ok = |c: Option<char>| !c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        ok(text[..i].chars().next_back()) && ok(text[i + word.len()..].chars().next())
    })
}

#[test]
fn every_module_path_the_architecture_names_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let crates = [
        ("", root.join("src")),
        ("neff_inflate", root.join("crates/neff-inflate/src")),
    ];
    let doc = architecture();
    let (mut checked, mut stale) = (0, Vec::new());
    for token in doc.split('`').skip(1).step_by(2) {
        let segs: Vec<&str> = token.split("::").collect();
        if segs.len() < 2
            || !segs
                .iter()
                .all(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        {
            continue;
        }
        // `neff_inflate::x::y` in the inflater; `x::y` in the library when
        // `x` is one of its top-level modules.
        let (src, rest) = match crates
            .iter()
            .find(|(name, _)| !name.is_empty() && segs[0] == *name)
        {
            Some((_, src)) => (src, &segs[1..]),
            None if module_text(&crates[0].1, &[segs[0].to_string()]).is_some() => {
                (&crates[0].1, &segs[..])
            }
            None => continue,
        };
        let mut at: Vec<String> = Vec::new();
        let mut i = 0;
        while i < rest.len()
            && module_text(src, &[at.clone(), vec![rest[i].to_string()]].concat()).is_some()
        {
            at.push(rest[i].to_string());
            i += 1;
        }
        if let Some(item) = rest.get(i) {
            let text = module_text(src, &at).unwrap();
            if !has_word(&text, item) {
                stale.push(format!("`{token}` (no `{item}` in `{}`)", at.join("::")));
            }
        }
        checked += 1;
    }
    assert!(checked > 20, "only {checked} paths checked");
    assert_eq!(
        stale,
        Vec::<String>::new(),
        "ARCHITECTURE names what is not there"
    );
}
