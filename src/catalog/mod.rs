//! The scan's persistent catalogue: an SQLite database (`neff scan --index
//! FILE`) holding one row per NEFF (its scan record, stat identity and
//! header), and its members, tensors and aliases, for services to query by
//! SQL from any language, or through [`Catalog`] from Rust.
//!
//! | file | what it owns |
//! |---|---|
//! | `schema` | the SQL schema, its version, safe opening, migration, the shard merge SQL |
//! | `update` | one indexed scan: reuse unchanged files' rows, read and replace the rest |
//! | `visit` | one file of that scan: its identity looked up, then its row's record reused or the file read |
//! | this module | [`Catalog`], the read-only API |
//!
//! The database is in WAL mode: a [`Catalog`] opened read-only keeps
//! answering (from the last committed state) while another process updates.
//!
//! ```
//! use neff::catalog::{Catalog, Filter};
//! use neff::pack::{pack, PackEntry, PackOptions};
//! use neff::scan::ScanOptions;
//!
//! // A one-NEFF zoo, indexed.
//! let dir = tempfile::tempdir()?;
//! let kelf = br#"{"graphs":[{"name":"sg00"}],"target":"sunda"}"#.to_vec();
//! let bytes = pack(&[PackEntry::file("kelf-0.json", kelf, 0)], &PackOptions::default())?;
//! let file = dir.path().join("a.neff");
//! std::fs::write(&file, bytes)?;
//! let db = dir.path().join("zoo.db");
//! neff::catalog::scan_indexed(&db, false, &[file.clone()], &ScanOptions::default(), &|_, _| {})?;
//!
//! let catalog = Catalog::open(&db)?;
//! let rec = catalog.by_path(file.to_str().unwrap())?.expect("indexed");
//! assert!(rec.ok);
//! assert_eq!(rec.arch.as_deref(), Some("sunda"));
//! assert_eq!(catalog.by_uuid(rec.uuid.as_deref().unwrap())?.len(), 1);
//! let sunda = catalog.records(&Filter::default().arch("sunda"))?;
//! assert_eq!(sunda.len(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod busy;
mod entry_cols;
mod keys;
mod retire;
mod schema;
mod update;
mod visit;

pub use busy::{busy_timeout, set_busy_timeout, DEFAULT_BUSY_TIMEOUT};
pub use schema::{merge_sql, schema_script, INDEXES, NEFF_COLUMNS, SCHEMA, SCHEMA_VERSION};
pub use update::{scan_indexed, scan_indexed_listing};

use std::path::{Path, PathBuf};

use rusqlite::types::Value;
use rusqlite::Connection;

use crate::error::{Error, Result};
use crate::scan::Record;
use crate::source::Source;
use schema::err;

/// A read-only view of a catalogue.
pub struct Catalog {
    conn: Connection,
    path: PathBuf,
}

/// Which records [`Catalog::records`] returns: every condition given must
/// hold (the default returns them all), in path order.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Filter {
    /// `ok` is this.
    pub ok: Option<bool>,
    /// The kelf's target arch is this.
    pub arch: Option<String>,
    /// The collective world size is at least this.
    pub min_cc_world_size: Option<u64>,
    /// The collective world size is at most this.
    pub max_cc_world_size: Option<u64>,
    /// The path starts with this.
    pub path_prefix: Option<String>,
    /// Some subgraph takes an input of this name.
    pub input: Option<String>,
    /// Some subgraph takes an input of this shape (as JSON, `[1,128]`).
    pub input_shape: Option<Vec<u64>>,
    /// The header's uuid is this (32 lower-case hex digits).
    pub uuid: Option<String>,
}

impl Filter {
    /// Sets `ok`: `ok` is this.
    #[must_use]
    pub fn ok(mut self, v: bool) -> Self {
        self.ok = Some(v);
        self
    }

    /// Sets `arch`: the kelf's target arch is this.
    #[must_use]
    pub fn arch(mut self, v: impl Into<String>) -> Self {
        self.arch = Some(v.into());
        self
    }

    /// Sets `min_cc_world_size`: the collective world size is at least this.
    #[must_use]
    pub fn min_cc_world_size(mut self, v: u64) -> Self {
        self.min_cc_world_size = Some(v);
        self
    }

    /// Sets `max_cc_world_size`: the collective world size is at most this.
    #[must_use]
    pub fn max_cc_world_size(mut self, v: u64) -> Self {
        self.max_cc_world_size = Some(v);
        self
    }

    /// Sets `path_prefix`: the path starts with this.
    #[must_use]
    pub fn path_prefix(mut self, v: impl Into<String>) -> Self {
        self.path_prefix = Some(v.into());
        self
    }

    /// Sets `input`: some subgraph takes an input of this name.
    #[must_use]
    pub fn input(mut self, v: impl Into<String>) -> Self {
        self.input = Some(v.into());
        self
    }

