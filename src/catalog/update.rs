//! Keeping the catalogue current: one `neff scan --index` pass. Files whose
//! stat identity is unchanged are answered from the database without a
//! read; new or changed files are read (record and rows from one open) and
//! their rows replaced, in batched write transactions; rows of files gone
//! from the walked roots are deleted (not those under a bucket prefix whose
//! listing failed). A bucket prefix is read while it is listed, as the
//! plain scan reads it: each object answered or read once its listing page
//! has arrived.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use rusqlite::{params, Connection, Transaction};

use super::entry_cols::{entry_cols, EntryCols};
use super::keys::{key_below, key_found, key_of, options_key};
use super::retire;
use super::schema::{self, err, NEFF_COLUMNS};
use super::visit::{How, Lookup, Records, Rows, Stat, Visit};
use crate::error::{Error, Result};
use crate::places::{Keep, Walked};
use crate::scan::drive::{self, Find, Looked, Visitor};
use crate::scan::{Record, ScanOptions};
use crate::source::Source;

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
    /// Its compile-cache entry's graph hash, flags hash and flags.
    cols: EntryCols,
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
    match id {
        Some(id) => delete_row(tx, id, key),
        None => Ok(0),
    }
}

/// Deletes row `id` and its members, tensors and aliases if it is still
/// `key`'s (the row judged, by the same key bytes); returns how many rows
/// of `neffs` went (0 or 1).
fn delete_row(tx: &Transaction<'_>, id: i64, key: &str) -> rusqlite::Result<usize> {
    let still: bool = tx
        .prepare_cached("SELECT count(*) FROM neffs WHERE id = ?1 AND key = ?2")?
        .query_row(params![id, key], |r| r.get::<_, i64>(0))?
        > 0;
    if !still {
        return Ok(0);
    }
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

/// Writes `f`'s rows (replacing its key's); returns its row's id.
fn insert(tx: &Transaction<'_>, f: &Fresh, options: &str) -> rusqlite::Result<i64> {
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
        t(f.cols.graph_hash.clone()),
        t(f.cols.flags_hash.clone()),
        t(f.cols.compile_flags.clone()),
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
    let Some(rows) = &f.rows else { return Ok(id) };
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
    Ok(id)
}

/// Writes `batch` in one transaction; returns the ids of its rows.
fn write_batch(
    conn: &mut Connection,
    db: &Path,
    batch: &[Fresh],
    options: &str,
) -> Result<Vec<i64>> {
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(err(db))?;
    let mut ids = Vec::with_capacity(batch.len());
    for f in batch {
        ids.push(insert(&tx, f, options).map_err(err(db))?);
    }
    tx.commit().map_err(err(db))?;
    Ok(ids)
}

/// The prefix every key found under `root` starts with (its own key, and
/// a `/`).
fn under(root: &Source) -> (String, String) {
    let exact = key_of(root);
    let mut dir = exact.clone();
    if !dir.ends_with('/') {
        dir.push('/');
    }
    (exact, dir)
}

/// Scans `roots` as [`crate::scan::list`] and [`crate::scan::scan`] do, keeping the
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
    roots: &[impl Clone + Into<Source>],
    opts: &ScanOptions,
    emit: &(dyn Fn(Record, Origin) + Sync),
) -> Result<Update> {
    scan_indexed_listing(db, rebuild, roots, opts, &|_| (), emit)
}

