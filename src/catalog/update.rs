//! Keeping the catalogue current: one `neff scan --index` pass. Files whose
//! stat identity is unchanged are answered from the database without a
//! read; new or changed files are read (record and rows from one open) and
//! their rows replaced, in batched write transactions; rows of files gone
//! from the walked roots are deleted (not those under a bucket prefix whose
//! listing failed). A bucket prefix is read while it is listed, as the
//! plain scan reads it: each object answered or read once its listing page
//! has arrived.

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use rusqlite::{params, Connection, Transaction};

use super::keys::{key_of, options_key};
use super::retire;
use super::schema::{self, err, NEFF_COLUMNS};
use super::visit::{Cached, How, Lookup, Records, Rows, Stat, Visit};
use crate::error::{Error, Result};
use crate::places::{Keep, Walked};
use crate::scan::{self, Record, ScanOptions};

/// Records read are written to the database this many at a time, each
/// batch one transaction: a killed scan loses at most one batch of work.
const BATCH: usize = 256;

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

/// Every row's key; with its identity, and whether it was read with this
/// scan's `options`, for the files this scan will look at (the keys
/// `wanted` says yes to). Records stay in the catalogue until a row
/// answers ([`super::visit::Records`]).
fn load(
    conn: &Connection,
    db: &Path,
    options: &str,
    wanted: &dyn Fn(&str) -> bool,
) -> Result<HashMap<String, Option<Cached>>> {
    let mut st = conn
        .prepare("SELECT key, dev, ino, size, mtime_ns, ctime_ns, options = ?1, id FROM neffs")
        .map_err(err(db))?;
    let mut rows = st.query([options]).map_err(err(db))?;
    let mut out = HashMap::new();
    while let Some(r) = rows.next().map_err(err(db))? {
        let path: String = r.get(0).map_err(err(db))?;
        let cached = if wanted(&path) {
            let c = || -> rusqlite::Result<Cached> {
                Ok(Cached {
                    id: r.get(7)?,
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
/// with where it came from; walk errors come first (sorted: among the
/// records by path).
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
    if opts.sorted && scan::streamed_prefixes(roots, opts).is_some() {
        // Read while listed, the records are held to be sorted.
        let unsorted = opts.clone().sorted(false);
        let mut update = None;
        fn path(held: &(Record, Origin)) -> &str {
            &held.0.path
        }
        scan::hold_sorted(path, &|(r, o)| emit(r, o), |held| {
            let each = |r: Record, o: Origin| held((r, o));
            update = Some(scan_indexed_listing(
                db, rebuild, roots, &unsorted, listed, &each,
            )?);
            Ok(())
        })?;
        return Ok(update.expect("set when the scan succeeded"));
    }
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
    } = scan::list_kept(rest, None, &opts.walk, true)?;
    let real_roots: Vec<(&PathBuf, Option<PathBuf>)> = roots
        .iter()
        .map(|r| (r, std::fs::canonicalize(r).ok()))
        .collect();
    let key_list = keys_of(&all, &real_roots, &linked, opts.jobs)?;
    // (By the path's bytes: cheaper to hash than its components.)
    let keys: HashMap<&OsStr, &str> = all
        .iter()
        .zip(&key_list)
        .map(|(p, k)| (p.as_os_str(), k.as_str()))
        .collect();
    // This shard's files (all of them, unsharded: borrowed, not copied).
    let mut mine: std::borrow::Cow<'_, [PathBuf]> = match opts.shard {
        None => (&all[..]).into(),
        Some(_) => scan::shard_of(all.clone(), opts.shard).into(),
    };
    if opts.sorted {
        scan::by_shown(mine.to_mut());
    }
    let options = options_key(opts);
    let cached = load_for(&conn, db, &options, &mine, &keys, prefixes)?;
    // Sorted, the walk's errors go among the records; else first.
    let mut walk_errors = walk_errors;
    if !opts.sorted {
        for r in walk_errors.drain(..) {
            emit(r, Origin::Read);
        }
    }

    let keep = Keep::new(&opts.walk.globs, opts.walk.max_depth)?;
    let seen = scan::Seen::keeping(keep.clone());
    let records = Records::new(db);
    let lookup = Lookup {
        keys: &keys,
        cached: &cached,
        options: &options,
        records: &records,
        opts,
        seen: &seen,
        met: &met,
        versions: &versions,
    };
    let cold = cold_load(&conn, db, streamed.is_some(), mine.len())?;
    let sink = Sink::new(&mut conn, db, &options, streamed.is_some(), emit);
    let visit = |p: &Path, scratch: &mut crate::reader::Scratch| lookup.visit(p, scratch);
    let done = |v: Visit| sink.done(v);
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
        _ if opts.sorted => {
            listed(mine.len());
            scan::scan_ordered(&mine, walk_errors, opts.jobs, &visit, &done, &|r| {
                emit(r, Origin::Read)
            })?;
        }
        _ => {
            listed(mine.len());
            scan::scan_with(&mine, opts.jobs, &visit, &done)?;
        }
    }
    let tally = sink.finish(cold)?;
    unlisted.extend(seen.unlisted());
    refresh(&mut conn, db, &tally.refreshed)?;

    let found: HashSet<&str> = key_list
        .iter()
        .chain(&tally.listed_keys)
        .map(String::as_str)
        .collect();
    let looked = looked(roots, &unlisted, &walked, &real_roots, &linked, keep);
    let removed = retire_gone(&mut conn, db, &cached, &found, &looked)?;
    Ok(Update {
        from_index: tally.from_index,
        read: tally.read,
        removed,
    })
}

/// Every walked path's key ([`key_below`]), worked out on a pool of `jobs`
/// workers: all of them, not only this shard's, since the removal of
/// vanished rows needs them all.
fn keys_of(
    all: &[PathBuf],
    real_roots: &[(&PathBuf, Option<PathBuf>)],
    linked: &HashSet<PathBuf>,
    jobs: usize,
) -> Result<Vec<String>> {
    use rayon::prelude::*;
    let pool = crate::pool::counting_pool(jobs)
        .map_err(|e| Error::usage(format!("cannot start {jobs} workers: {e}")))?;
    Ok(pool.install(|| {
        all.par_iter()
            .map(|p| key_below(p, real_roots, linked))
            .collect()
    }))
}

/// The rows this scan may answer from or retire ([`load`]): every row's
/// key, and the rest of the row for this shard's files (`mine`) and for
/// every row under a prefix still to be listed.
fn load_for(
    conn: &Connection,
    db: &Path,
    options: &str,
    mine: &[PathBuf],
    keys: &HashMap<&OsStr, &str>,
    prefixes: &[PathBuf],
) -> Result<HashMap<String, Option<Cached>>> {
    let wanted: HashSet<&str> = mine.iter().map(|p| keys[p.as_os_str()]).collect();
    let listing: Vec<String> = prefixes.iter().map(|r| under(r).1).collect();
    load(conn, db, options, &|k| {
        wanted.contains(k) || listing.iter().any(|d| k.starts_with(d.as_str()))
    })
}

/// Whether this is a cold load (an empty catalogue, and many `files` to
/// read or a prefix of unknown size, `streamed`): if so, the secondary
/// indexes are dropped here, to be built once at its end
/// ([`Sink::finish`]) instead of row by row.
fn cold_load(conn: &Connection, db: &Path, streamed: bool, files: usize) -> Result<bool> {
    if !(streamed || files >= 4 * BATCH) {
        return Ok(false);
    }
    let rows: i64 = conn
        .query_row("SELECT count(*) FROM neffs", [], |r| r.get(0))
        .map_err(err(db))?;
    Ok(rows == 0 && schema::drop_indexes(conn, db).is_ok())
}

/// Where each visited file goes, on the worker that visited it: counted,
/// noted (a hit whose compile-cache entry's state changed; the key of a
/// file visited while prefixes are listed), and emitted. A read file with
/// an identity is queued for the writer, which writes the queue [`BATCH`]
/// records at a time, each batch one transaction on the one connection,
/// on whichever worker filled it.
struct Sink<'a> {
    db: &'a Path,
    options: &'a str,
    /// Whether prefixes are read while they are listed (the keys of what
    /// is visited are then noted: a walk's are known before).
    streamed: bool,
    emit: &'a (dyn Fn(Record, Origin) + Sync),
    conn: Mutex<&'a mut Connection>,
    /// Records read and not yet written.
    pending: Mutex<Vec<Fresh>>,
    /// The first write that failed.
    write_err: Mutex<Option<Error>>,
    hits: AtomicUsize,
    read: AtomicUsize,
    refreshed: Mutex<Vec<(String, Record)>>,
    listed_keys: Mutex<Vec<String>>,
}

/// What a [`Sink`] was given, once all of it is written.
struct Tally {
    /// Records answered from the database.
    from_index: usize,
    /// Files read.
    read: usize,
    /// The hits whose compile-cache entry's state changed, by key.
    refreshed: Vec<(String, Record)>,
    /// The keys of what was visited while prefixes were listed.
    listed_keys: Vec<String>,
}

impl<'a> Sink<'a> {
    /// An empty sink writing to `conn` (the catalogue at `db`), rows
    /// stamped with the scan's `options`, records going on to `emit`.
    fn new(
        conn: &'a mut Connection,
        db: &'a Path,
        options: &'a str,
        streamed: bool,
        emit: &'a (dyn Fn(Record, Origin) + Sync),
    ) -> Sink<'a> {
        Sink {
            db,
            options,
            streamed,
            emit,
            conn: Mutex::new(conn),
            pending: Mutex::new(Vec::new()),
            write_err: Mutex::new(None),
            hits: AtomicUsize::new(0),
            read: AtomicUsize::new(0),
            refreshed: Mutex::new(Vec::new()),
            listed_keys: Mutex::new(Vec::new()),
        }
    }

    /// Takes one visited file: counts it, queues a read one's record and
    /// rows for the writer (when it has an identity to key them on), notes
    /// what [`Tally`] reports, and emits the record.
    fn done(&self, v: Visit) {
        let Visit { key, record, how } = v;
        let origin = match how {
            How::Hit { refreshed } => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                if refreshed {
                    self.refreshed
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
                self.read.fetch_add(1, Ordering::Relaxed);
                if let Some(stat) = stat {
                    self.queue(Fresh {
                        key: key.clone(),
                        scanned_at,
                        stat,
                        json: json(&record),
                        record: record.clone(),
                        rows: rows.map(|r| *r),
                    });
                }
                Origin::Read
            }
        };
        if self.streamed {
            self.listed_keys.lock().expect("lock").push(key);
        }
        (self.emit)(record, origin);
    }

    /// Queues one read record for the writer; when that fills a batch,
    /// writes the batch.
    fn queue(&self, fresh: Fresh) {
        let full = {
            let mut p = self.pending.lock().expect("lock");
            p.push(fresh);
            (p.len() >= BATCH).then(|| std::mem::take(&mut *p))
        };
        if let Some(batch) = full {
            self.flush(batch);
        }
    }

    /// Writes `batch` in one transaction; a failure is kept (the first
    /// one) for [`Sink::finish`] to return.
    fn flush(&self, batch: Vec<Fresh>) {
        if batch.is_empty() {
            return;
        }
        let mut c = self.conn.lock().expect("lock");
        if let Err(e) = write_batch(&mut c, self.db, &batch, self.options) {
            self.write_err.lock().expect("lock").get_or_insert(e);
        }
    }

    /// Writes what is still queued and, after a `cold` load, builds the
    /// secondary indexes; the first write that failed is the error.
    fn finish(self, cold: bool) -> Result<Tally> {
        self.flush(std::mem::take(&mut *self.pending.lock().expect("lock")));
        if cold {
            let c = self.conn.lock().expect("lock");
            schema::create_indexes(&c, self.db)?;
        }
        if let Some(e) = self.write_err.into_inner().expect("lock") {
            return Err(e);
        }
        Ok(Tally {
            from_index: self.hits.into_inner(),
            read: self.read.into_inner(),
            refreshed: self.refreshed.into_inner().expect("lock"),
            listed_keys: self.listed_keys.into_inner().expect("lock"),
        })
    }
}

