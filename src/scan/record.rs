//! One NEFF's [`Record`]: what a scan reads of it, the refusal when it
//! does not open, and the state of the compile-cache entry it belongs to.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::accessors;
use crate::cache::{self, State};
use crate::error::{Error, ATIME_KEPT};
use crate::header::hex;
use crate::json::views::{Def, VarType};
use crate::reader::{Neff, Options, Scratch};
use crate::source::Source;

use super::options::*;

/// Count and total bytes of a set of tensors.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Tensors {
    /// How many tensors.
    pub count: u64,
    /// The sum of their `size` fields in bytes (a tensor without one counts 0).
    pub bytes: u64,
}

/// One NEFF's line of a scan.
///
/// `ok` says whether the file is a readable NEFF: it is false (with
/// `error`) only when the file cannot be opened, its header is invalid, or
/// its payload or tar cannot be read. A question the reference reader would
/// refuse on a readable NEFF (an MPMD world size, no tensor map, an aliasing
/// guard, mixed arches, JSON of the wrong shape) leaves its field `None`
/// and puts the reason in [`errors`](Record::errors), keyed by field.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Record {
    /// The file's path, as found by the walk (or as named).
    pub path: String,
    /// Whether the file is a readable NEFF: opened, header valid, payload and
    /// tar read, and the file unchanged while it was read.
    pub ok: bool,
    /// Why the file is not a readable NEFF; `None` when `ok`.
    pub error: Option<String>,
    /// File size.
    pub bytes: Option<u64>,
    /// Header `pkg_version` (1 or 2); `None` when not `ok`.
    pub pkg_version: Option<u64>,
    /// Whether the payload is gzip; `None` when not `ok`.
    pub compressed: Option<bool>,
    /// Count of regular members of the archive; `None` when not `ok`.
    pub members: Option<usize>,
    /// The kelf's target arch ([`accessors::arch`]); `None` when refused or not `ok`.
    pub arch: Option<String>,
    /// NeuronCores the NEFF needs ([`accessors::num_cores`]); `None` when refused or not `ok`.
    pub num_cores: Option<u64>,
    /// Null when the NEFF has no collective metadata (or it was refused).
    pub cc_world_size: Option<u128>,
    /// Null unless the scan verifies hashes.
    pub hash_ok: Option<bool>,
    /// The header's model UUID, 32 lower-case hex digits; `None` when not `ok`.
    pub uuid: Option<String>,
    /// The header's model name; `None` when not `ok`.
    pub name: Option<String>,
    /// Header `data_size`: payload bytes as stored; `None` when not `ok`.
    pub data_size: Option<u64>,
    /// Count and bytes of def.json's `input` variables; `None` when refused or not `ok`.
    pub inputs: Option<Tensors>,
    /// Count and bytes of def.json's `output` variables; `None` when refused or not `ok`.
    pub outputs: Option<Tensors>,
    /// Number of `alias_map` entries in the tensor map ([`accessors::alias`]);
    /// `None` when refused (e.g. no tensor map) or not `ok`.
    pub aliases: Option<usize>,
    /// [`accessors::must_alias`]; `None` when refused or not `ok`.
    pub must_alias: Option<bool>,
    /// def.json's `neff_features`; `None` when refused or not `ok`.
    pub neff_features: Option<Vec<String>>,
    /// Header `feature_bits`, the capability mask; `None` when not `ok`.
    pub feature_bits: Option<u64>,
    /// For a file of a compile-cache entry (`MODULE_<key>/model.neff`, or a
    /// `graph_*.neff`) and for an entry holding no NEFF: the entry's key.
    pub cache_key: Option<String>,
    /// The compiler version of the `neuronxcc-<version>` directory holding
    /// that entry.
    pub compiler: Option<String>,
    /// The state of that entry, as `neff cache status` judges it (`ok`,
    /// `corrupt`, `failed`, `locked`, `incomplete`, `empty`), judged at
    /// every scan: for an entry's `model.neff`, and for an entry that holds
    /// none (its record's path is the entry's directory).
    pub cache_state: Option<State>,
    /// Why that entry is not `ok` (the NEFF's refusal, the log's last error
    /// line, the lock's age).
    pub cache_reason: Option<String>,
    /// For each field whose question was refused on a readable NEFF, the
    /// reason (empty when none was).
    pub errors: BTreeMap<String, String>,
}

impl Record {
    /// Whether some question was refused on this (readable) NEFF.
    pub fn has_refusals(&self) -> bool {
        !self.errors.is_empty()
    }
}

pub(super) fn failed(source: &Source, e: &Error, bytes: Option<u64>) -> Record {
    Record {
        path: source.shown(),
        ok: false,
        error: Some(e.to_string()),
        bytes,
        ..Record::default()
    }
}