/// [`scan_indexed`], reading the objects of a bucket or repository prefix
/// as its listing pages arrive, as [`crate::scan::scan_listing`] does (a warm
/// object is answered from its row as soon as it is listed, a new one read
/// then), and telling `listed(n)` each time `n` more files are queued (a
/// progress bar's length). A sharded scan lists everything first.
///
/// Rows under a prefix whose listing failed are kept: what it holds is
/// unknown, not gone.
pub fn scan_indexed_listing(
    db: &Path,
    rebuild: bool,
    roots: &[impl Clone + Into<Source>],
    opts: &ScanOptions,
    listed: &(dyn Fn(usize) + Sync),
    emit: &(dyn Fn(Record, Origin) + Sync),
) -> Result<Update> {
    let mut conn = schema::open_rw(db, rebuild)?;
    let options = options_key(opts);
    // Rows above this id were written by this scan (or by another since
    // it began): none of them is retired.
    let before = last_id(&conn, db)?;
    let roots = crate::source::all_of(roots);
    let real_roots: Vec<(&Path, Option<PathBuf>)> = roots
        .iter()
        .map(|r| {
            let real = r.local_path().and_then(|p| std::fs::canonicalize(p).ok());
            (r.path(), real)
        })
        .collect();
    let keep = opts.walk.keep()?;
    let records = Records::new(db);
    let indexing = Indexing {
        lookup: Lookup {
            roots: &real_roots,
            options: &options,
            records: &records,
            opts,
        },
        sink: Sink::new(&mut conn, db, &options, emit),
        cold: std::sync::OnceLock::new(),
    };
    let place = drive::drive(&roots, opts, listed, &indexing)?;
    let cold = indexing.cold.get().copied().unwrap_or(false);
    let mut tally = indexing.sink.finish(cold)?;
    refresh(&mut conn, db, &tally.refreshed)?;
    if let Some(all) = &place.all {
        // A shard looks for every file of the walk: the rows of the
        // other shards' files are found too.
        tally
            .found
            .extend(rows_of(&conn, db, all, &real_roots, &place.linked)?);
    }
    let removed = if records.failed() {
        log::warn!(
            "{}: some rows could not be looked up: no row is retired this time",
            db.display()
        );
        0
    } else {
        let looked = || {
            let Looked {
                walked,
                linked,
                unlisted,
                ..
            } = &place;
            looked(&roots, unlisted, walked, &real_roots, linked, keep)
        };
        retire_gone(&mut conn, db, before, tally.found, looked)?
    };
    Ok(Update {
        from_index: tally.from_index,
        read: tally.read,
        removed,
    })
}

/// The catalogue's [`Visitor`]: each file found looked up
/// ([`Lookup`]), its result written and emitted ([`Sink`]); a cold load
/// decided when the scan starts.
struct Indexing<'a> {
    lookup: Lookup<'a>,
    sink: Sink<'a>,
    /// Whether this is a cold load ([`cold_load`]), once the scan started.
    cold: std::sync::OnceLock<bool>,
}

impl Visitor for Indexing<'_> {
    type Out = Visit;
    fn places(&self) -> bool {
        true
    }
    fn start(&self, files: Option<usize>) -> Result<()> {
        let cold = self.sink.cold_load(files)?;
        let _ = self.cold.set(cold);
        Ok(())
    }
    fn visit(&self, found: Find<'_>, scratch: &mut crate::reader::Scratch) -> Visit {
        self.lookup.visit(found, scratch)
    }
    fn done(&self, v: Visit) {
        self.sink.done(v)
    }
    fn failed(&self, r: Record) {
        (self.sink.emit)(r, Origin::Read)
    }
    fn path(v: &Visit) -> &str {
        &v.record.path
    }
}

/// The largest row id now (0 in an empty catalogue).
fn last_id(conn: &Connection, db: &Path) -> Result<i64> {
    conn.query_row("SELECT coalesce(max(id), 0) FROM neffs", [], |r| r.get(0))
        .map_err(err(db))
}

/// The ids of the rows of `paths` (keyed as the walk's files are).
fn rows_of(
    conn: &Connection,
    db: &Path,
    paths: &[Source],
    real_roots: &[(&Path, Option<PathBuf>)],
    linked: &HashSet<PathBuf>,
) -> Result<Vec<i64>> {
    let mut st = conn
        .prepare("SELECT id FROM neffs WHERE key = ?1")
        .map_err(err(db))?;
    let mut ids = Vec::new();
    for p in paths {
        let key = key_found(p, real_roots, linked);
        let mut rows = st.query([key]).map_err(err(db))?;
        if let Some(r) = rows.next().map_err(err(db))? {
            ids.push(r.get(0).map_err(err(db))?);
        }
    }
    Ok(ids)
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
    emit: &'a (dyn Fn(Record, Origin) + Sync),
    conn: Mutex<&'a mut Connection>,
    /// Records read and not yet written.
    pending: Mutex<Vec<Fresh>>,
    /// The first write that failed.
    write_err: Mutex<Option<Error>>,
    hits: AtomicUsize,
    read: AtomicUsize,
    refreshed: Mutex<Vec<(String, Record)>>,
    /// The ids of the rows visited files had, and of the rows written.
    found: Mutex<Vec<i64>>,
}

/// What a [`Sink`] was given, once all of it is written.
struct Tally {
    /// Records answered from the database.
    from_index: usize,
    /// Files read.
    read: usize,
    /// The hits whose compile-cache entry's state changed, by key.
    refreshed: Vec<(String, Record)>,
    /// The ids of the rows the files visited had, and of those written:
    /// what this scan found.
    found: Vec<i64>,
}