    /// Sets `input_shape`: some subgraph takes an input of this shape (as JSON, `[1,128]`).
    #[must_use]
    pub fn input_shape(mut self, v: Vec<u64>) -> Self {
        self.input_shape = Some(v);
        self
    }

    /// Sets `uuid`: the header's uuid is this (32 lower-case hex digits).
    #[must_use]
    pub fn uuid(mut self, v: impl Into<String>) -> Self {
        self.uuid = Some(v.into());
        self
    }
}

impl Catalog {
    /// Opens the catalogue at `path` read-only. Refuses a file that is not
    /// a neff catalogue, is corrupt, or has another schema version.
    pub fn open(path: impl AsRef<Path>) -> Result<Catalog> {
        let path = path.as_ref().to_path_buf();
        let conn = schema::open_ro(&path)?;
        Ok(Catalog { conn, path })
    }

    fn decode(&self, text: &str) -> Result<Record> {
        serde_json::from_str(text).map_err(|e| {
            Error::catalog(format!(
                "index {}: a stored record does not decode: {e}",
                self.path.display()
            ))
        })
    }

    /// The record of the file at `path` (typed any way that names it: its
    /// row is found by the file's canonical path, else by the path the
    /// scan printed), if it is in the catalogue.
    pub fn by_path(&self, path: &str) -> Result<Option<Record>> {
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT record FROM neffs WHERE key = ?1 OR path = ?2 ORDER BY key = ?1 DESC LIMIT 1",
            )
            .map_err(err(&self.path))?;
        let key = keys::key_of(&Source::of(path));
        let mut rows = st.query([key.as_str(), path]).map_err(err(&self.path))?;
        match rows.next().map_err(err(&self.path))? {
            Some(row) => {
                let text: String = row.get(0).map_err(err(&self.path))?;
                self.decode(&text).map(Some)
            }
            None => Ok(None),
        }
    }

    /// The records of every file whose header has this uuid, by path.
    pub fn by_uuid(&self, uuid: &str) -> Result<Vec<Record>> {
        self.records(&Filter {
            uuid: Some(uuid.to_string()),
            ..Filter::default()
        })
    }

    /// Calls `f` with each record matching `filter`, in path order.
    pub fn for_each(&self, filter: &Filter, mut f: impl FnMut(Record)) -> Result<()> {
        let mut conds: Vec<&str> = Vec::new();
        let mut args: Vec<Value> = Vec::new();
        if let Some(ok) = filter.ok {
            conds.push("ok = ?");
            args.push(Value::Integer(ok.into()));
        }
        if let Some(a) = &filter.arch {
            conds.push("arch = ?");
            args.push(Value::Text(a.clone()));
        }
        if let Some(n) = filter.min_cc_world_size {
            conds.push("CAST(cc_world_size AS REAL) >= ?");
            args.push(Value::Real(n as f64));
        }
        if let Some(n) = filter.max_cc_world_size {
            conds.push("CAST(cc_world_size AS REAL) <= ?");
            args.push(Value::Real(n as f64));
        }
        if let Some(p) = &filter.path_prefix {
            conds.push("substr(path, 1, length(?)) = ?");
            args.push(Value::Text(p.clone()));
            args.push(Value::Text(p.clone()));
        }
        if let Some(u) = &filter.uuid {
            conds.push("uuid = ?");
            args.push(Value::Text(u.clone()));
        }
        if let Some(name) = &filter.input {
            conds.push("id IN (SELECT neff_id FROM tensors WHERE direction = 'IN' AND name = ?)");
            args.push(Value::Text(name.clone()));
        }
        if let Some(shape) = &filter.input_shape {
            conds.push("id IN (SELECT neff_id FROM tensors WHERE direction = 'IN' AND shape = ?)");
            args.push(Value::Text(
                serde_json::to_string(shape).expect("numbers serialize"),
            ));
        }
        let sql = format!(
            "SELECT record FROM neffs{}{} ORDER BY path",
            if conds.is_empty() { "" } else { " WHERE " },
            conds.join(" AND ")
        );
        let mut st = self.conn.prepare(&sql).map_err(err(&self.path))?;
        let mut rows = st
            .query(rusqlite::params_from_iter(args))
            .map_err(err(&self.path))?;
        while let Some(row) = rows.next().map_err(err(&self.path))? {
            let text: String = row.get(0).map_err(err(&self.path))?;
            f(self.decode(&text)?);
        }
        Ok(())
    }

    /// The records matching `filter`, in path order.
    pub fn records(&self, filter: &Filter) -> Result<Vec<Record>> {
        let mut out = Vec::new();
        self.for_each(filter, |r| out.push(r))?;
        Ok(out)
    }

    /// How many files the catalogue holds.
    pub fn len(&self) -> Result<usize> {
        let n: i64 = self
            .conn
            .query_row("SELECT count(*) FROM neffs", [], |r| r.get(0))
            .map_err(err(&self.path))?;
        Ok(n as usize)
    }

    /// Whether the catalogue holds no file.
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }
}
