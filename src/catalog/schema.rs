//! The catalogue's SQL schema, its version, and opening a database file
//! safely: refusing one that is not ours, corrupt, or from a newer `neff`,
//! and migrating one from an older `neff`.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use crate::error::{Error, Result};
use crate::source::Source;

/// `PRAGMA application_id` of a neff catalogue ("NEFF" in ASCII).
pub const APPLICATION_ID: i32 = 0x4E45_4646;

/// `PRAGMA user_version` this `neff` writes. A database with a lower
/// version is migrated on the next update; a higher one is refused.
pub const SCHEMA_VERSION: i32 = 4;

/// The columns of `neffs` after `id`, in table order (used by
/// [`merge_sql`] and the insert statement).
pub const NEFF_COLUMNS: &[&str] = &[
    "key",
    "path",
    "dev",
    "ino",
    "size",
    "mtime_ns",
    "ctime_ns",
    "scanned_at",
    "options",
    "ok",
    "error",
    "bytes",
    "pkg_version",
    "compressed",
    "members",
    "arch",
    "num_cores",
    "cc_world_size",
    "hash_ok",
    "uuid",
    "name",
    "data_size",
    "inputs",
    "input_bytes",
    "outputs",
    "output_bytes",
    "aliases",
    "must_alias",
    "neff_features",
    "feature_bits",
    "cache_key",
    "compiler",
    "cache_state",
    "cache_reason",
    "errors",
    "header_size",
    "version_major",
    "version_minor",
    "build_version",
    "hash",
    "num_tpb",
    "requested_tpb_count",
    "tpb_per_node",
    "features",
    "vnc_size",
    "tar_size",
    "entries",
    "record",
    "graph_hash",
    "flags_hash",
    "compile_flags",
];

