//! The open NEFF itself: [`Neff`] (what it holds, how a local file or a
//! NEFF in memory is opened and indexed, its members and their JSON),
//! [`Options`] and [`Scratch`].

use std::borrow::Cow;
use std::path::Path;
use std::sync::OnceLock;

use regex_automata::meta::Regex;

use crate::error::{Error, Result};
use crate::header::{Compression, Header, PayloadSpan};
use crate::json::{self, Json, Parsed};
use crate::limits::Limits;
use crate::map::{FileBytes, ReadMode};
use crate::payload::{self, Inflated, Whole};
#[cfg(feature = "remote")]
use crate::remote;
use crate::select::{self, Known, Pattern};
use crate::source::Source;
use crate::tar::{self, Archive, Entry, Index, Kind, Retained};

use super::walk::{inflating, walk, walk_early, Early};

/// Where the tar bytes are.
#[derive(Debug)]
pub(super) enum Tar {
    /// The stored payload itself (package version 1).
    Raw,
    /// The gzip payload, inflated whole.
    Whole(Inflated),
    /// The gzip payload, walked as a stream: only retained members are held.
    Streamed {
        retained: Retained,
        len: u64,
        spare: Option<Vec<u8>>,
        /// The remote object the payload was read from as it arrived
        /// (the file bytes held are then its first [`remote::FIRST`]);
        /// other members are inflated again from a new read of it.
        #[cfg(feature = "remote")]
        object: Option<remote::Object>,
    },
    /// A raw payload of a remote object, read by ranges: the file bytes
    /// held are its first [`remote::FIRST`], and the accessors' members
    /// the walk kept as it passed them; other members are fetched when
    /// asked for.
    #[cfg(feature = "remote")]
    Remote {
        object: remote::Object,
        retained: Retained,
    },
}

/// Options for opening a NEFF.
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct Options {
    /// The resource caps hostile input is held to (defaults: [`Limits::default`]).
    pub limits: Limits,
    /// How the file is brought into memory: mapped, read, or chosen by size.
    pub read_mode: ReadMode,
    /// For a raw NEFF with a large def.json: start skimming its collective
    /// metadata ([`Neff::def_cc`]) on a helper thread as soon as the header
    /// walk meets it, while the walk goes on, so that a one-shot
    /// `cc-world-size` or `has-cc` pays for the walk and the skim at once,
    /// not one after the other. Off by default (a scan already keeps every
    /// CPU busy).
    pub early_cc: bool,
    /// Leave the file's access time alone: where the kernel refuses
    /// `O_NOATIME` (the caller neither owns the file nor is privileged)
    /// and the read would move the access time (by the mount's `noatime`,
    /// `relatime` or `strictatime` rule), the file is not read:
    /// [`Error::AtimeKept`](crate::Error::AtimeKept). A compile cache's
    /// judgements set it: `neff cache prune --max-size` evicts the least
    /// recently used entries by that time. Off by default (a read of a
    /// file named to be read is a use of it). No effect on a URL.
    pub keep_atime: bool,
}

impl Options {
    /// Sets `limits`: the resource caps hostile input is held to (defaults: `Limits::default`).
    #[must_use]
    pub fn limits(mut self, v: Limits) -> Self {
        self.limits = v;
        self
    }

    /// Sets `read_mode`: how the file is brought into memory: mapped, read, or chosen by size.
    #[must_use]
    pub fn read_mode(mut self, v: ReadMode) -> Self {
        self.read_mode = v;
        self
    }

    /// Sets `early_cc`: for a raw NEFF with a large def.json: start skimming its collective metadata (`Neff::def_cc`) on a helper thread as soon as the header walk meets it, while the walk goes on, so that a one-shot `cc-world-size` or `has-cc` pays for the walk and the skim at once, not one after the other.
    #[must_use]
    pub fn early_cc(mut self, v: bool) -> Self {
        self.early_cc = v;
        self
    }

    /// Sets `keep_atime`: leave the file's access time alone, not reading a file whose access time the read would move where the kernel refuses `O_NOATIME`.
    #[must_use]
    pub fn keep_atime(mut self, v: bool) -> Self {
        self.keep_atime = v;
        self
    }
}

