//! One file of an indexed scan, looked at: its key and its identity (the
//! stat, or what a listing said of the object) looked up, then either its
//! record answered from its row (identity and scan options unchanged: the
//! hit path) or the file read, record and rows from one open (the read
//! path). What becomes of the result is update.rs's.

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::keys;
use crate::accessors;
use crate::json::views::TensorMap;
use crate::reader::{Neff, Scratch};
use crate::scan::drive::Find;
use crate::scan::{Record, ScanOptions};
use crate::source::Source;
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
pub(super) fn identity(p: &Source, version: Option<&(u64, String)>) -> std::io::Result<Stat> {
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
        None => match p.local_path() {
            Some(p) => Stat::of(p),
            None => Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "a remote object its server gave no version of",
            )),
        },
    }
}

/// What a row holds that a lookup compares: the identity its file had,
/// and whether it was read with this scan's options.
struct Cached {
    stat: Stat,
    same_options: bool,
}

/// The rows of the files a scan looks at, looked up one at a time by key
/// on read-only connections (one per worker at most, kept for the scan),
/// so that a scan holds no row it is not looking at.
pub(super) struct Records<'a> {
    db: &'a Path,
    idle: std::sync::Mutex<Vec<rusqlite::Connection>>,
    /// Whether a lookup failed (the database could not be read): a row
    /// then may exist that no visit saw, and none is retired.
    failed: std::sync::atomic::AtomicBool,
}

impl<'a> Records<'a> {
    pub(super) fn new(db: &'a Path) -> Records<'a> {
        Records {
            db,
            idle: std::sync::Mutex::new(Vec::new()),
            failed: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Whether any lookup failed.
    pub(super) fn failed(&self) -> bool {
        self.failed.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The row keyed `key`: its id (`None`: no row), and its record when
    /// the row was made from a file of identity `stat` with the `options`
    /// key and its record decodes (else the file is read again).
    fn look(&self, key: &str, stat: Option<Stat>, options: &str) -> (Option<i64>, Option<Record>) {
        let idle = self.idle.lock().expect("lock").pop();
        let conn = match idle {
            Some(c) => Ok(c),
            None => super::schema::open_ro(self.db),
        };
        let got = match conn {
            Ok(conn) => {
                let got = Self::query(&conn, key, stat, options);
                self.idle.lock().expect("lock").push(conn);
                got
            }
            Err(e) => Err(e.to_string()),
        };
        match got {
            Ok(found) => found,
            Err(e) => {
                log::warn!(
                    "{}: cannot look up the row of {key}: {e}",
                    self.db.display()
                );
                self.failed
                    .store(true, std::sync::atomic::Ordering::Relaxed);
                (None, None)
            }
        }
    }

    /// [`Records::look`] on `conn`; its error as text.
    fn query(
        conn: &rusqlite::Connection,
        key: &str,
        stat: Option<Stat>,
        options: &str,
    ) -> std::result::Result<(Option<i64>, Option<Record>), String> {
        let mut st = conn
            .prepare_cached(
                "SELECT id, dev, ino, size, mtime_ns, ctime_ns, options = ?2, record \
                 FROM neffs WHERE key = ?1",
            )
            .map_err(|e| e.to_string())?;
        let mut rows = st
            .query(rusqlite::params![key, options])
            .map_err(|e| e.to_string())?;
        let Some(r) = rows.next().map_err(|e| e.to_string())? else {
            return Ok((None, None));
        };
        let id: i64 = r.get(0).map_err(|e| e.to_string())?;
        let cached = || -> rusqlite::Result<Cached> {
            Ok(Cached {
                stat: Stat {
                    dev: r.get(1)?,
                    ino: r.get(2)?,
                    size: r.get(3)?,
                    mtime_ns: r.get(4)?,
                    ctime_ns: r.get(5)?,
                },
                same_options: r.get(6)?,
            })
        };
        // A row that does not decode is read again (and replaced); its
        // record is fetched (from its overflow pages) only when it answers.
        let record = match (cached(), stat) {
            (Ok(c), Some(stat)) if c.stat == stat && c.same_options => r
                .get::<_, String>(7)
                .ok()
                .and_then(|j| serde_json::from_str::<Record>(&j).ok()),
            _ => None,
        };
        Ok((Some(id), record))
    }
}

/// What each file of an indexed scan is judged by, shared by the workers:
/// how its key is worked out, and where its row is looked up.
pub(super) struct Lookup<'a> {
    /// The roots with their real paths: a walked path's key
    /// ([`keys::key_below`]).
    pub(super) roots: &'a [(&'a Path, Option<PathBuf>)],
    /// This scan's options key: a row read with others is read again.
    pub(super) options: &'a str,
    /// Where each file's row is looked up.
    pub(super) records: &'a Records<'a>,
    pub(super) opts: &'a ScanOptions,
}

impl Lookup<'_> {
    /// Looks at a file the scan found: answered from its row when the
    /// row's identity and options are the file's and this scan's, else
    /// read. A path through a link the walk followed is keyed by its path
    /// resolved whole.
    pub(super) fn visit(&self, mut found: Find<'_>, scratch: &mut Scratch) -> Visit {
        let source = found.source;
        let key = match found.linked {
            true => keys::key_of(source),
            false => keys::key_found(source, self.roots, &HashSet::new()),
        };
        // The identity is taken before the read: a file changed during the
        // read gets a new identity, so the next scan reads it again.
        let version = found.version.take();
        let stat = identity(
            source,
            version
                .or_else(|| keys::named_object_version(source))
                .as_ref(),
        )
        .ok();
        let (row, record) = self.records.look(&key, stat, self.options);
        match record {
            Some(record) => self.hit(found, key, row, record),
            None => self.read(found, key, row, stat, scratch),
        }
    }

    /// The hit path: the row's record `r`, carrying `p` as typed now, and
    /// for a compile-cache entry its state judged again from what this scan
    /// met of the entry (`met`), which is not part of the file's identity.
    fn hit(&self, found: Find<'_>, key: String, row: Option<i64>, mut r: Record) -> Visit {
        r.path = found.source.shown();
        let mut refreshed = false;
        if r.cache_state.is_some() || r.cache_key.is_some() {
            let before = (r.cache_state, r.cache_reason.clone());
            found.judge_entry(&mut r, self.opts);
            refreshed = (r.cache_state, r.cache_reason.clone()) != before;
        }
        Visit {
            key,
            row,
            record: r,
            how: How::Hit { refreshed },
        }
    }

    /// The read path: `p` read, its record and (when it opens) its rows
    /// from one open, stamped with the time the read began.
    fn read(
        &self,
        found: Find<'_>,
        key: String,
        row: Option<i64>,
        stat: Option<Stat>,
        scratch: &mut Scratch,
    ) -> Visit {
        let scanned_at = now_utc();
        let remote = found.source.is_remote();
        let (record, rows) = found.read(self.opts, scratch, |n| Box::new(Rows::of(n)));
        // A NEFF left unread so as not to move its access time: its record
        // says who scanned, not what the file is, and is not kept.
        let stat = stat.filter(|_| !record.left_unread());
        Visit {
            key,
            row,
            record,
            how: How::Read {
                stat,
                scanned_at,
                rows,
                remote,
            },
        }
    }
}

/// What became of one file of an indexed scan: its record, and how it
/// was made.
pub(super) struct Visit {
    pub(super) key: String,
    /// The id of the row its key had when it was looked at (`None`: none).
    pub(super) row: Option<i64>,
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
        /// Whether it is a remote object.
        remote: bool,
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