/// The schema (version `SCHEMA_VERSION`), as `neff index schema` prints it.
pub const SCHEMA: &str = "\
-- One row per NEFF file the scan saw (readable or not), and per
-- compile-cache entry holding no NEFF.
CREATE TABLE neffs (
  id            INTEGER PRIMARY KEY,
  key           TEXT NOT NULL UNIQUE,  -- the file's canonical path (realpath; a URL normalised): one row per file however its path is typed
  path          TEXT NOT NULL,         -- as the scan that read it printed it
  -- stat identity: a file whose five values are unchanged is not re-read
  dev           INTEGER NOT NULL,
  ino           INTEGER NOT NULL,
  size          INTEGER NOT NULL,
  mtime_ns      INTEGER NOT NULL,
  ctime_ns      INTEGER NOT NULL,
  scanned_at    TEXT,                  -- when the file was read: UTC, ISO 8601 (NULL: a row from schema 1, not read since)
  options       TEXT NOT NULL,         -- JSON object: the scan options the row was read with (limits, verify)
  -- the scan record's fields (see `neff scan --json`)
  ok            INTEGER NOT NULL,      -- 0/1: a readable NEFF
  error         TEXT,                  -- why not, when ok = 0
  bytes         INTEGER,
  pkg_version   INTEGER,
  compressed    INTEGER,
  members       INTEGER,               -- count of regular members
  arch          TEXT,
  num_cores     INTEGER,
  cc_world_size INTEGER,               -- NULL: no collectives (or refused); text if > 2^63-1
  hash_ok       INTEGER,               -- NULL unless scanned with --verify
  uuid          TEXT,
  name          TEXT,
  data_size     INTEGER,
  inputs        INTEGER,               -- count of input tensors
  input_bytes   INTEGER,
  outputs       INTEGER,
  output_bytes  INTEGER,
  aliases       INTEGER,               -- count of alias_map entries
  must_alias    INTEGER,
  neff_features TEXT,                  -- JSON array
  feature_bits  INTEGER,
  cache_key     TEXT,                  -- compile-cache entries only
  compiler      TEXT,                  -- their neuronxcc-<version> directory's version
  cache_state   TEXT,                  -- their entry's state: ok, corrupt, failed, locked, incomplete, empty (judged at every scan)
  cache_reason  TEXT,                  -- why that entry is not ok
  errors        TEXT NOT NULL,         -- JSON object: field -> refusal
  -- header fields `neff info --json` prints (NULL when ok = 0)
  header_size   INTEGER,
  version_major INTEGER,
  version_minor INTEGER,
  build_version TEXT,
  hash          TEXT,
  num_tpb       INTEGER,
  requested_tpb_count INTEGER,
  tpb_per_node  TEXT,                  -- JSON array
  features      TEXT,                  -- JSON array of feature names
  vnc_size      INTEGER,
  tar_size      INTEGER,
  entries       INTEGER,               -- all tar entries
  record        TEXT NOT NULL,         -- the scan's NDJSON line, verbatim
  -- compile-cache entries of the compiler wrapper (MODULE_<graph hash>+<flags hash>)
  graph_hash    TEXT,                  -- the graph hash of the entry's name
  flags_hash    TEXT,                  -- its flags hash (NULL: the name has none)
  compile_flags TEXT                   -- JSON array: its compile_flags.json or .txt (NULL: neither, in a bucket, or unread)
);
-- Every tar entry of every readable NEFF, in archive order.
CREATE TABLE members (
  neff_id INTEGER NOT NULL REFERENCES neffs(id),
  name    TEXT NOT NULL,
  kind    TEXT NOT NULL,               -- file, dir, symlink, hardlink, other
  size    INTEGER NOT NULL,
  offset  INTEGER NOT NULL,            -- of the data, in the tar stream
  mode    INTEGER NOT NULL,
  mtime   INTEGER NOT NULL,
  link    TEXT                         -- link target
);
-- Every input and output of every sgNN/def.json, as `neff info` shows them.
CREATE TABLE tensors (
  neff_id   INTEGER NOT NULL REFERENCES neffs(id),
  subgraph  TEXT NOT NULL,             -- sg00, sgLnk/sg00, ...
  name      TEXT NOT NULL,
  direction TEXT NOT NULL,             -- IN or OUT
  size      INTEGER,
  shape     TEXT,                      -- JSON array, e.g. [1,128,768]
  dtype     TEXT
);
-- The tensor map's alias_map (none when `neff get alias` refuses).
CREATE TABLE aliases (
  neff_id    INTEGER NOT NULL REFERENCES neffs(id),
  input      TEXT NOT NULL,
  output     TEXT NOT NULL,
  must_alias INTEGER NOT NULL          -- the entry's own must_alias flag
);
CREATE INDEX neffs_uuid ON neffs(uuid);
CREATE INDEX neffs_hash ON neffs(hash);
CREATE INDEX neffs_arch ON neffs(arch);
CREATE INDEX members_neff ON members(neff_id);
CREATE INDEX tensors_neff ON tensors(neff_id);
CREATE INDEX tensors_name ON tensors(name);
CREATE INDEX aliases_neff ON aliases(neff_id);
CREATE INDEX neffs_path ON neffs(path);
-- A serving control plane's questions (docs/GUIDE.md): the NEFFs that fit a
-- target (path last: their paths come from the index, in order), failed
-- entries per compiler version, the newest entry of a key.
CREATE INDEX neffs_target ON neffs(arch, cc_world_size, num_cores, ok, path);
CREATE INDEX neffs_cache_state ON neffs(cache_state, compiler);
CREATE INDEX neffs_cache_key ON neffs(cache_key, mtime_ns);
-- Why a compile missed: every flag set a graph was compiled with.
CREATE INDEX neffs_graph ON neffs(graph_hash, flags_hash);
-- The common questions, as views.
-- Readable NEFFs by what they need: arch, NeuronCores, world size.
CREATE VIEW neffs_by_target AS
  SELECT arch, num_cores, cc_world_size, count(*) AS neffs, sum(bytes) AS bytes
  FROM neffs WHERE ok = 1
  GROUP BY arch, num_cores, cc_world_size;
-- Compile-cache entries by compiler version and state.
CREATE VIEW cache_states AS
  SELECT compiler, cache_state AS state, count(*) AS entries, sum(coalesce(bytes, 0)) AS bytes
  FROM neffs WHERE cache_state IS NOT NULL
  GROUP BY compiler, cache_state;