/// The error for a file that shrank while it was read.
pub(super) fn changed() -> Error {
    Error::Changed
}

/// Buffers a caller reuses across many [`Neff::open_scratch`] calls.
#[derive(Default)]
pub struct Scratch {
    file: Vec<u8>,
    tar: Vec<u8>,
    json: Option<simd_json::Buffers>,
}

impl std::fmt::Debug for Scratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scratch")
            .field("file", &self.file.capacity())
            .field("tar", &self.tar.capacity())
            .finish()
    }
}

/// An open, indexed NEFF.
#[derive(Debug)]
pub struct Neff {
    pub(super) file: FileBytes,
    pub(super) span: PayloadSpan,
    pub(super) tar: Tar,
    pub(super) index: Index,
    pub(super) limits: Limits,
    pub(super) sorted: OnceLock<Vec<u32>>,
    pub(super) known: OnceLock<[Option<u32>; 6]>,
    pub(super) json: json::Cache,
    /// The skim of the accessors' def.json, once run (during the walk with
    /// [`Options::early_cc`], else by [`def_cc`](Self::def_cc)); `None`
    /// inside when it refused the member.
    pub(super) def_skim: OnceLock<Option<json::skim::Found>>,
}

impl Neff {
    /// Opens and indexes the NEFF at `path` with default options.
    pub fn open(path: impl AsRef<Path>) -> Result<Neff> {
        Neff::open_with(path, &Options::default())
    }

    /// Opens and indexes the NEFF at `path`: a local file, or with the
    /// feature `remote` (default) the URL of a remote object, as
    /// [`Source::of`] decides (see [`open_url`](Self::open_url)).
    pub fn open_with(path: impl AsRef<Path>, opts: &Options) -> Result<Neff> {
        Neff::open_at(&Source::of(path), opts, None)
    }

    /// Opens and indexes the NEFF `source` names, reading and inflating
    /// into the buffers of `scratch` where it can (a local file's; a
    /// remote object is read into buffers of its own).
    pub fn open_source(source: &Source, opts: &Options, scratch: &mut Scratch) -> Result<Neff> {
        Neff::open_at(source, opts, Some(scratch))
    }

    /// Opens `source`, reusing `scratch`'s buffers when given one.
    pub(crate) fn open_at(
        source: &Source,
        opts: &Options,
        scratch: Option<&mut Scratch>,
    ) -> Result<Neff> {
        #[cfg(feature = "remote")]
        if let Some(url) = source.url() {
            return Neff::open_url(url, opts);
        }
        let (file, tar) = match scratch {
            Some(s) => (
                std::mem::take(&mut s.file),
                Some(std::mem::take(&mut s.tar)),
            ),
            None => (Vec::new(), None),
        };
        let file = FileBytes::open_reusing(source.path(), opts.read_mode, opts.keep_atime, file)?;
        Neff::from_file_bytes(file, opts, tar)
    }

    /// A NEFF of `file` (its bytes, or a remote object's first bytes
    /// only), whose payload is read as `tar` says.
    pub(super) fn assembled(
        file: FileBytes,
        span: PayloadSpan,
        tar: Tar,
        index: Index,
        opts: &Options,
    ) -> Neff {
        Neff {
            file,
            span,
            tar,
            index,
            limits: opts.limits,
            sorted: OnceLock::new(),
            known: OnceLock::new(),
            json: json::Cache::default(),
            def_skim: OnceLock::new(),
        }
    }

    /// Whether this NEFF is a remote object read by ranges (its payload is
    /// not held: [`stored_payload`](Self::stored_payload) is its first bytes
    /// only).
    pub fn is_ranged(&self) -> bool {
        #[cfg(feature = "remote")]
        if self.remote().is_some() {
            return true;
        }
        false
    }

    /// The remote object this NEFF's payload is read from, when the
    /// payload is not held.
    #[cfg(feature = "remote")]
    fn remote(&self) -> Option<&remote::Object> {
        match &self.tar {
            Tar::Remote { object, .. }
            | Tar::Streamed {
                object: Some(object),
                ..
            } => Some(object),
            _ => None,
        }
    }

