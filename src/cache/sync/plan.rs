//! Which entries of the source a sync copies: the `ok` ones, as the
//! source's status judged them, by the options' versions, name patterns
//! and time; each with its path below the root and its files.

use std::path::{Path, PathBuf};

use super::files::{self, SrcFile};
use super::memo;
use super::{Action, SyncOptions};
use crate::cache::entry::Obj;
use crate::cache::status::rejudge;
use crate::cache::{CacheEntry, CacheStatus, State};
use crate::error::{Error, Result};

/// An `ok` entry of the source selected: its path below the root, and
/// its files (on disk, once [`Planned::listed`]; in a store, from the
/// listing the source was judged by), or what stopped them being listed.
#[derive(Clone)]
pub(super) struct Planned {
    pub(super) entry: CacheEntry,
    /// Its path below the source's root (`neuronxcc-<v>/MODULE_…`, a vLLM
    /// key; a store's key as its bytes), kept at the destination.
    pub(super) rel: PathBuf,
    /// Its files, locks left out, sorted by name.
    pub(super) files: Vec<SrcFile>,
    /// Why it cannot be copied, found before anything is written.
    pub(super) trouble: Option<(Action, String)>,
    /// In a store: every object the listing gave under it (locks too),
    /// for [`Planned::ok_read_whole`]; `None` on disk.
    pub(super) objects: Option<Vec<Obj>>,
}

impl Planned {
    /// The entry with its files listed now (on disk; a store's were, with
    /// the source), or what stopped the listing.
    pub(super) fn listed(&self) -> Planned {
        if self.objects.is_some() {
            return self.clone();
        }
        let (files, trouble) = match files::list(&self.entry.path) {
            Ok(f) => (f, None),
            Err(t) => (Vec::new(), Some(t)),
        };
        Planned {
            files,
            trouble,
            ..self.clone()
        }
    }

    /// Whether the source's entry is `ok` with its NEFF read whole: it
    /// was judged without (on disk, by its files; a store's, by its
    /// listing), so it is judged again now, its NEFF read (a store's
    /// marker and log too).
    pub(super) fn ok_read_whole(&self) -> bool {
        if self.known_not_ok() {
            return false;
        }
        let judged = rejudge(&self.entry, self.objects.clone(), None);
        if judged.state != State::Ok {
            self.found_not_ok(judged.state);
        }
        judged.state == State::Ok
    }

    /// In a store: a digest of the entry's listing (its URL, and each
    /// object's name, size, digest and time, as fixed bytes), which changes
    /// when any of its objects does. `None` on disk.
    fn listing_print(&self) -> Option<[u8; 32]> {
        use sha2::{Digest, Sha256};
        self.objects.as_ref()?;
        let mut h = Sha256::new();
        h.update(self.entry.path.as_os_str().as_encoded_bytes());
        for f in &self.files {
            h.update(b"\0");
            h.update(f.rel.as_os_str().as_encoded_bytes());
            h.update(f.size.to_le_bytes());
            match f.print {
                Some(p) => {
                    let (kind, digest) = p.tagged();
                    h.update([kind]);
                    h.update(digest);
                }
                None => h.update([0]),
            }
            let time = f
                .modified
                .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok());
            match time {
                Some(t) => {
                    h.update([1]);
                    h.update(t.as_nanos().to_le_bytes());
                }
                None => h.update([0]),
            }
        }
        Some(h.finalize().into())
    }

    /// Whether a store's entry was found not `ok` once read (by a sync
    /// before this one, its listing unchanged since): passed over unread.
    pub(super) fn known_not_ok(&self) -> bool {
        let known = self.listing_print().is_some_and(|l| memo::known_not_ok(&l));
        if known {
            log::info!(
                "{}: found not ok once read before, its listing unchanged: passed over",
                self.entry.path.display()
            );
        }
        known
    }

    /// Notes that the source's entry is `state` once read: passed over,
    /// and, in a store, remembered so when that is what its bytes say
    /// (not a failure to read them).
    pub(super) fn found_not_ok(&self, state: State) {
        log::info!(
            "{}: {state} once read, not ok: passed over",
            self.entry.path.display()
        );
        if !matches!(state, State::Unreadable | State::Unknown | State::Locked) {
            if let Some(l) = self.listing_print() {
                memo::not_ok(l);
            }
        }
    }

    /// Bytes of its files.
    pub(super) fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }

    /// The entry's name (the last part of its path).
    pub(super) fn name(&self) -> &std::ffi::OsStr {
        self.rel.file_name().unwrap_or_default()
    }
}