-- Every row by when its file was read, newest first (what changed since a
-- time: WHERE scanned_at > '2026-12-01T00:00:00Z').
CREATE VIEW changes AS
  SELECT scanned_at, path, key, ok, error, arch, uuid, cache_state
  FROM neffs ORDER BY scanned_at DESC;
";

/// The schema as a script that makes an empty catalogue (`neff index
/// schema`): the pragmas that mark the file as ours, then [`SCHEMA`].
pub fn schema_script() -> String {
    format!(
        "-- neff scan --index catalogue, schema version {SCHEMA_VERSION}\n\
         PRAGMA application_id = {APPLICATION_ID};\n\
         PRAGMA user_version = {SCHEMA_VERSION};\n{SCHEMA}"
    )
}

/// Steps from each older version to the next: `MIGRATIONS[v - 1]` takes a
/// database at `user_version` v to v + 1 (an empty database, version 0,
/// gets [`SCHEMA`] whole). Each step's SQL is followed by its fix-up in
/// Rust ([`fix_up`]).
const MIGRATIONS: &[&str] = &[V1_TO_V2, V2_TO_V3, V3_TO_V4];

/// Schema 1 to 2: rows keyed by the file's canonical path (its path as
/// typed until the fix-up canonicalises it), a time of scan (unknown for
/// these rows: NULL), the options as JSON (rewritten by the fix-up), the
/// compile-cache entry's state in place of `complete` (judged at the next
/// scan), the views.
const V1_TO_V2: &str = "\
CREATE TABLE neffs_v2 (
  id            INTEGER PRIMARY KEY,
  key           TEXT NOT NULL UNIQUE,
  path          TEXT NOT NULL,
  dev           INTEGER NOT NULL,
  ino           INTEGER NOT NULL,
  size          INTEGER NOT NULL,
  mtime_ns      INTEGER NOT NULL,
  ctime_ns      INTEGER NOT NULL,
  scanned_at    TEXT,
  options       TEXT NOT NULL,
  ok            INTEGER NOT NULL,
  error         TEXT,
  bytes         INTEGER,
  pkg_version   INTEGER,
  compressed    INTEGER,
  members       INTEGER,
  arch          TEXT,
  num_cores     INTEGER,
  cc_world_size INTEGER,
  hash_ok       INTEGER,
  uuid          TEXT,
  name          TEXT,
  data_size     INTEGER,
  inputs        INTEGER,
  input_bytes   INTEGER,
  outputs       INTEGER,
  output_bytes  INTEGER,
  aliases       INTEGER,
  must_alias    INTEGER,
  neff_features TEXT,
  feature_bits  INTEGER,
  cache_key     TEXT,
  compiler      TEXT,
  cache_state   TEXT,
  cache_reason  TEXT,
  errors        TEXT NOT NULL,
  header_size   INTEGER,
  version_major INTEGER,
  version_minor INTEGER,
  build_version TEXT,
  hash          TEXT,
  num_tpb       INTEGER,
  requested_tpb_count INTEGER,
  tpb_per_node  TEXT,
  features      TEXT,
  vnc_size      INTEGER,
  tar_size      INTEGER,
  entries       INTEGER,
  record        TEXT NOT NULL
);
INSERT INTO neffs_v2 SELECT
  id, path, path, dev, ino, size, mtime_ns, ctime_ns, NULL, options,
  ok, error, bytes, pkg_version, compressed, members, arch, num_cores,
  cc_world_size, hash_ok, uuid, name, data_size, inputs, input_bytes,
  outputs, output_bytes, aliases, must_alias, neff_features, feature_bits,
  cache_key, NULL, NULL, NULL, errors, header_size, version_major,
  version_minor, build_version, hash, num_tpb, requested_tpb_count,
  tpb_per_node, features, vnc_size, tar_size, entries, record
FROM neffs;
DROP TABLE neffs;
ALTER TABLE neffs_v2 RENAME TO neffs;
CREATE INDEX neffs_uuid ON neffs(uuid);
CREATE INDEX neffs_hash ON neffs(hash);
CREATE INDEX neffs_arch ON neffs(arch);
CREATE INDEX neffs_path ON neffs(path);
CREATE VIEW neffs_by_target AS
  SELECT arch, num_cores, cc_world_size, count(*) AS neffs, sum(bytes) AS bytes
  FROM neffs WHERE ok = 1
  GROUP BY arch, num_cores, cc_world_size;