    /// [`open_with`](Self::open_with), reading and inflating into the
    /// buffers of `scratch` where it can; [`recycle`](Self::recycle) gives
    /// them back. A scan of thousands of small NEFFs so avoids fresh memory.
    pub fn open_scratch(
        path: impl AsRef<Path>,
        opts: &Options,
        scratch: &mut Scratch,
    ) -> Result<Neff> {
        Neff::open_at(&Source::of(path), opts, Some(scratch))
    }

    /// Returns this NEFF's reusable buffers to `scratch`.
    pub fn recycle(self, scratch: &mut Scratch) {
        scratch.json = self
            .json
            .buffers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(v) = self.file.into_vec() {
            scratch.file = v;
        }
        match self.tar {
            Tar::Whole(t) => {
                if let Some(v) = t.into_vec() {
                    scratch.tar = v;
                }
            }
            Tar::Streamed { spare: Some(v), .. } => scratch.tar = v,
            _ => {}
        }
    }

    /// Indexes a NEFF held in memory (for tests, fuzzing and programs that
    /// build NEFFs).
    pub fn from_bytes(bytes: Vec<u8>, opts: &Options) -> Result<Neff> {
        Neff::from_file_bytes(FileBytes::Owned(bytes), opts, None)
    }

    pub(super) fn from_file_bytes(
        file: FileBytes,
        opts: &Options,
        reuse: Option<Vec<u8>>,
    ) -> Result<Neff> {
        let built = Neff::index_file(&file, opts, reuse);
        // What was read from a file that shrank meanwhile (zeros where its
        // pages were) explains any error it caused, and is no answer.
        if file.changed() {
            return Err(changed());
        }
        let (span, tar, index, early) = built?;
        let neff = Neff::assembled(file, span, tar, index, opts);
        if let Some(early) = early {
            let _ = neff.sorted.set(early.sorted);
            let _ = neff.known.set(early.known);
            if let Some(skim) = early.def_skim {
                let _ = neff.def_skim.set(skim);
            }
        }
        Ok(neff)
    }

    /// Header, payload and tar index of `file`: the archive walked as the
    /// file holds it (inflated whole, inflated as it is walked, or raw in
    /// the map or in memory).
    #[allow(clippy::type_complexity)]
    fn index_file(
        file: &FileBytes,
        opts: &Options,
        reuse: Option<Vec<u8>>,
    ) -> Result<(PayloadSpan, Tar, Index, Option<Early>)> {
        let limits = &opts.limits;
        let header = Header::from_file_bytes(file)?;
        let span = header.locate_payload(file)?;
        file.advise(match span.compression {
            Compression::Gzip => memmap2::Advice::Sequential,
            Compression::None => memmap2::Advice::Random,
        });
        let stored = &file[span.start..span.start + span.len];
        let base = span.start as u64;
        let (tar, index, early) = match span.compression {
            Compression::Gzip => {
                if span.len as u64 <= limits.inflate_budget {
                    // Inflation reads every byte: map them in one call.
                    file.populate(span.start, span.len);
                }
                match payload::inflate_within(
                    stored,
                    limits.max_inflated,
                    limits.inflate_budget,
                    reuse,
                )? {
                    Whole::Done(t) => {
                        let index = walk(Archive::Bytes(&t), None, limits)?.index;
                        (Tar::Whole(t), index, None)
                    }
                    Whole::Stream(spare) => {
                        let release =
                            |r: std::ops::Range<usize>| file.release(span.start + r.start, r.len());
                        let walked = walk(inflating(stored, limits, &release, None), None, limits)?;
                        let tar = Tar::Streamed {
                            retained: walked.retained,
                            len: walked.len,
                            spare,
                            #[cfg(feature = "remote")]
                            object: None,
                        };
                        (tar, walked.index, None)
                    }
                }
            }
            Compression::None => {
                let (index, early) = match file.file() {
                    // A mapped raw tar is walked with pread: see tar::Archive.
                    Some(f) if opts.early_cc => walk_early(f, base, stored, limits)?,
                    Some(file) => {
                        let mapped = Archive::Mapped {
                            file,
                            base,
                            len: span.len,
                        };
                        (walk(mapped, None, limits)?.index, None)
                    }
                    None => (walk(Archive::Bytes(stored), None, limits)?.index, None),
                };
                (Tar::Raw, index, early)
            }
        };
        Ok((span, tar, index, early))
    }