/// Reads one NEFF into its record, and, when it opens, runs `extra` on it
/// too (the index reads its member, tensor and alias rows this way, from
/// the same single open). `met`: what the walk saw of the compile-cache
/// entry the NEFF belongs to (`None`: the entry is listed now).
pub(super) fn record_with<T>(
    source: &Source,
    opts: &ScanOptions,
    scratch: &mut Scratch,
    met: Option<cache::Met>,
    extra: impl FnOnce(&Neff) -> T,
) -> (Record, Option<T>) {
    if is_bare_entry(source) {
        let mut r = Record {
            path: source.shown(),
            ..Record::default()
        };
        cache_entry(source, &mut r, &opts.open, met);
        let state = r.cache_state.map_or("unreadable", State::name);
        r.error = Some(match r.cache_state {
            Some(State::Ok) => {
                "a compile-cache entry whose model.neff appeared after the walk (scan again)".into()
            }
            _ => match &r.cache_reason {
                Some(why) => format!("a compile-cache entry with no model.neff ({state}: {why})"),
                None => format!("a compile-cache entry with no model.neff ({state})"),
            },
        });
        return (r, None);
    }
    let path = source.path();
    let bytes = source
        .local_path()
        .and_then(|p| std::fs::metadata(p).ok())
        .map(|m| m.len());
    // A compile-cache entry's NEFF is read as `cache status` reads it: not
    // at all where that would move its access time, which `cache prune
    // --max-size` orders the entries by.
    let open = match cache::entry_dir(path) {
        Some(entry) if entry != path => opts.open.keep_atime(true),
        _ => opts.open,
    };
    let (mut r, t) = match Neff::open_source(source, &open, scratch) {
        Err(e) => (failed(source, &e, bytes), None),
        Ok(neff) => {
            let bytes = bytes.or(Some(neff.file_len()));
            let r = fill(&neff, source, bytes, opts);
            let t = extra(&neff);
            match neff.check_unchanged() {
                // Zeros were read where the file's pages had been: no answer.
                Err(e) => (failed(source, &e, bytes), None),
                Ok(()) => {
                    // A remote object is read into buffers of its own
                    // (`open_source` reuses none for a URL): kept, they
                    // would only hold memory, each of the remote pool's
                    // workers the largest object it had read
                    // (bench/bucket_scale_results.md, "Peak RSS").
                    if !source.is_remote() {
                        neff.recycle(scratch);
                    }
                    (r, Some(t))
                }
            }
        }
    };
    cache_entry(source, &mut r, &opts.open, met);
    (r, t)
}

/// Whether `source` is a compile-cache entry that holds no NEFF (the walk
/// lists such an entry's directory, or its prefix in a bucket).
pub(super) fn is_bare_entry(source: &Source) -> bool {
    let path = source.path();
    if cache::entry_dir(path) != Some(path) {
        return false;
    }
    match source.url() {
        // A URL of an entry, listable or not (an HTTP root names one too):
        // a NEFF is a `.neff` object, anything else the entry's prefix.
        Some(url) => !url.ends_with(".neff"),
        None => path.is_dir(),
    }
}

pub(super) fn fill(neff: &Neff, source: &Source, bytes: Option<u64>, opts: &ScanOptions) -> Record {
    let h = neff.header();
    let mut errors = BTreeMap::new();
    let mut note = |fields: &[&str], e: Error| {
        for f in fields {
            errors.insert((*f).to_string(), e.to_string());
        }
    };
    let mut r = Record {
        path: source.shown(),
        ok: true,
        bytes,
        pkg_version: Some(h.pkg_version.get()),
        compressed: Some(neff.is_compressed()),
        members: Some(neff.files().count()),
        uuid: Some(hex(&h.uuid)),
        name: Some(h.name()),
        data_size: Some(h.data_size.get()),
        feature_bits: Some(h.feature_bits.get()),
        ..Record::default()
    };
    if opts.verify {
        r.hash_ok = Some(crate::verify::verify_open(neff).is_ok());
    }
    match accessors::arch(neff) {
        Ok(a) => r.arch = Some(a.to_string()),
        Err(e) => note(&["arch"], e),
    }
    match accessors::num_cores(neff) {
        Ok(n) => r.num_cores = Some(n),
        Err(e) => note(&["num_cores"], e),
    }
    match accessors::def(neff) {
        Ok(m) => {
            if let Some(def) = Def::new(m.json) {
                let (mut i, mut o) = (Tensors::default(), Tensors::default());
                for v in def.vars() {
                    let t = match v.var_type() {
                        Some(VarType::Input) => &mut i,
                        Some(VarType::Output) => &mut o,
                        _ => continue,
                    };
                    t.count += 1;
                    t.bytes += v.size().unwrap_or(0);
                }
                r.inputs = Some(i);
                r.outputs = Some(o);
                r.neff_features = Some(
                    def.neff_features()
                        .into_iter()
                        .map(str::to_string)
                        .collect(),
                );
            } else {
                let e = Error::shape(m.name, "def.json is not an object");
                note(&["inputs", "outputs", "neff_features"], e);
            }
        }
        Err(e) => note(&["inputs", "outputs", "neff_features"], e),
    }
    match accessors::has_cc(neff) {
        Ok(true) => match accessors::cc_world_size(neff) {
            Ok(n) => r.cc_world_size = Some(n),
            Err(e) => note(&["cc_world_size"], e),
        },
        Ok(false) => {}
        Err(e) => note(&["cc_world_size"], e),
    }
    match accessors::alias(neff) {
        Ok(a) => r.aliases = Some(a.len()),
        Err(e) => note(&["aliases"], e),
    }
    match accessors::must_alias(neff) {
        Ok(m) => r.must_alias = Some(m),
        Err(e) => note(&["must_alias"], e),
    }
    r.errors = errors;
    r
}