impl<'a> Sink<'a> {
    /// An empty sink writing to `conn` (the catalogue at `db`), rows
    /// stamped with the scan's `options`, records going on to `emit`.
    fn new(
        conn: &'a mut Connection,
        db: &'a Path,
        options: &'a str,
        emit: &'a (dyn Fn(Record, Origin) + Sync),
    ) -> Sink<'a> {
        Sink {
            db,
            options,
            emit,
            conn: Mutex::new(conn),
            pending: Mutex::new(Vec::new()),
            write_err: Mutex::new(None),
            hits: AtomicUsize::new(0),
            read: AtomicUsize::new(0),
            refreshed: Mutex::new(Vec::new()),
            found: Mutex::new(Vec::new()),
        }
    }

    /// Whether this is a cold load (an empty catalogue, and many `files`
    /// to read, or a walk or listing of unknown size, `None`): if so, the
    /// secondary indexes are dropped here, to be built once at its end
    /// ([`Sink::finish`]) instead of row by row.
    fn cold_load(&self, files: Option<usize>) -> Result<bool> {
        if files.is_some_and(|n| n < 4 * BATCH) {
            return Ok(false);
        }
        let conn = self.conn.lock().expect("lock");
        let rows: i64 = conn
            .query_row("SELECT count(*) FROM neffs", [], |r| r.get(0))
            .map_err(err(self.db))?;
        Ok(rows == 0 && schema::drop_indexes(&conn, self.db).is_ok())
    }

    /// Takes one visited file: counts it, queues a read one's record and
    /// rows for the writer (when it has an identity to key them on), notes
    /// what [`Tally`] reports, and emits the record.
    fn done(&self, v: Visit) {
        let Visit {
            key,
            row,
            record,
            how,
        } = v;
        if let Some(id) = row {
            self.found.lock().expect("lock").push(id);
        }
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
                remote,
            } => {
                self.read.fetch_add(1, Ordering::Relaxed);
                if let Some(stat) = stat {
                    self.queue(Fresh {
                        key: key.clone(),
                        scanned_at,
                        stat,
                        json: json(&record),
                        cols: match record.cache_key {
                            Some(_) => entry_cols(&record.path, &key, remote),
                            None => EntryCols::default(),
                        },
                        record: record.clone(),
                        rows: rows.map(|r| *r),
                    });
                }
                Origin::Read
            }
        };
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
        match write_batch(&mut c, self.db, &batch, self.options) {
            Ok(ids) => self.found.lock().expect("lock").extend(ids),
            Err(e) => {
                self.write_err.lock().expect("lock").get_or_insert(e);
            }
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
            found: self.found.into_inner().expect("lock"),
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
    roots: &[Source],
    unlisted: &[PathBuf],
    walked: &'a Walked,
    real_roots: &[(&Path, Option<PathBuf>)],
    linked: &HashSet<PathBuf>,
    keep: Keep,
) -> retire::Looked<'a> {
    let listed_prefixes = roots
        .iter()
        .filter(|r| r.is_prefix() && !unlisted.iter().any(|u| u == r.path()))
        .map(|r| under(r).1)
        .collect();
    let key = |d: &Path| key_below(d, real_roots, linked);
    retire::Looked::new(walked, &key, listed_prefixes, keep)
}

/// Deletes, in one transaction, the rows this scan did not find (their
/// ids not in `found`) where it looked for them (`looked`, made only when
/// such a row exists; not those of places it did not look at: retire.rs),
/// of those that were there before it began (ids up to `before`);
/// returns how many went.
fn retire_gone<'a>(
    conn: &mut Connection,
    db: &Path,
    before: i64,
    mut found: Vec<i64>,
    looked: impl FnOnce() -> retire::Looked<'a>,
) -> Result<usize> {
    found.sort_unstable();
    found.dedup();
    // Read through the key's index on a connection of its own (with
    // SQLite's small page cache, not the writer's), each row not found
    // judged as it comes: only the rows to retire are held.
    let ro = schema::open_ro(db)?;
    let mut st = ro.prepare("SELECT id, key FROM neffs").map_err(err(db))?;
    let rows = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .map_err(err(db))?;
    let mut looked = Some(looked);
    let mut judge: Option<retire::Looked<'a>> = None;
    let mut gone: Vec<(i64, String)> = Vec::new();
    for row in rows {
        let (id, key): (i64, String) = row.map_err(err(db))?;
        if id > before || found.binary_search(&id).is_ok() {
            continue;
        }
        let j = judge.get_or_insert_with(|| looked.take().expect("made once")());
        if j.looked_for(&key) {
            gone.push((id, key));
        }
    }
    if gone.is_empty() {
        return Ok(0);
    }
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(err(db))?;
    let mut removed = 0;
    for (id, key) in &gone {
        removed += delete_row(&tx, *id, key).map_err(err(db))?;
    }
    tx.commit().map_err(err(db))?;
    Ok(removed)
}