    /// Whether the file shrank while it was read (a compile cache rewrites
    /// NEFFs in place): bytes read from it since may be zeros, not the
    /// file's. Commands check this before they print an answer; see
    /// [`check_unchanged`](Self::check_unchanged).
    pub fn changed(&self) -> bool {
        self.file.changed()
    }

    /// An error when [`changed`](Self::changed): what was read cannot be
    /// trusted.
    pub fn check_unchanged(&self) -> Result<()> {
        if self.changed() {
            Err(changed())
        } else {
            Ok(())
        }
    }

    /// The 1024-byte header, cast in place.
    pub fn header(&self) -> &Header {
        Header::from_file_bytes(&self.file).expect("checked at open")
    }

    /// Where the payload lies in the file and how it is compressed.
    pub fn payload_span(&self) -> PayloadSpan {
        self.span
    }

    /// The payload bytes as stored in the file (what the header hash
    /// covers); for a remote object read by ranges ([`is_ranged`](Self::is_ranged)),
    /// the part of them held.
    pub fn stored_payload(&self) -> &[u8] {
        let end = (self.span.start + self.span.len).min(self.file.len());
        &self.file[self.span.start.min(end)..end]
    }

    /// Hands the stored payload to `sink` in order: from memory, or (for a
    /// remote object read by ranges) the part held and then one ranged GET
    /// of the rest, pinned to the object's ETag.
    pub(crate) fn for_each_stored(&self, sink: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
        let held = self.stored_payload();
        sink(held)?;
        #[cfg(feature = "remote")]
        if let Some(object) = self.remote() {
            let from = (self.span.start + held.len()) as u64;
            return object.stream(from..(self.span.start + self.span.len) as u64, sink);
        }
        Ok(())
    }

    /// The size of the whole file (or remote object) in bytes.
    pub fn file_len(&self) -> u64 {
        #[cfg(feature = "remote")]
        if let Some(object) = self.remote() {
            return object.size();
        }
        self.file.len() as u64
    }

    /// Whether the payload is gzip-compressed.
    pub fn is_compressed(&self) -> bool {
        self.span.compression == Compression::Gzip
    }

    /// The tar bytes, when they are held whole: the mapped payload, or its
    /// inflation. `None` for a payload walked as a bounded stream (over
    /// [`Limits::inflate_budget`]).
    pub fn tar(&self) -> Option<&[u8]> {
        match &self.tar {
            Tar::Raw => Some(self.stored_payload()),
            Tar::Whole(b) => Some(b),
            Tar::Streamed { .. } => None,
            #[cfg(feature = "remote")]
            Tar::Remote { .. } => None,
        }
    }

    /// Length of the tar stream, whether or not it is held.
    pub fn tar_len(&self) -> u64 {
        match &self.tar {
            Tar::Streamed { len, .. } => *len,
            #[cfg(feature = "remote")]
            Tar::Remote { .. } => self.span.len as u64,
            _ => self.tar_bytes().len() as u64,
        }
    }

    /// Whether the payload was walked as a bounded stream (and only the
    /// accessors' JSON members are held).
    pub fn is_streamed(&self) -> bool {
        matches!(self.tar, Tar::Streamed { .. })
    }

    /// The tar bytes names are resolved against (empty when streamed: a
    /// streamed walk keeps its names in the index's arena).
    fn tar_bytes(&self) -> &[u8] {
        self.tar().unwrap_or(&[])
    }

    /// The whole file's bytes.
    pub fn file_bytes(&self) -> &[u8] {
        &self.file
    }

    /// The limits this NEFF was opened with.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Every entry, in archive order.
    pub fn entries(&self) -> &[Entry] {
        &self.index.entries
    }