impl Record {
    /// Whether this is the record of a NEFF left unread so as not to move
    /// its access time ([`Error::AtimeKept`]): it says who scanned, not
    /// what the file is (the catalogue does not keep it).
    pub(crate) fn left_unread(&self) -> bool {
        !self.ok
            && self
                .error
                .as_deref()
                .is_some_and(|e| e.starts_with(ATIME_KEPT))
    }
}

/// Whether the file at `path` (a local one) exists and the caller may not
/// read it.
fn unreadable(path: &Path) -> bool {
    use rustix::fs::{Access, AtFlags, CWD};
    matches!(
        rustix::fs::accessat(CWD, path, Access::READ_OK, AtFlags::EACCESS),
        Err(e) if e != rustix::io::Errno::NOENT
    )
}

/// Fills `cache_key`, `compiler`, `cache_state` and `cache_reason` for a
/// file of a Neuron compile-cache entry (a `graph_*.neff`, or a NEFF in a
/// `MODULE_*` directory) or an entry holding no NEFF. The state is judged
/// now, from one listing of the entry, with the record's own answer for
/// its NEFF (an entry holding none has its NEFF read, should one have
/// appeared since the walk): a warm catalogue hit judges it again too.
pub(super) fn cache_entry(
    source: &Source,
    r: &mut Record,
    open: &Options,
    met: Option<cache::Met>,
) {
    let path = source.path();
    let parent = path.parent();
    let dir = parent
        .and_then(Path::file_name)
        .map(|d| d.to_string_lossy().into_owned());
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let is_cache =
        file.starts_with("graph_") || dir.as_deref().is_some_and(|d| d.starts_with("MODULE_"));
    if is_cache {
        r.cache_key = dir.map(|d| d.strip_prefix("MODULE_").map(str::to_string).unwrap_or(d));
    }
    let Some(entry) = cache::entry_dir(path) else {
        return;
    };
    if entry == path {
        r.cache_key = file.strip_prefix("MODULE_").map(str::to_string);
    }
    r.compiler = cache::compiler_of(entry);
    let own = (entry != path).then(|| (r.ok, r.error.clone()));
    let unread = r.left_unread();
    let read = |name: &str| match &own {
        // The NEFF scanned: the record's own answer.
        Some((true, _)) if name == file => cache::Read::Ok(()),
        Some((false, e)) if name == file && unread => {
            cache::Read::Unread(format!("{file} {}", e.clone().unwrap_or_default()))
        }
        // A NEFF the caller may not read says nothing of the entry.
        Some((false, e)) if name == file && source.local_path().is_some_and(unreadable) => {
            cache::Read::Unreadable(format!("{name}: {}", e.clone().unwrap_or_default()))
        }
        Some((false, e)) if name == file => cache::Read::Refused(e.clone().unwrap_or_default()),
        // Another NEFF of the entry (a vLLM entry's other graph*.neff), or
        // an entry listed bare whose NEFF appeared since the walk.
        _ => {
            let neff = source.at(&entry.join(name));
            let open = open.keep_atime(true);
            match Neff::open_at(&neff, &open, None).and_then(|n| n.check_unchanged()) {
                Ok(()) => cache::Read::Ok(()),
                Err(e) => cache::read_error(e),
            }
        }
    };
    match cache::judge_entry(&source.at(entry), met, read) {
        Ok(s) => {
            r.cache_state = Some(s.state);
            r.cache_reason = s.reason;
        }
        Err(e) => {
            r.cache_state = None;
            r.cache_reason = Some(format!("the entry could not be listed: {e}"));
        }
    }
}

#[cfg(test)]
mod tests {
    #[cfg(feature = "remote")]
    #[test]
    fn an_entrys_url_is_a_bare_entry_whether_or_not_its_store_lists() {
        use super::*;
        for url in ["s3://b/c/MODULE_1+a", "https://h/c/MODULE_1+a"] {
            assert!(is_bare_entry(&Source::of(url)), "{url}");
            let neff = format!("{url}/model.neff");
            assert!(!is_bare_entry(&Source::of(&neff)), "{neff}");
        }
        assert!(!is_bare_entry(&Source::of("https://h/c/x")));
    }
}
