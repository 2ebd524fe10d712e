//! The compile-cache columns of a row besides its record's: the graph
//! hash and flags hash of the `MODULE_<graph hash>+<flags hash>` entry a
//! NEFF (or a bare entry) belongs to, and that entry's flags (its
//! `compile_flags.json` or `compile_flags.txt`) as a JSON list, so that
//! every flag set a graph was compiled with is one query (docs/GUIDE.md,
//! "Why did it compile again?").

use std::path::Path;

use crate::cache;

/// A row's `graph_hash`, `flags_hash` and `compile_flags`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct EntryCols {
    pub(super) graph_hash: Option<String>,
    pub(super) flags_hash: Option<String>,
    /// The entry's flags as a JSON list; `None` where it holds none, they
    /// cannot be read, or the entry is in a bucket (not read there).
    pub(super) compile_flags: Option<String>,
}

/// The columns of the row of the file at `path` (as the scan met it), or
/// else at `key` (its canonical path): empty unless one of them names a
/// file of a compiler wrapper's entry (`MODULE_*/model.neff`, or the
/// entry itself). The compile flags are read from a local entry only
/// (`remote`: the file is a remote object).
pub(super) fn entry_cols(path: &str, key: &str, remote: bool) -> EntryCols {
    [path, key]
        .into_iter()
        .find_map(|p| of(Path::new(p), remote))
        .unwrap_or_default()
}

fn of(path: &Path, remote: bool) -> Option<EntryCols> {
    let dir = cache::entry_dir(path)?;
    let name = dir.file_name()?.to_str()?;
    let (graph, flags_hash) = cache::module_hashes(name)?;
    let compile_flags = match remote {
        true => None,
        false => match cache::read_flags(dir) {
            Ok(Some(f)) => serde_json::to_string(&f).ok(),
            Ok(None) => None,
            Err(e) => {
                log::debug!("{}: {e}", dir.display());
                None
            }
        },
    };
    Some(EntryCols {
        graph_hash: Some(graph),
        flags_hash,
        compile_flags,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entrys_files_give_its_hashes_and_flags() {
        let dir = tempfile::tempdir().unwrap();
        let e = dir.path().join("neuronxcc-2.15.1.0/MODULE_12+ab34");
        std::fs::create_dir_all(&e).unwrap();
        std::fs::write(e.join("compile_flags.json"), br#"["--target=trn1", "-O2"]"#).unwrap();
        let neff = e.join("model.neff");
        let c = entry_cols(neff.to_str().unwrap(), "", false);
        assert_eq!(c.graph_hash.as_deref(), Some("12"));
        assert_eq!(c.flags_hash.as_deref(), Some("ab34"));
        assert_eq!(
            c.compile_flags.as_deref(),
            Some(r#"["--target=trn1","-O2"]"#)
        );
        // Through the canonical path when the path met is not the entry's.
        assert_eq!(
            entry_cols("/elsewhere/model.neff", neff.to_str().unwrap(), false),
            c
        );
        // A remote object's entry: its hashes, no local file read for flags.
        let remote = entry_cols(neff.to_str().unwrap(), "", true);
        assert_eq!(remote.graph_hash.as_deref(), Some("12"));
        assert_eq!(remote.compile_flags, None);
        assert_eq!(
            entry_cols("/x/y.neff", "/x/y.neff", false),
            EntryCols::default()
        );
        let v = dir
            .path()
            .join("0123456789abcdef0123456789abcdef/graph.neff");
        assert_eq!(
            entry_cols(v.to_str().unwrap(), "", false),
            EntryCols::default()
        );
    }
}