/// Compile-cache entries whose state changed (`refreshed`: key, record):
/// same rows, the new state, in one transaction.
fn refresh(conn: &mut Connection, db: &Path, refreshed: &[(String, Record)]) -> Result<()> {
    if refreshed.is_empty() {
        return Ok(());
    }
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(err(db))?;
    for (key, r) in refreshed {
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
    tx.commit().map_err(err(db))
}

/// Where this scan looked for files ([`retire`]): the directories the walk
/// listed (`walked`, keyed as the walk's files are) and the prefixes among
/// `roots` listed to their end (not in `unlisted`), as `keep` filters them.
fn looked<'a>(
    roots: &[PathBuf],
    unlisted: &[PathBuf],
    walked: &'a Walked,
    real_roots: &[(&PathBuf, Option<PathBuf>)],
    linked: &HashSet<PathBuf>,
    keep: Keep,
) -> retire::Looked<'a> {
    let listed_prefixes = roots
        .iter()
        .filter(|r| retire::is_prefix(r) && !unlisted.contains(r))
        .map(|r| under(r).1)
        .collect();
    let key = |d: &Path| key_below(d, real_roots, linked);
    retire::Looked::new(walked, &key, listed_prefixes, keep)
}

/// Deletes, in one transaction, the rows of `cached` whose files this scan
/// did not find (`found`: every key it visited) where it looked for them
/// (`looked`; not those of places it did not look at: retire.rs); returns
/// how many went.
fn retire_gone(
    conn: &mut Connection,
    db: &Path,
    cached: &HashMap<String, Option<Cached>>,
    found: &HashSet<&str>,
    looked: &retire::Looked<'_>,
) -> Result<usize> {
    let gone: Vec<&String> = cached
        .keys()
        .filter(|k| !found.contains(k.as_str()) && looked.looked_for(k))
        .collect();
    if gone.is_empty() {
        return Ok(0);
    }
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(err(db))?;
    let mut removed = 0;
    for k in gone {
        removed += delete_key(&tx, k).map_err(err(db))?;
    }
    tx.commit().map_err(err(db))?;
    Ok(removed)
}