CREATE VIEW cache_states AS
  SELECT compiler, cache_state AS state, count(*) AS entries, sum(coalesce(bytes, 0)) AS bytes
  FROM neffs WHERE cache_state IS NOT NULL
  GROUP BY compiler, cache_state;
CREATE VIEW changes AS
  SELECT scanned_at, path, key, ok, error, arch, uuid, cache_state
  FROM neffs ORDER BY scanned_at DESC;
";

/// Schema 2 to 3: the indexes that answer a serving control plane's
/// questions without a scan of `neffs` (the NEFFs that fit a target, failed
/// entries per compiler version, the newest entry of a cache key).
const V2_TO_V3: &str = "\
CREATE INDEX IF NOT EXISTS neffs_target ON neffs(arch, cc_world_size, num_cores, ok, path);
CREATE INDEX IF NOT EXISTS neffs_cache_state ON neffs(cache_state, compiler);
CREATE INDEX IF NOT EXISTS neffs_cache_key ON neffs(cache_key, mtime_ns);
";

/// Schema 3 to 4: the graph hash, flags hash and flags of each row's
/// compile-cache entry, as columns, and their index; all added by its
/// fix-up ([`add_entry_cols`]), which adds only the columns missing.
const V3_TO_V4: &str = "-- the columns graph_hash, flags_hash, compile_flags: added in Rust\n";

/// What a step leaves to Rust: after [`V1_TO_V2`], each row's key becomes
/// its file's canonical path (rows of one file under several typed paths
/// fold into the newest) and its options become JSON.
fn fix_up(conn: &Connection, path: &Path, to: i32) -> Result<()> {
    if to == 4 {
        return add_entry_cols(conn, path);
    }
    if to != 2 {
        return Ok(());
    }
    let rows: Vec<(i64, String, String)> = {
        let mut st = conn
            .prepare("SELECT id, path, options FROM neffs ORDER BY id DESC")
            .map_err(err(path))?;
        let rows = st
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(err(path))?;
        rows.collect::<rusqlite::Result<_>>().map_err(err(path))?
    };
    let mut seen = std::collections::HashSet::new();
    for (id, p, options) in rows {
        let key = super::keys::key_of(&Source::of(&p));
        if !seen.insert(key.clone()) {
            // An older row of a file kept under its newest row.
            for t in ["members", "tensors", "aliases"] {
                conn.execute(&format!("DELETE FROM {t} WHERE neff_id = ?1"), [id])
                    .map_err(err(path))?;
            }
            conn.execute("DELETE FROM neffs WHERE id = ?1", [id])
                .map_err(err(path))?;
            continue;
        }
        conn.execute(
            "UPDATE neffs SET key = ?2, options = ?3 WHERE id = ?1",
            rusqlite::params![id, key, super::keys::options_from_v1(&options)],
        )
        .map_err(err(path))?;
    }
    Ok(())
}

/// After [`V3_TO_V4`]: the columns `graph_hash`, `flags_hash` and
/// `compile_flags` (those missing), their index, and their values for
/// every row of a compile-cache entry (its flags read from the entry on
/// disk, where it still is).
fn add_entry_cols(conn: &Connection, path: &Path) -> Result<()> {
    let have: Vec<String> = {
        let mut st = conn
            .prepare("SELECT name FROM pragma_table_info('neffs')")
            .map_err(err(path))?;
        let rows = st.query_map([], |r| r.get(0)).map_err(err(path))?;
        rows.collect::<rusqlite::Result<_>>().map_err(err(path))?
    };
    for col in ["graph_hash", "flags_hash", "compile_flags"] {
        if !have.iter().any(|h| h == col) {
            conn.execute_batch(&format!("ALTER TABLE neffs ADD COLUMN {col} TEXT"))
                .map_err(err(path))?;
        }
    }
    conn.execute_batch("CREATE INDEX IF NOT EXISTS neffs_graph ON neffs(graph_hash, flags_hash)")
        .map_err(err(path))?;
    let rows: Vec<(i64, String, String)> = {
        let mut st = conn
            .prepare("SELECT id, path, key FROM neffs WHERE cache_key IS NOT NULL")
            .map_err(err(path))?;
        let rows = st
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(err(path))?;
        rows.collect::<rusqlite::Result<_>>().map_err(err(path))?
    };
    for (id, p, key) in rows {
        let c = super::entry_cols::entry_cols(&p, &key, Source::of(&p).is_remote());
        if c.graph_hash.is_none() {
            continue;
        }
        conn.execute(
            "UPDATE neffs SET graph_hash = ?2, flags_hash = ?3, compile_flags = ?4 WHERE id = ?1",
            rusqlite::params![id, c.graph_hash, c.flags_hash, c.compile_flags],
        )
        .map_err(err(path))?;
    }
    Ok(())
}

