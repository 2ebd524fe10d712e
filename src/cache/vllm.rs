//! vLLM's Neuron cache (vllm-neuron's torch.compile backend, and the
//! SDK 2.32 LNL stack's cache of the same layout): `<root>/<32 hex key>/`
//! holding `graph.hlo`, the NEFF the loader reads (`graph_<key>.neff`;
//! `graph.neff` in older builds), `.artifact_metadata_v0.json` and
//! `.compilation_complete` (`completed:<time>`, `neff_size:<bytes>`),
//! written last; beside the entries, `.<key>.compilation_metadata.lock`,
//! the NKI kernel cache `nki/`, and the directories a fetch from the
//! shared tier leaves when its process dies: `<key>.tmp.<pid>` (a copy
//! not finished) and `<key>.trash.<pid>` (the entry it moved aside to
//! delete). docs/GUIDE.md ("Compile caches of every compiler") cites
//! the source of each.

use std::path::Path;

use super::era::is_vllm_key;
use super::state::State;

/// What vLLM's Neuron cache writes last, once a compile finished.
pub(super) const COMPLETE: &str = ".compilation_complete";

/// Most of `.compilation_complete` read (its last bytes): the writer puts
/// three short lines in it.
pub(super) const MARKER_TAIL: u64 = 4 << 10;

/// What a directory directly under a vLLM cache root is, by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Child {
    /// An entry: 32 lowercase hex digits.
    Key,
    /// A directory a fetch left beside the entry `<key>`.
    Aside(Aside),
    /// The NKI kernel cache (`nki/`, or its staging copy `nki.tmp.*`).
    Nki,
    /// A copy `neff cache sync` makes before it renames it into place
    /// (`.neff-sync.<entry>.<pid>@<host>`): never an entry.
    Sync,
    /// Anything else.
    Other,
}

/// A directory vllm-neuron's fetch from the shared tier made beside an
/// entry, named for the process that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Aside {
    /// `<key>.trash.<pid>` (the old entry moved aside to be deleted), else
    /// `<key>.tmp.<pid>` (the copy being made).
    pub(super) trash: bool,
    pub(super) pid: u32,
}

/// What the directory `name` under a vLLM cache root is.
pub(super) fn child(name: &str) -> Child {
    if is_vllm_key(name) {
        return Child::Key;
    }
    if super::staging::parse(name).is_some() {
        return Child::Sync;
    }
    if name == "nki" || name.starts_with("nki.tmp.") {
        return Child::Nki;
    }
    let Some((key, rest)) = name.split_at_checked(32) else {
        return Child::Other;
    };
    let pid = |p: &str| {
        (p.bytes().all(|b| b.is_ascii_digit()) && !p.is_empty())
            .then(|| p.parse::<u32>().ok())
            .flatten()
    };
    if is_vllm_key(key) {
        if let Some(p) = rest.strip_prefix(".trash.").and_then(pid) {
            return Child::Aside(Aside {
                trash: true,
                pid: p,
            });
        }
        if let Some(p) = rest.strip_prefix(".tmp.").and_then(pid) {
            return Child::Aside(Aside {
                trash: false,
                pid: p,
            });
        }
    }
    Child::Other
}

/// Whether a file named `name` directly under a root is one vLLM's cache
/// keeps beside its entries (a lock, or the lock holder's metadata).
pub(super) fn is_root_file(name: &str) -> bool {
    name.starts_with('.')
        && (name.ends_with(".compilation_metadata.lock") || name.ends_with(".compilation_metadata"))
}

/// Whether the directory `dir` holds what a vLLM entry holds at its top
/// (`graph.hlo`, `.compilation_complete`), whatever its name.
pub(super) fn holds_entry_files(dir: &Path) -> bool {
    ["graph.hlo", COMPLETE]
        .iter()
        .any(|f| dir.join(f).symlink_metadata().is_ok())
}

/// The state of an entry `<key>.trash.<pid>` or `<key>.tmp.<pid>`, and
/// why, its process looked for on this host (`alive`); `None` for alive
/// means it cannot be told (a bucket).
pub(super) fn aside_state(a: Aside, alive: Option<bool>) -> (State, String) {
    let (what, dead_state) = if a.trash {
        (
            "an entry vllm-neuron moved aside to delete it (<key>.trash.<pid>)",
            State::Failed,
        )
    } else {
        (
            "a copy from the shared cache tier vllm-neuron was making (<key>.tmp.<pid>)",
            State::Incomplete,
        )
    };
    match alive {
        Some(true) => (
            State::Locked,
            format!(
                "{what}: process {} is alive and finishes it (never removed while it lives)",
                a.pid
            ),
        ),
        Some(false) => (
            dead_state,
            format!(
                "{what}: process {} is gone, nothing will finish it; the loader never reads it",
                a.pid
            ),
        ),
        None => (
            State::Unknown,
            format!(
                "{what}: whether process {} lives cannot be told here",
                a.pid
            ),
        ),
    }
}