    /// The name of an entry.
    pub fn name<'a>(&'a self, e: &'a Entry) -> &'a [u8] {
        self.index.resolve(&e.name, self.tar_bytes())
    }

    /// The name of an entry as text (lossy for non-UTF-8 names).
    pub fn name_str<'a>(&'a self, e: &'a Entry) -> std::borrow::Cow<'a, str> {
        String::from_utf8_lossy(self.name(e))
    }

    /// The link target of an entry, if it has one.
    pub fn link<'a>(&'a self, e: &'a Entry) -> Option<&'a [u8]> {
        e.link
            .as_ref()
            .map(|l| self.index.resolve(l, self.tar_bytes()))
    }

    /// The data of an entry if it is in memory: borrowed from the map, the
    /// inflated buffer, or (for a streamed payload) the retained members.
    /// `None` for a GNU sparse member, whose content is never held as such
    /// (its holes are not stored): read it with [`data`](Self::data).
    pub fn held(&self, e: &Entry) -> Option<&[u8]> {
        if e.is_sparse() {
            return None;
        }
        self.stored(e)
    }

    /// The bytes the archive stores for an entry, if they are in memory
    /// (for a sparse member, its segments back to back).
    pub(super) fn stored(&self, e: &Entry) -> Option<&[u8]> {
        match &self.tar {
            Tar::Streamed { .. } if self.index.stored_len(e) == 0 => Some(&[]),
            Tar::Streamed { retained, .. } => retained.get(e.offset),
            #[cfg(feature = "remote")]
            Tar::Remote { retained, .. } => {
                if let Some(kept) = retained.get(e.offset) {
                    return Some(kept);
                }
                // Inside the first bytes fetched at open, else not held.
                let start = (self.span.start as u64).checked_add(e.offset)?;
                let end = start.checked_add(self.index.stored_len(e))?;
                self.file.get(start as usize..usize::try_from(end).ok()?)
            }
            _ => Some(self.index.stored(e, self.tar_bytes())),
        }
    }

    /// How many bytes the archive stores for an entry (for a sparse
    /// member, its segments' total; else its size).
    pub(crate) fn stored_len(&self, e: &Entry) -> u64 {
        self.index.stored_len(e)
    }

    /// The segments of a GNU sparse member (where its stored bytes go in
    /// its content; the rest are holes), `None` for other entries.
    pub fn sparse_map(&self, e: &Entry) -> Option<&[tar::Segment]> {
        self.index.segments(e)
    }