/// The SQL that folds a shard database (written by `neff scan --shard K/N
/// --index shard-K.db`) into `main`, renumbering its ids. Shards are
/// disjoint by construction; a file (by its key) already in `main` is replaced.
pub fn merge_sql(shard_file: &str) -> String {
    let cols = NEFF_COLUMNS.join(", ");
    let quoted = shard_file.replace('\'', "''");
    format!(
        "\
ATTACH '{quoted}' AS shard;
BEGIN;
DELETE FROM members WHERE neff_id IN (SELECT id FROM neffs WHERE key IN (SELECT key FROM shard.neffs));
DELETE FROM tensors WHERE neff_id IN (SELECT id FROM neffs WHERE key IN (SELECT key FROM shard.neffs));
DELETE FROM aliases WHERE neff_id IN (SELECT id FROM neffs WHERE key IN (SELECT key FROM shard.neffs));
DELETE FROM neffs WHERE key IN (SELECT key FROM shard.neffs);
CREATE TEMP TABLE base AS SELECT coalesce(max(id), 0) AS n FROM neffs;
INSERT INTO neffs (id, {cols})
  SELECT id + (SELECT n FROM base), {cols} FROM shard.neffs;
INSERT INTO members SELECT neff_id + (SELECT n FROM base), name, kind, size, offset, mode, mtime, link FROM shard.members;
INSERT INTO tensors SELECT neff_id + (SELECT n FROM base), subgraph, name, direction, size, shape, dtype FROM shard.tensors;
INSERT INTO aliases SELECT neff_id + (SELECT n FROM base), input, output, must_alias FROM shard.aliases;
DROP TABLE base;
COMMIT;
DETACH shard;
"
    )
}

fn sql_err(path: &Path, e: rusqlite::Error) -> Error {
    if let Some(io) = super::busy::io_failure(path, &e) {
        return io;
    }
    let msg = e.to_string().replace('\n', " ");
    Error::Catalog {
        context: format!("index {}: {msg}", path.display()),
        source: Some(Box::new(e)),
    }
}

/// Maps an SQLite error on `path` to the crate's error.
pub(crate) fn err(path: &Path) -> impl Fn(rusqlite::Error) -> Error + '_ {
    move |e| sql_err(path, e)
}

fn pragma_i32(conn: &Connection, name: &str, path: &Path) -> Result<i32> {
    conn.pragma_query_value(None, name, |r| r.get(0))
        .map_err(|e| match &e {
            rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::NotADatabase => {
                Error::catalog(format!(
                    "index {}: not an SQLite database (corrupt, or another kind of file)",
                    path.display()
                ))
            }
            _ => sql_err(path, e),
        })
}

