//! Keeping the catalogue current: one `neff scan --index` pass. Files whose
//! stat identity is unchanged are answered from the database without a
//! read; new or changed files are read (record and rows from one open) and
//! their rows replaced, in batched write transactions; rows of files gone
//! from the walked roots are deleted (not those under a bucket prefix whose
//! listing failed). A bucket prefix is read while it is listed, as the
//! plain scan reads it: each object answered or read once its listing page
//! has arrived.

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use rusqlite::{params, Connection, Transaction};

use super::keys::{self, key_of, options_key};
use super::retire;
use super::schema::{self, err, NEFF_COLUMNS};
use crate::accessors;
use crate::error::{Error, Result};
use crate::json::views::TensorMap;
use crate::reader::Neff;
use crate::scan::{self, Record, ScanOptions};
use crate::summary::Summary;

/// Records read are written to the database this many at a time, each
/// batch one transaction: a killed scan loses at most one batch of work.
const BATCH: usize = 256;

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
fn identity(p: &Path, version: Option<&(u64, String)>) -> std::io::Result<Stat> {
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

/// Where a record of an indexed scan came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The database: the file's identity was unchanged.
    Index,
    /// The file was read (new, changed, or not cacheable).
    Read,
}

/// What one indexed scan did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Update {
    /// Records answered from the database.
    pub from_index: usize,
    /// Files read.
    pub read: usize,
    /// Rows deleted because their file is gone from the walked roots.
    pub removed: usize,
}

/// The rows of one readable NEFF besides its record.
pub(crate) struct Rows {
    summary: Summary,
    members: Vec<MemberRow>,
    aliases: Vec<(String, String, bool)>,
}

struct MemberRow {
    name: String,
    kind: &'static str,
    size: u64,
    offset: u64,
    mode: u32,
    mtime: i64,
    link: Option<String>,
}

impl Rows {
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

/// A record read this pass, waiting for its batch's transaction.
struct Fresh {
    key: String,
    scanned_at: String,
    stat: Stat,
    record: Record,
    json: String,
    rows: Option<Rows>,
}

/// [`key_of`] for a path the walk found: its root's real path joined with
/// the rest when the walk went through no link to reach it (one realpath
/// per root instead of one per file), else the path resolved whole.
fn key_below(p: &Path, roots: &[(&PathBuf, Option<PathBuf>)], linked: &HashSet<PathBuf>) -> String {
    if !linked.is_empty() && p.ancestors().any(|a| linked.contains(a)) {
        return key_of(p);
    }
    for (root, real) in roots {
        if let (Ok(rest), Some(real)) = (p.strip_prefix(root), real) {
            if rest.as_os_str().is_empty() {
                return real.display().to_string();
            }
            return real.join(rest).display().to_string();
        }
    }
    key_of(p)
}

/// Now, as a row's `scanned_at` spells it: UTC, ISO 8601, to the second.
fn now_utc() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

struct Cached {
    stat: Stat,
    options: String,
    record: String,
}

/// Every row's key; with its identity, options and record for the files
/// this scan will look at (the keys `wanted` says yes to), so that memory
/// follows the scan's own files, not the whole catalogue's records.
fn load(
    conn: &Connection,
    db: &Path,
    wanted: &dyn Fn(&str) -> bool,
) -> Result<HashMap<String, Option<Cached>>> {
    let mut st = conn
        .prepare("SELECT key, dev, ino, size, mtime_ns, ctime_ns, options, record FROM neffs")
        .map_err(err(db))?;
    let mut rows = st.query([]).map_err(err(db))?;
    let mut out = HashMap::new();
    while let Some(r) = rows.next().map_err(err(db))? {
        let path: String = r.get(0).map_err(err(db))?;
        let cached = if wanted(&path) {
            let c = || -> rusqlite::Result<Cached> {
                Ok(Cached {
                    stat: Stat {
                        dev: r.get(1)?,
                        ino: r.get(2)?,
                        size: r.get(3)?,
                        mtime_ns: r.get(4)?,
                        ctime_ns: r.get(5)?,
                    },
                    options: r.get(6)?,
                    record: r.get(7)?,
                })
            };
            // A row that does not decode is read again (and replaced).
            c().ok()
        } else {
            None
        };
        out.insert(path, cached);
    }
    Ok(out)
}

fn delete_key(tx: &Transaction<'_>, key: &str) -> rusqlite::Result<usize> {
    let id: Option<i64> = tx
        .prepare_cached("SELECT id FROM neffs WHERE key = ?1")?
        .query_row([key], |r| r.get(0))
        .map(Some)
        .or_else(|e| match e {
            rusqlite::Error::QueryReturnedNoRows => Ok(None),
            e => Err(e),
        })?;
    let Some(id) = id else { return Ok(0) };
    for t in ["members", "tensors", "aliases"] {
        tx.prepare_cached(&format!("DELETE FROM {t} WHERE neff_id = ?1"))?
            .execute([id])?;
    }
    tx.prepare_cached("DELETE FROM neffs WHERE id = ?1")?
        .execute([id])
}

fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("plain data serializes")
}