    /// The data of an entry: borrowed when [`held`](Self::held), else
    /// inflated again from the stored payload into a buffer of its size.
    pub fn data(&self, e: &Entry) -> Result<Cow<'_, [u8]>> {
        self.cursor().read(e)
    }

    /// Writes an entry's data to `out`, in windows as it is inflated when
    /// it is not held (memory stays bounded whatever the member's size).
    pub fn copy_data(&self, e: &Entry, out: &mut dyn std::io::Write) -> Result<()> {
        self.cursor().copy(e, out)
    }

    /// Prefaults a large member of a mapped raw tar that is about to be read
    /// whole (one call instead of a fault per 64 KiB).
    fn populate(&self, e: &Entry) {
        if matches!(self.tar, Tar::Raw) && e.size >= 256 << 10 && !e.is_sparse() {
            self.file
                .populate(self.span.start + e.offset as usize, e.size as usize);
        }
    }

    /// Regular members (archive order).
    pub fn files(&self) -> impl Iterator<Item = &Entry> {
        self.entries().iter().filter(|e| e.kind == Kind::File)
    }

    /// Indices of the regular members in byte-wise name order, one per name.
    pub fn sorted_files(&self) -> &[u32] {
        self.sorted
            .get_or_init(|| select::sorted_files(&self.index, self.tar_bytes()))
    }

    /// The regular member named exactly `name` (the last of that name in
    /// archive order, as [`sorted_files`](Self::sorted_files) keeps).
    pub fn member(&self, name: &[u8]) -> Option<&Entry> {
        let sorted = self.sorted_files();
        let entries = &self.index.entries;
        sorted
            .binary_search_by(|&i| self.name(&entries[i as usize]).cmp(name))
            .ok()
            .map(|k| &entries[sorted[k] as usize])
    }

    /// The first regular member, in sorted name order, that `pattern`
    /// matches; no match is [`Error::NoMatch`].
    pub fn find(&self, pattern: &Pattern) -> Result<&Entry> {
        self.find_re(pattern.regex())
            .ok_or_else(|| Error::no_match(pattern.as_str()))
    }

    pub(crate) fn find_re(&self, re: &Regex) -> Option<&Entry> {
        select::first_match(re, self.sorted_files(), &self.index, self.tar_bytes())
            .map(|i| &self.index.entries[i as usize])
    }

    /// Like [`find`](Self::find) with a pattern string.
    pub fn find_pattern(&self, pattern: &str) -> Result<&Entry> {
        self.find(&Pattern::new(pattern)?)
    }

    /// The member an accessor reads, by the reference reader's patterns.
    pub fn known(&self, k: Known) -> Option<&Entry> {
        let found = self.known.get_or_init(|| {
            select::resolve_known(self.sorted_files(), &self.index, self.tar_bytes())
        });
        found[k as usize].map(|i| &self.index.entries[i as usize])
    }

    /// Parses a member as JSON (uncached), under the size and depth caps,
    /// reading what Python's `json.loads` reads (the JSON layer's member policy).
    pub fn parse_json(&self, e: &Entry) -> Result<Parsed> {
        json::check_size(e.size, &self.limits)?;
        self.populate(e);
        let name = self.name_str(e);
        // The member is read (maybe inflated again) before the scratch is
        // locked: parses of one NEFF wait for each other's parse only.
        let bytes = self.data(e)?.into_owned();
        json::parse_member(&name, bytes, &mut || self.data(e), &self.limits, &self.json)
    }

    /// Writes a member as the reference reader's users see it: the text of
    /// Python's `json.dumps(json.loads(member), separators=(",", ":"),
    /// ensure_ascii=False)` (`json::as_python` in the crate), under the size and
    /// depth caps.
    pub fn dumps_json(&self, e: &Entry, out: &mut Vec<u8>) -> Result<()> {
        json::check_size(e.size, &self.limits)?;
        self.populate(e);
        json::dumps_member(&self.name_str(e), &self.data(e)?, &self.limits, out)
    }

    /// The parsed JSON of an accessor's member, parsed once and cached;
    /// `None` when no member matches its pattern.
    pub fn known_json(&self, k: Known) -> Result<Option<(&Entry, Json<'_>)>> {
        let Some(e) = self.known(k) else {
            return Ok(None);
        };
        let slot = &self.json.slots[k as usize];
        if let Some(p) = slot.get() {
            return Ok(Some((e, p.root())));
        }
        let parsed = self.parse_json(e)?;
        Ok(Some((e, slot.get_or_init(|| parsed).root())))
    }

    /// The collective-metadata keys of the accessors' def.json, as an
    /// object holding just those keys (a non-object when def.json is not an
    /// object). A def.json already parsed is used as is; a large one is
    /// skimmed instead of parsed whole (a validating skim that parses only those keys).
    pub fn def_cc(&self) -> Result<Option<(&Entry, Json<'_>)>> {
        let Some(e) = self.known(Known::Def) else {
            return Ok(None);
        };
        if let Some(p) = self.json.slots[Known::Def as usize].get() {
            return Ok(Some((e, p.root())));
        }
        if let Some(p) = self.json.def_cc.get() {
            return Ok(Some((e, p.root())));
        }
        if !json::skim::worth_it(e.size, &self.limits) {
            return self.known_json(Known::Def);
        }
        let data = self.data(e)?;
        let skim = self.def_skim.get_or_init(|| {
            // Inside a rayon pool (a scan) every CPU already has a NEFF to
            // read: no helper thread.
            let two_threads = rayon::current_thread_index().is_none();
            json::skim::cc_keys(&data, &self.limits, two_threads)
        });
        let Some(found) = skim else {
            // Not valid JSON (or too deep): the full parse gives the
            // canonical error.
            return self.known_json(Known::Def);
        };
        let small = json::skim::rebuild(&data, &json::CC_TOP_KEYS, found);
        let parsed = Parsed::parse(
            &self.name_str(e),
            small,
            &self.limits,
            &mut self.json.buffers(),
        )?;
        Ok(Some((e, self.json.def_cc.get_or_init(|| parsed).root())))
    }
}