/// Checks that `conn` holds a neff catalogue this build can read: its
/// `application_id`, its `user_version`, and its tables. Returns the
/// version; 0 means an empty database (no tables at all).
fn check(conn: &Connection, path: &Path) -> Result<i32> {
    let app = pragma_i32(conn, "application_id", path)?;
    let version = pragma_i32(conn, "user_version", path)?;
    let tables: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_schema WHERE type = 'table'",
            [],
            |r| r.get(0),
        )
        .map_err(err(path))?;
    if app == 0 && version == 0 && tables == 0 {
        return Ok(0);
    }
    if app != APPLICATION_ID {
        return Err(Error::catalog(format!(
            "index {}: not a neff index (an SQLite database of something else; --rebuild replaces it)",
            path.display()
        )));
    }
    if version > SCHEMA_VERSION {
        return Err(Error::catalog(format!(
            "index {}: schema version {version} is newer than this neff's ({SCHEMA_VERSION}): use a newer neff, or --rebuild",
            path.display()
        )));
    }
    if version < 1 {
        return Err(Error::catalog(format!(
            "index {}: a neff index without a schema version (damaged; --rebuild replaces it)",
            path.display()
        )));
    }
    let want = ["neffs", "members", "tensors", "aliases"];
    for t in want {
        let n: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?1",
                [t],
                |r| r.get(0),
            )
            .map_err(err(path))?;
        if n != 1 {
            return Err(Error::catalog(format!(
                "index {}: table {t} is missing (damaged; --rebuild replaces it)",
                path.display()
            )));
        }
    }
    Ok(version)
}

/// Opens (creating if missing) the catalogue at `path` for updating:
/// WAL journal, a busy timeout, the schema created or migrated in one
/// transaction. With `rebuild`, any file at `path` is removed first.
pub fn open_rw(path: &Path, rebuild: bool) -> Result<Connection> {
    super::busy::check_writable(path)?;
    if rebuild {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut p = path.as_os_str().to_owned();
            p.push(suffix);
            match std::fs::remove_file(&p) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::Io(e)),
            }
        }
    }
    // Two scans creating or migrating one database at once: SQLite's busy
    // handler does not cover every step of that (switching a new file to
    // WAL, reading the schema version of a database being created), so the
    // steps up to a ready schema run under an exclusive flock of the file.
    // (SQLite's own locks are fcntl locks, which flock does not touch.)
    let guard = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(Error::Io)?;
    super::busy::flock_within(&guard, path)?;
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(err(path))?;
    conn.busy_timeout(super::busy::busy_timeout())
        .map_err(err(path))?;
    check(&conn, path)?;
    let mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
        .map_err(err(path))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(Error::catalog(format!(
            "index {}: cannot use a write-ahead log here (journal mode {mode})",
            path.display()
        )));
    }
    // In WAL mode, NORMAL syncs only at checkpoints (a crash of the
    // process loses nothing committed; a power loss at most the last
    // commits). A checkpoint every 64 MiB of log rather than SQLite's 4 MiB:
    // each costs two fsyncs, which on a busy disk cost more than the scan's
    // writes themselves (PERF.md, zoo-index-cold).
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(err(path))?;
    conn.pragma_update(None, "wal_autocheckpoint", 16384)
        .map_err(err(path))?;
    // An 8 MiB page cache. 32 MiB was chosen when a cold scan's batches of
    // member, tensor and alias rows went into five secondary indexes row
    // by row and overflowed a smaller cache (`pagerStress`); a cold load
    // now builds those indexes once at its end, and at 100,000 entries the
    // 32 MiB cost 25 MiB of peak RSS for 0.7 % of CPU (PERF.md, zoo-scale).
    conn.pragma_update(None, "cache_size", -8192)
        .map_err(err(path))?;
    migrate(&conn, path)?;
    create_indexes(&conn, path)?;
    drop(guard);
    Ok(conn)
}

/// The secondary indexes, by name and definition (as MIGRATIONS creates
/// them). A cold load drops them and builds them once after its rows
/// (`drop_indexes`, `create_indexes`): one sort per index instead of
/// a B-tree insert per row.
pub const INDEXES: [(&str, &str); 12] = [
    ("neffs_uuid", "neffs(uuid)"),
    ("neffs_path", "neffs(path)"),
    ("neffs_hash", "neffs(hash)"),
    ("neffs_arch", "neffs(arch)"),
    (
        "neffs_target",
        "neffs(arch, cc_world_size, num_cores, ok, path)",
    ),
    ("neffs_cache_state", "neffs(cache_state, compiler)"),
    ("neffs_cache_key", "neffs(cache_key, mtime_ns)"),
    ("neffs_graph", "neffs(graph_hash, flags_hash)"),
    ("members_neff", "members(neff_id)"),
    ("tensors_neff", "tensors(neff_id)"),
    ("tensors_name", "tensors(name)"),
    ("aliases_neff", "aliases(neff_id)"),
];