/// SQLite integers are 64-bit signed: larger values are stored as text.
fn int(v: Option<u128>) -> rusqlite::types::Value {
    use rusqlite::types::Value;
    match v {
        None => Value::Null,
        Some(n) => i64::try_from(n).map_or_else(|_| Value::Text(n.to_string()), Value::Integer),
    }
}

fn insert(tx: &Transaction<'_>, f: &Fresh, options: &str) -> rusqlite::Result<()> {
    use rusqlite::types::Value;
    delete_key(tx, &f.key)?;
    let r = &f.record;
    let s = f.rows.as_ref().map(|rows| &rows.summary);
    let u = |v: Option<u64>| int(v.map(u128::from));
    let b = |v: Option<bool>| v.map_or(Value::Null, |b| Value::Integer(b.into()));
    let t = |v: Option<String>| v.map_or(Value::Null, Value::Text);
    let values: Vec<Value> = vec![
        Value::Text(f.key.clone()),
        Value::Text(r.path.clone()),
        Value::Integer(f.stat.dev),
        Value::Integer(f.stat.ino),
        Value::Integer(f.stat.size),
        Value::Integer(f.stat.mtime_ns),
        Value::Integer(f.stat.ctime_ns),
        Value::Text(f.scanned_at.clone()),
        Value::Text(options.to_string()),
        Value::Integer(r.ok.into()),
        t(r.error.clone()),
        u(r.bytes),
        u(r.pkg_version),
        b(r.compressed),
        u(r.members.map(|n| n as u64)),
        t(r.arch.clone()),
        u(r.num_cores),
        int(r.cc_world_size),
        b(r.hash_ok),
        t(r.uuid.clone()),
        t(r.name.clone()),
        u(r.data_size),
        u(r.inputs.map(|x| x.count)),
        u(r.inputs.map(|x| x.bytes)),
        u(r.outputs.map(|x| x.count)),
        u(r.outputs.map(|x| x.bytes)),
        u(r.aliases.map(|n| n as u64)),
        b(r.must_alias),
        t(r.neff_features.as_ref().map(json)),
        u(r.feature_bits),
        t(r.cache_key.clone()),
        t(r.compiler.clone()),
        t(r.cache_state.map(|s| s.name().to_string())),
        t(r.cache_reason.clone()),
        Value::Text(json(&r.errors)),
        u(s.map(|s| s.header_size)),
        u(s.map(|s| s.version_major)),
        u(s.map(|s| s.version_minor)),
        t(s.map(|s| s.build_version.clone())),
        t(s.map(|s| s.hash.clone())),
        u(s.map(|s| s.num_tpb.into())),
        u(s.map(|s| s.requested_tpb_count.into())),
        t(s.map(|s| json(&s.tpb_per_node))),
        t(s.map(|s| json(&s.features))),
        u(s.map(|s| s.vnc_size.into())),
        u(s.map(|s| s.tar_size)),
        u(s.map(|s| s.entries as u64)),
        Value::Text(f.json.clone()),
    ];
    debug_assert_eq!(values.len(), NEFF_COLUMNS.len());
    let sql = format!(
        "INSERT INTO neffs ({}) VALUES ({})",
        NEFF_COLUMNS.join(", "),
        vec!["?"; NEFF_COLUMNS.len()].join(", ")
    );
    tx.prepare_cached(&sql)?
        .execute(rusqlite::params_from_iter(values))?;
    let id = tx.last_insert_rowid();
    let Some(rows) = &f.rows else { return Ok(()) };
    let mut st = tx.prepare_cached(
        "INSERT INTO members (neff_id, name, kind, size, offset, mode, mtime, link) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    for m in &rows.members {
        st.execute(params![
            id,
            m.name,
            m.kind,
            int(Some(m.size.into())),
            int(Some(m.offset.into())),
            m.mode,
            m.mtime,
            m.link
        ])?;
    }
    let mut st = tx.prepare_cached(
        "INSERT INTO tensors (neff_id, subgraph, name, direction, size, shape, dtype) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    for sg in &rows.summary.subgraphs {
        for (dir, list) in [("IN", &sg.inputs), ("OUT", &sg.outputs)] {
            for x in list {
                st.execute(params![
                    id,
                    sg.name,
                    x.name,
                    dir,
                    int(x.size.map(u128::from)),
                    x.shape.as_ref().map(json),
                    x.dtype
                ])?;
            }
        }
    }
    let mut st = tx.prepare_cached(
        "INSERT INTO aliases (neff_id, input, output, must_alias) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for (i, o, m) in &rows.aliases {
        st.execute(params![id, i, o, m])?;
    }
    Ok(())
}