/// Whether process `pid` lives on this host.
pub(super) fn alive(pid: u32) -> bool {
    pid == 0 || Path::new("/proc").join(pid.to_string()).exists()
}

/// The reason an unnamed directory under a vLLM root is `unknown`.
pub(super) fn not_a_key(name: &str) -> String {
    let len = name.chars().count();
    format!(
        "not a vLLM cache key ({len} characters; a key is 32 lowercase hex digits): \
         the loader never looks it up"
    )
}

/// What `.compilation_complete` says of the NEFF's size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Said {
    /// No `neff_size:` line (older builds write none, or an empty marker).
    Nothing,
    /// A size in bytes: its digits, without leading zeros (any length: a
    /// number no file can have is compared, and differs, as written).
    Size(String),
    /// A `neff_size:` that is not a number of bytes (or two that differ).
    Garbled(String),
}

/// What the text of `.compilation_complete` says of the NEFF's size.
pub(super) fn neff_size(text: &str) -> Said {
    let mut said = Said::Nothing;
    for line in text.lines() {
        let Some(v) = line.strip_prefix("neff_size:") else {
            continue;
        };
        let v = v.trim();
        let this = if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
            let d = v.trim_start_matches('0');
            Said::Size(if d.is_empty() { "0".into() } else { d.into() })
        } else {
            return Said::Garbled(v.chars().take(40).collect());
        };
        match &said {
            Said::Size(s) if this != said => {
                return Said::Garbled(format!(
                    "{s} and {}",
                    v.chars().take(40).collect::<String>()
                ))
            }
            _ => said = this,
        }
    }
    said
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_under_a_vllm_root_say_what_they_are() {
        let k = "0123456789abcdef0123456789abcdef";
        assert_eq!(child(k), Child::Key);
        assert_eq!(
            child(&format!("{k}.trash.4242")),
            Child::Aside(Aside {
                trash: true,
                pid: 4242
            })
        );
        assert_eq!(
            child(&format!("{k}.tmp.7")),
            Child::Aside(Aside {
                trash: false,
                pid: 7
            })
        );
        assert_eq!(child(&format!("{k}.tmp.host.7")), Child::Other);
        assert_eq!(child(&format!("{k}.trash.99999999999")), Child::Other);
        assert_eq!(child(&format!("{k}.trash.")), Child::Other);
        assert_eq!(child("nki"), Child::Nki);
        assert_eq!(child("nki.tmp.h.1"), Child::Nki);
        assert_eq!(child(&format!(".neff-sync.{k}.12@host")), Child::Sync);
        assert_eq!(child(&k[..31]), Child::Other);
        assert_eq!(child(&k.to_uppercase()), Child::Other);
        assert!(is_root_file(&format!(".{k}.compilation_metadata.lock")));
        assert!(!is_root_file("x.lock"));
    }

    #[test]
    fn the_marker_size_is_read_as_digits() {
        assert_eq!(neff_size(""), Said::Nothing);
        assert_eq!(
            neff_size("completed:1712.5\nneff_size:0042\ncompleted_by_rank:0\n"),
            Said::Size("42".into())
        );
        assert_eq!(neff_size("neff_size:000\n"), Said::Size("0".into()));
        let huge = "9".repeat(400);
        assert_eq!(neff_size(&format!("neff_size:{huge}")), Said::Size(huge));
        assert!(matches!(neff_size("neff_size:-1"), Said::Garbled(_)));
        assert!(matches!(neff_size("neff_size:"), Said::Garbled(_)));
        assert!(matches!(neff_size("neff_size:1e9"), Said::Garbled(_)));
        assert!(matches!(
            neff_size("neff_size:12\nneff_size:13"),
            Said::Garbled(_)
        ));
        assert_eq!(
            neff_size("neff_size:12\nneff_size:012"),
            Said::Size("12".into())
        );
        assert_eq!(neff_size("\u{0}\u{ff}garbage\n\n"), Said::Nothing);
    }

    #[test]
    fn a_trash_directory_goes_only_once_its_process_is_gone() {
        let a = Aside {
            trash: true,
            pid: 5,
        };
        assert_eq!(aside_state(a, Some(true)).0, State::Locked);
        assert_eq!(aside_state(a, Some(false)).0, State::Failed);
        assert_eq!(aside_state(a, None).0, State::Unknown);
        assert!(alive(std::process::id()));
        assert!(!alive(999_999_999));
    }
}
