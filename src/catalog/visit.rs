//! One file of an indexed scan, looked at: its key and its identity (the
//! stat, or what a listing said of the object) looked up, then either its
//! record answered from its row (identity and scan options unchanged: the
//! hit path) or the file read, record and rows from one open (the read
//! path). What becomes of the result is update.rs's.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::keys::{self, key_of};
use crate::accessors;
use crate::cache::Met;
use crate::json::views::TensorMap;
use crate::reader::{Neff, Scratch};
use crate::scan::{self, Record, ScanOptions, Seen, Versions};
use crate::summary::Summary;

/// A file's identity: when all five are unchanged, so are its bytes (as far
/// as the file system can tell), and its row is reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// Device the file lives on (`st_dev`).
    pub dev: i64,
    /// Inode number (`st_ino`): a file replaced by another has a new one.
    pub ino: i64,
    /// Size in bytes.
    pub size: i64,
    /// Last modification, nanoseconds since the epoch.
    pub mtime_ns: i64,
    /// Last status change, nanoseconds since the epoch (moves on any write,
    /// rename or `touch`, even one that restores the mtime).
    pub ctime_ns: i64,
}

impl Stat {
    /// The identity of the file at `path` (symlinks followed, as the scan
    /// reads them).
    pub fn of(path: &Path) -> std::io::Result<Stat> {
        let m = std::fs::metadata(path)?;
        Ok(Stat {
            dev: m.dev() as i64,
            ino: m.ino() as i64,
            size: m.size() as i64,
            mtime_ns: m
                .mtime()
                .saturating_mul(1_000_000_000)
                .saturating_add(m.mtime_nsec()),
            ctime_ns: m
                .ctime()
                .saturating_mul(1_000_000_000)
                .saturating_add(m.ctime_nsec()),
        })
    }
}

/// The identity of `p`: its file's [`Stat`], or for a remote object what
/// its listing said (`version`: size, and the ETag folded into `ino`; the
/// other fields 0), so that an unchanged object is known without a request.
pub(super) fn identity(p: &Path, version: Option<&(u64, String)>) -> std::io::Result<Stat> {
    match version {
        Some((size, version)) => {
            use sha2::{Digest, Sha256};
            let h = Sha256::digest(version.as_bytes());
            Ok(Stat {
                dev: 0,
                ino: i64::from_le_bytes(h[..8].try_into().expect("8 bytes")),
                size: *size as i64,
                mtime_ns: 0,
                ctime_ns: 0,
            })
        }
        None => Stat::of(p),
    }
}

/// What a row holds that a lookup compares: the identity its file had,
/// and whether it was read with this scan's options. (Its record is
/// fetched when the row answers: [`Records`].)
pub(super) struct Cached {
    /// The row's id: its record is fetched by it.
    pub(super) id: i64,
    pub(super) stat: Stat,
    pub(super) same_options: bool,
}

/// The records of rows that answer, fetched one at a time by key on
/// read-only connections (one per worker at most, kept for the scan), so
/// that a scan holds a row's identity, not its record.
pub(super) struct Records<'a> {
    db: &'a Path,
    idle: std::sync::Mutex<Vec<rusqlite::Connection>>,
}