fn write_batch(conn: &mut Connection, db: &Path, batch: &[Fresh], options: &str) -> Result<()> {
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(err(db))?;
    for f in batch {
        insert(&tx, f, options).map_err(err(db))?;
    }
    tx.commit().map_err(err(db))
}

/// The prefix every key found under `root` starts with (its own key, and
/// a `/`).
fn under(root: &Path) -> (String, String) {
    let exact = key_of(root);
    let mut dir = exact.clone();
    if !dir.ends_with('/') {
        dir.push('/');
    }
    (exact, dir)
}

/// Scans `roots` as [`scan::list`] and [`scan::scan`] do, keeping the
/// catalogue at `db` current (created if missing; emptied first with
/// `rebuild`). `emit` gets every record, as the plain scan would make it,
/// with where it came from; walk errors come first, as in the plain scan.
///
/// Rows are keyed by each file's canonical path (realpath; a URL normalised): a file has one
/// row however its path is typed, and a record answered from its row
/// carries the path as typed now.
pub fn scan_indexed(
    db: &Path,
    rebuild: bool,
    roots: &[PathBuf],
    opts: &ScanOptions,
    emit: &(dyn Fn(Record, Origin) + Sync),
) -> Result<Update> {
    scan_indexed_listing(db, rebuild, roots, opts, &|_| (), emit)
}