/// The `ok` entries of `status` (the cache at `root`) the options select,
/// and how many entries are passed over for not being `ok`. `listing`:
/// in a store, every object under the root, the entries' files taken
/// from it.
pub(super) fn select(
    root: &Path,
    status: &CacheStatus,
    listing: Option<&Listing>,
    opts: &SyncOptions,
) -> Result<(Vec<Planned>, usize)> {
    for g in &opts.globs {
        if g.is_empty() {
            return Err(Error::Usage {
                reason: "an empty --glob matches no entry".into(),
            });
        }
    }
    let mut out = Vec::new();
    let mut passed_over = 0;
    for e in &status.entries {
        if e.state != State::Ok {
            passed_over += 1;
            continue;
        }
        if !wanted(e, opts) {
            continue;
        }
        let Some(rel) = below(root, &e.path) else {
            log::warn!("{}: not below the root: passed over", e.path.display());
            continue;
        };
        #[cfg(not(feature = "remote"))]
        let _ = listing;
        #[cfg_attr(not(feature = "remote"), allow(unused_mut))]
        let mut p = Planned {
            entry: e.clone(),
            rel,
            files: Vec::new(),
            trouble: None,
            objects: None,
        };
        #[cfg(feature = "remote")]
        if let (Some(listing), Some(dir)) = (listing, e.path.to_str()) {
            let objects = files::under(listing, dir);
            p.files = files::of_objects(dir, objects);
            p.objects = Some(files::objs(dir, objects));
            p.rel = PathBuf::from(crate::remote::key_part(&p.rel.to_string_lossy()).into_owned());
        }
        out.push(p);
    }
    Ok((out, passed_over))
}

/// Every object under a store's root, as its listing gave them.
#[cfg(feature = "remote")]
pub(super) type Listing = Vec<crate::remote::Listed>;

#[cfg(not(feature = "remote"))]
pub(super) type Listing = ();

/// The path of `entry` below `root`, plain names only.
fn below(root: &Path, entry: &Path) -> Option<PathBuf> {
    let rel = entry.strip_prefix(root).ok()?;
    let plain = rel
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)));
    (plain && rel.components().count() > 0).then(|| rel.to_path_buf())
}

/// Whether the options select the entry `e`.
fn wanted(e: &CacheEntry, opts: &SyncOptions) -> bool {
    let version = opts.versions.is_empty()
        || e.compiler
            .as_deref()
            .is_some_and(|c| opts.versions.iter().any(|v| of_version(c, v)));
    let name = e.path.file_name().unwrap_or_default().to_string_lossy();
    let named = opts.globs.is_empty() || opts.globs.iter().any(|g| glob(g, &name));
    let recent = match opts.since {
        Some(t) => e.modified.is_some_and(|m| m >= t),
        None => true,
    };
    version && named && recent
}

/// Whether the compiler version `c` is `v`, or a build of the release `v`
/// names (`2.15` names `2.15.128.0+56dc5a86`).
fn of_version(c: &str, v: &str) -> bool {
    let v = v.trim().trim_start_matches("neuronxcc-");
    c == v
        || c.strip_prefix(v)
            .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('+'))
}

/// Whether `name` matches the pattern `pat` whole: `*` any run of
/// characters, `?` any one, every other character itself.
pub(super) fn glob(pat: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pat.chars().collect(), name.chars().collect());
    let (mut i, mut j) = (0, 0);
    // Where the last `*` was, and the name's position it matched up to.
    let mut star: Option<(usize, usize)> = None;
    while j < n.len() {
        if i < p.len() && (p[i] == '?' || p[i] == n[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some((i, j));
            i += 1;
        } else if let Some((si, sj)) = star {
            i = si + 1;
            j = sj + 1;
            star = Some((si, sj + 1));
        } else {
            return false;
        }
    }
    p[i..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_whole_names() {
        assert!(glob("MODULE_*", "MODULE_1+ab"));
        assert!(glob("*+ab", "MODULE_1+ab"));
        assert!(glob("MODULE_?+*", "MODULE_1+ab"));
        assert!(glob("*", ""));
        assert!(glob("a*b*c", "aXbYbc"));
        assert!(!glob("MODULE_?+*", "MODULE_12+ab"));
        assert!(!glob("MODULE_1", "MODULE_1+ab"));
        assert!(!glob("x*", "MODULE_1"));
    }

    #[test]
    fn a_release_names_its_builds() {
        assert!(of_version("2.15.128.0+56dc5a86", "2.15"));
        assert!(of_version("2.15.128.0+56dc5a86", "2.15.128.0"));
        assert!(of_version(
            "2.15.128.0+56dc5a86",
            "neuronxcc-2.15.128.0+56dc5a86"
        ));
        assert!(!of_version("2.15.128.0+56dc5a86", "2.1"));
        assert!(!of_version("2.150.1", "2.15"));
    }
}