/// Drops the secondary indexes (a cold load puts them back at its end).
pub fn drop_indexes(conn: &Connection, path: &Path) -> Result<()> {
    for (name, _) in INDEXES {
        conn.execute_batch(&format!("DROP INDEX IF EXISTS {name}"))
            .map_err(err(path))?;
    }
    Ok(())
}

/// Creates whichever secondary indexes are missing (all of them after a
/// cold load; any a killed cold load left out, at every open).
pub fn create_indexes(conn: &Connection, path: &Path) -> Result<()> {
    for (name, on) in INDEXES {
        conn.execute_batch(&format!("CREATE INDEX IF NOT EXISTS {name} ON {on}"))
            .map_err(err(path))?;
    }
    Ok(())
}

/// Brings the schema to [`SCHEMA_VERSION`] inside one write transaction
/// (re-checking the version under the lock: another process may have
/// created or migrated the database meanwhile).
fn migrate(conn: &Connection, path: &Path) -> Result<()> {
    // Current already: no write transaction (which would wait for another
    // process's, before a single record is read).
    if check(conn, path)? == SCHEMA_VERSION {
        return Ok(());
    }
    // A step that rebuilds `neffs` drops the table the other tables refer
    // to: foreign keys are off while it runs (SQLite's own procedure for a
    // table rebuild; the pragma is a no-op inside a transaction), checked
    // before the commit, and restored after.
    let fk: i32 = conn
        .pragma_query_value(None, "foreign_keys", |r| r.get(0))
        .map_err(err(path))?;
    conn.pragma_update(None, "foreign_keys", 0)
        .map_err(err(path))?;
    let done = migrate_in_transaction(conn, path);
    conn.pragma_update(None, "foreign_keys", fk)
        .map_err(err(path))?;
    done
}

fn migrate_in_transaction(conn: &Connection, path: &Path) -> Result<()> {
    conn.execute_batch("BEGIN IMMEDIATE").map_err(err(path))?;
    let run = || -> Result<()> {
        let mut v = check(conn, path)?;
        if v == 0 {
            conn.pragma_update(None, "application_id", APPLICATION_ID)
                .map_err(err(path))?;
            conn.execute_batch(SCHEMA).map_err(err(path))?;
            v = SCHEMA_VERSION;
            conn.pragma_update(None, "user_version", v)
                .map_err(err(path))?;
        }
        while v < SCHEMA_VERSION {
            conn.execute_batch(MIGRATIONS[v as usize - 1])
                .map_err(err(path))?;
            v += 1;
            fix_up(conn, path, v)?;
            conn.pragma_update(None, "user_version", v)
                .map_err(err(path))?;
            let broken: i64 = conn
                .query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| {
                    r.get(0)
                })
                .map_err(err(path))?;
            if broken != 0 {
                return Err(Error::catalog(format!(
                    "index {}: migrating to schema version {v} left {broken} rows without their file's row (nothing changed)",
                    path.display()
                )));
            }
        }
        Ok(())
    };
    match run() {
        Ok(()) => conn.execute_batch("COMMIT").map_err(err(path)),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

/// Opens an existing catalogue read-only and checks it is one this build
/// reads (exactly [`SCHEMA_VERSION`]: an older one needs an update first).
pub fn open_ro(path: &Path) -> Result<Connection> {
    if !path.is_file() {
        return Err(Error::catalog(format!(
            "index {}: no such index file",
            path.display()
        )));
    }
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(err(path))?;
    conn.busy_timeout(super::busy::busy_timeout())
        .map_err(err(path))?;
    match check(&conn, path)? {
        SCHEMA_VERSION => Ok(conn),
        0 => Err(Error::catalog(format!(
            "index {}: an empty database, not a neff index yet",
            path.display()
        ))),
        v => Err(Error::catalog(format!(
            "index {}: schema version {v} is older than this neff's ({SCHEMA_VERSION}): run `neff scan --index` on it to migrate it",
            path.display()
        ))),
    }
}