/// [`scan_indexed`], reading the objects of a bucket or repository prefix
/// as its listing pages arrive, as [`scan::scan_listing`] does (a warm
/// object is answered from its row as soon as it is listed, a new one read
/// then), and telling `listed(n)` each time `n` more files are queued (a
/// progress bar's length). A sharded scan lists everything first.
///
/// Rows under a prefix whose listing failed are kept: what it holds is
/// unknown, not gone.
pub fn scan_indexed_listing(
    db: &Path,
    rebuild: bool,
    roots: &[PathBuf],
    opts: &ScanOptions,
    listed: &(dyn Fn(usize) + Sync),
    emit: &(dyn Fn(Record, Origin) + Sync),
) -> Result<Update> {
    use rayon::prelude::*;
    let mut conn = schema::open_rw(db, rebuild)?;
    // Prefixes read while they are listed, if any; the rest walked first.
    let streamed = scan::streamed_prefixes(roots, opts);
    let (prefixes, rest) = match &streamed {
        Some((p, r)) => (p.as_slice(), r.as_slice()),
        None => (&[][..], roots),
    };
    let scan::Found {
        paths: all,
        errors: walk_errors,
        versions,
        linked,
        met,
        mut unlisted,
        listed: walked,
    } = scan::list_versions(rest, None, &opts.walk)?;
    let pool = crate::pool::counting_pool(opts.jobs)
        .map_err(|e| Error::usage(format!("cannot start {} workers: {e}", opts.jobs)))?;
    // Every file's key (the removal of vanished rows needs all of them,
    // not only this shard's).
    let real_roots: Vec<(&PathBuf, Option<PathBuf>)> = roots
        .iter()
        .map(|r| (r, std::fs::canonicalize(r).ok()))
        .collect();
    let key_list: Vec<String> = pool.install(|| {
        all.par_iter()
            .map(|p| key_below(p, &real_roots, &linked))
            .collect()
    });
    // (By the path's bytes: cheaper to hash than its components.)
    let keys: HashMap<&std::ffi::OsStr, &str> = all
        .iter()
        .zip(&key_list)
        .map(|(p, k)| (p.as_os_str(), k.as_str()))
        .collect();
    let mine = scan::shard_of(all.clone(), opts.shard);
    let options = options_key(opts);
    let wanted: HashSet<&str> = mine.iter().map(|p| keys[p.as_os_str()]).collect();
    // The rows of objects still to be listed: every row under a prefix.
    let listing: Vec<String> = prefixes.iter().map(|r| under(r).1).collect();
    let cached = load(&conn, db, &|k| {
        wanted.contains(k) || listing.iter().any(|d| k.starts_with(d.as_str()))
    })?;
    drop(wanted);
    for r in walk_errors {
        emit(r, Origin::Read);
    }

    // Each file: answered from its row when its identity is unchanged (the
    // stat, or the listing's size and ETag, is the cost), else read.
    let keep = crate::places::Keep::new(&opts.walk.globs, opts.walk.max_depth)?;
    let seen = scan::Seen::keeping(keep.clone());
    let key = |p: &Path| match keys.get(p.as_os_str()) {
        Some(k) => k.to_string(),
        // Found by a listing during the scan.
        None => key_of(p),
    };
    let visit = |p: &Path, scratch: &mut crate::reader::Scratch| -> Visit {
        let key = key(p);
        let met = seen.met(&met, p);
        // The identity is taken before the read: a file changed during the
        // read gets a new identity, so the next scan reads it again.
        let version = seen.version(&versions, p);
        let version = version.or_else(|| keys::named_object_version(p));
        let stat = identity(p, version.as_ref()).ok();
        let hit = match (cached.get(&key).and_then(Option::as_ref), stat) {
            (Some(c), Some(stat)) if c.stat == stat && c.options == options => {
                serde_json::from_str::<Record>(&c.record).ok()
            }
            _ => None,
        };
        if let Some(mut r) = hit {
            r.path = crate::shown::path(p);
            let mut refreshed = false;
            if r.cache_state.is_some() || r.cache_key.is_some() {
                // The entry's state is not part of the file's identity:
                // judge it again, from what this scan met of the entry.
                let before = (r.cache_state, r.cache_reason.clone());
                scan::cache_entry(p, &mut r, &opts.open, met);
                refreshed = (r.cache_state, r.cache_reason.clone()) != before;
            }
            return Visit {
                key,
                record: r,
                how: How::Hit { refreshed },
            };
        }
        let scanned_at = now_utc();
        let (record, rows) = scan::record_with(p, opts, scratch, met, |n| Box::new(Rows::of(n)));
        Visit {
            key,
            record,
            how: How::Read {
                stat,
                scanned_at,
                rows,
            },
        }
    };

    let mut update = Update::default();
    let hits = AtomicUsize::new(0);
    let read = AtomicUsize::new(0);
    let refreshed = Mutex::new(Vec::new());
    // The keys of what a scan read while listing visited (a walk's are in
    // `key_list`).
    let listed_keys = Mutex::new(Vec::new());
    let conn_m = Mutex::new(&mut conn);
    let pending: Mutex<Vec<Fresh>> = Mutex::new(Vec::new());
    let write_err: Mutex<Option<Error>> = Mutex::new(None);
    let flush = |batch: Vec<Fresh>| {
        if batch.is_empty() {
            return;
        }
        let mut c = conn_m.lock().expect("lock");
        if let Err(e) = write_batch(&mut c, db, &batch, &options) {
            write_err.lock().expect("lock").get_or_insert(e);
        }
    };
    let done = |v: Visit| {
        let Visit { key, record, how } = v;
        let origin = match how {
            How::Hit { refreshed: changed } => {
                hits.fetch_add(1, Ordering::Relaxed);
                if changed {
                    refreshed
                        .lock()
                        .expect("lock")
                        .push((key.clone(), record.clone()));
                }
                Origin::Index
            }
            How::Read {
                stat,
                scanned_at,
                rows,
            } => {
                read.fetch_add(1, Ordering::Relaxed);
                if let Some(stat) = stat {
                    let fresh = Fresh {
                        key: key.clone(),
                        scanned_at,
                        stat,
                        json: json(&record),
                        record: record.clone(),
                        rows: rows.map(|r| *r),
                    };
                    let full = {
                        let mut p = pending.lock().expect("lock");
                        p.push(fresh);
                        (p.len() >= BATCH).then(|| std::mem::take(&mut *p))
                    };
                    if let Some(batch) = full {
                        flush(batch);
                    }
                }
                Origin::Read
            }
        };
        if streamed.is_some() {
            listed_keys.lock().expect("lock").push(key);
        }
        emit(record, origin);
    };
    // A cold load (an empty catalogue and many files to read, or a prefix
    // of unknown size) builds the secondary indexes once at its end
    // instead of row by row.
    let cold = (streamed.is_some() || mine.len() >= 4 * BATCH) && {
        let c = conn_m.lock().expect("lock");
        let rows: i64 = c
            .query_row("SELECT count(*) FROM neffs", [], |r| r.get(0))
            .map_err(err(db))?;
        rows == 0 && schema::drop_indexes(&c, db).is_ok()
    };
    match &streamed {
        #[cfg(feature = "remote")]
        Some(_) => scan::read_while_listing(
            prefixes,
            &mine,
            opts.jobs,
            &seen,
            listed,
            &visit,
            &done,
            &|r| emit(r, Origin::Read),
        )?,
        _ => {
            listed(mine.len());
            scan::scan_with(&mine, opts.jobs, &visit, &done)?;
        }
    }
    flush(std::mem::take(&mut *pending.lock().expect("lock")));
    if cold {
        let c = conn_m.lock().expect("lock");
        schema::create_indexes(&c, db)?;
    }
    if let Some(e) = write_err.into_inner().expect("lock") {
        return Err(e);
    }
    update.from_index = hits.into_inner();
    update.read = read.into_inner();
    unlisted.extend(seen.unlisted());

    // Compile-cache entries whose state changed: same rows, the new state.
    let refreshed = refreshed.into_inner().expect("lock");
    if !refreshed.is_empty() {
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(err(db))?;
        for (key, r) in &refreshed {
            tx.execute(
                "UPDATE neffs SET cache_state = ?2, cache_reason = ?3, record = ?4 WHERE key = ?1",
                params![
                    key,
                    r.cache_state.map(|s| s.name()),
                    r.cache_reason,
                    json(r)
                ],
            )
            .map_err(err(db))?;
        }
        tx.commit().map_err(err(db))?;
    }

    // Rows of files this scan looked for and did not find (not those of
    // places it did not look at: retire.rs).
    let listed_keys = listed_keys.into_inner().expect("lock");
    let found: HashSet<&str> = key_list
        .iter()
        .chain(&listed_keys)
        .map(String::as_str)
        .collect();
    let listed_prefixes = roots
        .iter()
        .filter(|r| retire::is_prefix(r) && !unlisted.contains(r))
        .map(|r| under(r).1)
        .collect();
    let key = |d: &Path| key_below(d, &real_roots, &linked);
    let looked = retire::Looked::new(&walked, &key, listed_prefixes, keep);
    let gone: Vec<&String> = cached
        .keys()
        .filter(|k| !found.contains(k.as_str()) && looked.looked_for(k))
        .collect();
    if !gone.is_empty() {
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(err(db))?;
        for k in gone {
            update.removed += delete_key(&tx, k).map_err(err(db))?;
        }
        tx.commit().map_err(err(db))?;
    }
    Ok(update)
}

/// What became of one file of an indexed scan: its record, and how it
/// was made.
struct Visit {
    key: String,
    record: Record,
    how: How,
}

enum How {
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