/// A streamed payload's pages are dropped from the process behind the
/// inflater (the map's `release`).
impl payload::Passed for Neff {
    fn passed(&self, range: std::ops::Range<usize>) {
        self.file
            .release(self.span.start + range.start, range.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pack::{pack, PackEntry, PackOptions};

    /// A mapped raw NEFF whose def.json (first member) is `def`.
    fn mapped(def: &[u8], dir: &std::path::Path) -> FileBytes {
        let entries = [
            PackEntry::file("sg00/def.json", def, 0),
            PackEntry::file("sg00/pe.bin", vec![0u8; 1 << 20], 0),
        ];
        let opts = PackOptions {
            no_gzip: true,
            mtime: Some(0),
            ..Default::default()
        };
        let path = dir.join("t.neff");
        std::fs::write(&path, pack(&entries, &opts).unwrap()).unwrap();
        FileBytes::open(&path, ReadMode::Map).unwrap()
    }

    #[test]
    fn a_def_json_cut_short_is_refused_by_the_early_skim_walk_not_a_panic() {
        // The walk shows an entry before it checks that its data exists.
        let dir = tempfile::tempdir().unwrap();
        let mut def = b"{\"replica_groups\":[[[0,1]]],\"var\":[".to_vec();
        def.resize(3 << 20, b' ');
        let entries = [PackEntry::file("sg00/def.json", def, 0)];
        let opts = PackOptions {
            no_gzip: true,
            mtime: Some(0),
            ..Default::default()
        };
        let mut bytes = pack(&entries, &opts).unwrap();
        bytes.truncate(1024 + (1 << 20));
        bytes[0x10..0x18].copy_from_slice(&(1u64 << 20).to_le_bytes());
        let path = dir.path().join("cut.neff");
        std::fs::write(&path, &bytes).unwrap();
        let opts = Options {
            early_cc: true,
            read_mode: ReadMode::Map,
            ..Options::default()
        };
        let e = Neff::open_with(&path, &opts).unwrap_err().to_string();
        assert!(e.contains("runs past the end"), "{e}");
    }

    #[test]
    fn the_early_skim_runs_during_the_walk_and_fills_the_cc_cache() {
        if crate::pool::helper_cpu().is_none() {
            return; // one CPU: the plain walk, tested everywhere else
        }
        let dir = tempfile::tempdir().unwrap();
        let mut def = b"{\"replica_groups\":[[[0,1,2]]],\"var\":[".to_vec();
        while def.len() < 2 << 20 {
            def.extend_from_slice(b"{\"a\":1,\"b\":\"c\"},");
        }
        def.extend_from_slice(b"0]}");
        let file = mapped(&def, dir.path());
        let span = Header::from_file_bytes(&file)
            .unwrap()
            .locate_payload(&file)
            .unwrap();
        let stored = &file[span.start..span.start + span.len];
        let (index, early) = walk_early(
            file.file().unwrap(),
            span.start as u64,
            stored,
            &Limits::default(),
        )
        .unwrap();
        let early = early.expect("a helper CPU: the early path ran");
        let def_entry = early.known[Known::Def as usize].unwrap() as usize;
        assert_eq!(index.entries[def_entry].size, def.len() as u64);
        let found = early.def_skim.expect("def.json was skimmed");
        let found = found.expect("valid").expect("an object");
        assert_eq!(found.len(), 1);
        assert_eq!(&def[found[0].1.clone()], b"[[[0,1,2]]]");
        // And through the public path: the cache is filled at open.
        let opts = Options {
            early_cc: true,
            ..Options::default()
        };
        let n = Neff::from_file_bytes(file, &opts, None).unwrap();
        assert!(n.def_skim.get().is_some(), "skimmed at open");
        assert_eq!(crate::accessors::cc_world_size(&n).unwrap(), 3);
    }
}
