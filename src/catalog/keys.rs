//! How a catalogue row is keyed and compared: the key of a file (its real
//! path, or a URL normalised), and the scan options a row was read with,
//! as the JSON it stores (and as schema 1's text becomes it); the key of
//! a walked path, worked out from its root's real path.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::scan::ScanOptions;
use crate::source::Source;

/// The options that change a record, as the JSON object a row stores
/// (`{"limits":{...},"verify":false}`, keys sorted): a row read with other
/// caps, or without `--verify` when it is asked for now, is read again.
pub fn options_key(opts: &ScanOptions) -> String {
    options_json(opts.shaping())
}

/// `shaping` as JSON, every object's keys sorted (a `serde_json::Value`'s
/// map is ordered by key), whatever the order of the struct's fields.
fn options_json(shaping: impl serde::Serialize) -> String {
    serde_json::to_value(shaping)
        .expect("plain data serializes")
        .to_string()
}

/// Schema 1's options text (`Limits { max_inflated: 4294967296, ... }
/// verify=false`, Rust's `Debug`) as schema 2's JSON; text of another
/// shape is kept as it is (its rows are read again at the next scan).
pub(super) fn options_from_v1(text: &str) -> String {
    let parse = || -> Option<String> {
        let inner = text.strip_prefix("Limits { ")?;
        let (fields, rest) = inner.split_once(" } verify=")?;
        let verify = match rest {
            "true" => true,
            "false" => false,
            _ => return None,
        };
        let mut limits = serde_json::Map::new();
        for f in fields.split(", ") {
            let (k, v) = f.split_once(": ")?;
            limits.insert(k.to_string(), v.parse::<u64>().ok()?.into());
        }
        // (Schema 1's options were these two, for good.)
        Some(options_json(serde_json::json!({
            "limits": serde_json::Value::Object(limits),
            "verify": verify,
        })))
    };
    parse().unwrap_or_else(|| text.to_string())
}

/// The key of a file's row: its canonical path (symlinks and `.`/`..`
/// resolved, as realpath gives it), or for a URL the URL normalised (scheme
/// and host in lower case, dot segments resolved) with its query but
/// without the parameters that sign it ([`crate::remote::unsigned_query`]:
/// `versionId` and the like choose the object and stay, a presigned URL's
/// signature is never kept, and the object is the same whatever signs the
/// request), without fragment or userinfo (a password); a path that
/// cannot be resolved (gone) is made absolute as it stands.
pub(crate) fn key_of(source: &Source) -> String {
    #[cfg(feature = "remote")]
    if let Some(u) = source.url() {
        return match url::Url::parse(u) {
            Ok(mut u) => {
                let query = u.query().and_then(crate::remote::unsigned_query);
                u.set_query(query.as_deref());
                u.set_fragment(None);
                let _ = u.set_username("");
                let _ = u.set_password(None);
                u.to_string()
            }
            Err(_) => crate::remote::redact(u).into_owned(),
        };
    }
    real_key(source.path())
}

/// The key of the local path `p`: its canonical path, else (gone) made
/// absolute as it stands.
fn real_key(p: &Path) -> String {
    match std::fs::canonicalize(p) {
        Ok(c) => c.display().to_string(),
        Err(_) => std::path::absolute(p)
            .unwrap_or_else(|_| p.to_path_buf())
            .display()
            .to_string(),
    }
}

/// The size and version of a remote object named by its URL (one no
/// listing gave): asked of its server, so that a rescan answers it from
/// its row as it answers a listed one. `None` for a local path or a
/// compile-cache entry's prefix (a listing gives those), or when the
/// server does not say.
pub(crate) fn named_object_version(source: &Source) -> Option<(u64, String)> {
    #[cfg(feature = "remote")]
    if let Some(u) = source.url().filter(|_| !source.is_prefix()) {
        return match crate::remote::Object::version_of(u) {
            Ok(v) => Some(v),
            Err(e) => {
                log::debug!("{}: no version to key its row on: {e}", source.shown());
                None
            }
        };
    }
    let _ = source;
    None
}

/// [`key_of`] for what a scan found: for a local path, its root's real
/// path joined with the rest when the walk went through no link to reach
/// it (one realpath per root instead of one per file), else the path
/// resolved whole.
pub(super) fn key_found(
    found: &Source,
    roots: &[(&Path, Option<PathBuf>)],
    linked: &HashSet<PathBuf>,
) -> String {
    match found.local_path() {
        Some(p) => key_below(p, roots, linked),
        None => key_of(found),
    }
}

/// [`key_found`] of the local path `p`.
pub(super) fn key_below(
    p: &Path,
    roots: &[(&Path, Option<PathBuf>)],
    linked: &HashSet<PathBuf>,
) -> String {
    if !linked.is_empty() && p.ancestors().any(|a| linked.contains(a)) {
        return real_key(p);
    }
    for (root, real) in roots {
        if let (Ok(rest), Some(real)) = (p.strip_prefix(root), real) {
            if rest.as_os_str().is_empty() {
                return real.display().to_string();
            }
            return real.join(rest).display().to_string();
        }
    }
    real_key(p)
}