impl<'a> Records<'a> {
    pub(super) fn new(db: &'a Path) -> Records<'a> {
        Records {
            db,
            idle: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// The record of row `id` if it is still `key`'s, of identity `stat`
    /// and read with the `options` key; `None` (the file is read again)
    /// when it is not, or the row cannot be read.
    fn get(&self, id: i64, key: &str, stat: Stat, options: &str) -> Option<String> {
        let idle = self.idle.lock().expect("lock").pop();
        let conn = match idle {
            Some(c) => c,
            None => super::schema::open_ro(self.db).ok()?,
        };
        let got = conn
            .prepare_cached(
                "SELECT record FROM neffs WHERE id = ?1 AND key = ?2 AND dev = ?3 \
                 AND ino = ?4 AND size = ?5 AND mtime_ns = ?6 AND ctime_ns = ?7 \
                 AND options = ?8",
            )
            .and_then(|mut st| {
                st.query_row(
                    rusqlite::params![
                        id,
                        key,
                        stat.dev,
                        stat.ino,
                        stat.size,
                        stat.mtime_ns,
                        stat.ctime_ns,
                        options
                    ],
                    |r| r.get::<_, String>(0),
                )
            })
            .ok();
        self.idle.lock().expect("lock").push(conn);
        got
    }
}

/// What each file of an indexed scan is judged by, shared by the workers:
/// the keys of the walked paths, the rows loaded for this scan, and what
/// the walk and the listings said of each file.
pub(super) struct Lookup<'a> {
    /// Each walked path's key, by the path's bytes.
    pub(super) keys: &'a HashMap<&'a OsStr, &'a str>,
    /// The rows loaded for this scan ([`super::update`]'s `load`), by key.
    pub(super) cached: &'a HashMap<String, Option<Cached>>,
    /// This scan's options key: a row read with others is read again.
    pub(super) options: &'a str,
    /// Where the records of rows that answer come from.
    pub(super) records: &'a Records<'a>,
    pub(super) opts: &'a ScanOptions,
    /// What the listings of prefixes read while listed have seen so far.
    pub(super) seen: &'a Seen,
    /// What the walk met of each compile-cache entry.
    pub(super) met: &'a HashMap<OsString, Met>,
    /// What the walk's listings said of each object (size, ETag).
    pub(super) versions: &'a Versions,
}

impl Lookup<'_> {
    /// Looks at the file at `p`: answered from its row when the row's
    /// identity and options are the file's and this scan's, else read.
    pub(super) fn visit(&self, p: &Path, scratch: &mut Scratch) -> Visit {
        let key = self.key(p);
        let met = self.seen.met(self.met, p);
        // The identity is taken before the read: a file changed during the
        // read gets a new identity, so the next scan reads it again.
        let stat = self.identity(p);
        match self.unchanged(&key, stat) {
            Some(record) => self.hit(p, key, record, met),
            None => self.read(p, key, stat, met, scratch),
        }
    }

    /// `p`'s key: the walk's, or, for an object a listing found during the
    /// scan, worked out now.
    fn key(&self, p: &Path) -> String {
        match self.keys.get(p.as_os_str()) {
            Some(k) => k.to_string(),
            None => key_of(p),
        }
    }

    /// `p`'s identity now: what a listing (the walk's, or one during the
    /// scan) or its URL says of the object, else its file's stat; `None`
    /// when there is none to take.
    fn identity(&self, p: &Path) -> Option<Stat> {
        let version = self.seen.version(self.versions, p);
        let version = version.or_else(|| keys::named_object_version(p));
        identity(p, version.as_ref()).ok()
    }

    /// The record of `key`'s row, when that row was loaded, was made from a
    /// file of identity `stat` under this scan's options, and decodes.
    fn unchanged(&self, key: &str, stat: Option<Stat>) -> Option<Record> {
        match (self.cached.get(key).and_then(Option::as_ref), stat) {
            (Some(c), Some(stat)) if c.stat == stat && c.same_options => self
                .records
                .get(c.id, key, stat, self.options)
                .and_then(|j| serde_json::from_str::<Record>(&j).ok()),
            _ => None,
        }
    }

    /// The hit path: the row's record `r`, carrying `p` as typed now, and
    /// for a compile-cache entry its state judged again from what this scan
    /// met of the entry (`met`), which is not part of the file's identity.
    fn hit(&self, p: &Path, key: String, mut r: Record, met: Option<Met>) -> Visit {
        r.path = crate::shown::path(p);
        let mut refreshed = false;
        if r.cache_state.is_some() || r.cache_key.is_some() {
            let before = (r.cache_state, r.cache_reason.clone());
            scan::cache_entry(p, &mut r, &self.opts.open, met);
            refreshed = (r.cache_state, r.cache_reason.clone()) != before;
        }
        Visit {
            key,
            record: r,
            how: How::Hit { refreshed },
        }
    }

    /// The read path: `p` read, its record and (when it opens) its rows
    /// from one open, stamped with the time the read began.
    fn read(
        &self,
        p: &Path,
        key: String,
        stat: Option<Stat>,
        met: Option<Met>,
        scratch: &mut Scratch,
    ) -> Visit {
        let scanned_at = now_utc();
        let (record, rows) =
            scan::record_with(p, self.opts, scratch, met, |n| Box::new(Rows::of(n)));
        Visit {
            key,
            record,
            how: How::Read {
                stat,
                scanned_at,
                rows,
            },
        }
    }
}

/// What became of one file of an indexed scan: its record, and how it
/// was made.
pub(super) struct Visit {
    pub(super) key: String,
    pub(super) record: Record,
    pub(super) how: How,
}

/// How a [`Visit`]'s record was made.
pub(super) enum How {
    /// Answered from its row; `refreshed` when its compile-cache entry's
    /// state changed (the row is updated).
    Hit { refreshed: bool },
    /// Read (new, changed, or not cacheable), with its rows.
    Read {
        /// Its identity before the read (`None`: none, so no row is kept).
        stat: Option<Stat>,
        scanned_at: String,
        /// (Boxed: a summary is large beside a hit's flag.)
        rows: Option<Box<Rows>>,
    },
}

/// The rows of one readable NEFF besides its record.
pub(crate) struct Rows {
    pub(super) summary: Summary,
    pub(super) members: Vec<MemberRow>,
    /// (input, output, must alias)
    pub(super) aliases: Vec<(String, String, bool)>,
}

/// One member of a NEFF's archive, as its `members` row holds it.
pub(super) struct MemberRow {
    pub(super) name: String,
    pub(super) kind: &'static str,
    pub(super) size: u64,
    pub(super) offset: u64,
    pub(super) mode: u32,
    pub(super) mtime: i64,
    pub(super) link: Option<String>,
}

impl Rows {
    /// The rows of the open NEFF `neff`.
    pub(crate) fn of(neff: &Neff) -> Rows {
        let members = neff
            .entries()
            .iter()
            .map(|e| MemberRow {
                name: neff.name_str(e).into_owned(),
                kind: e.kind.as_str(),
                size: e.size,
                offset: e.offset,
                mode: e.mode,
                mtime: e.mtime,
                link: neff
                    .link(e)
                    .map(|l| String::from_utf8_lossy(l).into_owned()),
            })
            .collect();
        // The pairs `neff get alias` prints; none when it refuses (the
        // record's `errors` says why).
        let aliases = match (accessors::alias(neff), accessors::tensor_map(neff)) {
            (Ok(pairs), Ok(tm)) => {
                let flags: HashMap<(&str, &str), bool> = TensorMap::new(tm.json)
                    .map(|t| t.aliases())
                    .unwrap_or_default()
                    .into_iter()
                    .map(|a| ((a.input_name, a.output_name), a.must_alias))
                    .collect();
                pairs
                    .into_iter()
                    .map(|(i, o)| {
                        let must = flags.get(&(i, o)).copied().unwrap_or(false);
                        (i.to_string(), o.to_string(), must)
                    })
                    .collect()
            }
            _ => Vec::new(),
        };
        Rows {
            summary: Summary::of(neff),
            members,
            aliases,
        }
    }
}

/// Now, as a row's `scanned_at` spells it: UTC, ISO 8601, to the second.
fn now_utc() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}
