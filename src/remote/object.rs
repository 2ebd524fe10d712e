//! One remote object read by ranges: opened and pinned to its first
//! response's ETag ([`Object`]), read whole where a server ignores Range
//! (spooled to an unlinked file), read as a `Read` over its parts
//! ([`RangeReader`]) and with parts in flight in order ([`ReadAhead`]),
//! and its tail read alone (a compile cache's log); and what a catalogue
//! keys an object named by its URL on (its size and version, asked of its
//! server: [`Object::version_of`]).

use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use futures_util::StreamExt;
use object_store::path::Path as ObjPath;
use object_store::{GetOptions, GetRange, ObjectStore};

use super::failure::*;
use super::listing::*;
use super::redact::redact;
use super::store::*;
use super::{ahead, link};
use crate::error::{Error, Result};
use crate::parts::Parts;

/// Why an object has no version to key a row on.
#[cfg(feature = "catalog")]
const NO_VALIDATOR: &str = "the server names no ETag or Last-Modified to know the object by";

/// An unlinked temporary file for an object read whole, or an error that
/// says where it was to be made (`$TMPDIR`, else /tmp) and why not.
pub(super) fn spool_file() -> Result<File> {
    tempfile::tempfile().map_err(|e| {
        remote(format!(
            "cannot make a temporary file in {} to spool the object: {e}",
            std::env::temp_dir().display()
        ))
    })
}

/// Whether `e` is `object_store`'s report that the server answered a
/// ranged GET with something other than `206 Partial Content` (a `200` and
/// the whole object: it ignores Range). The HTTP store says so with
/// `Error::NotSupported` over its `RangeNotSupported` ("Range request not
/// supported by …"), the S3 store with `Error::Generic` over `NotPartial`
/// ("Received non-partial response when range requested"), both private
/// types of object_store 0.14 (`http/client.rs`, `client/get.rs`): they
/// are told apart by their messages, which tests/it/remote.rs checks against
/// real servers (its `norange` fault) for both stores.
pub(super) fn ignores_range(e: &object_store::Error) -> bool {
    use object_store::Error as E;
    match e {
        E::NotSupported { source } => source
            .to_string()
            .starts_with("Range request not supported"),
        E::Generic { source, .. } => {
            source.to_string() == "Received non-partial response when range requested"
        }
        _ => false,
    }
}

/// Why one ranged GET did not give its bytes.
pub(super) enum Miss {
    /// The server ignored the Range: the object is to be read whole.
    IgnoredRange,
    /// Any other failure, as it is reported.
    Failed(Error),
}

impl From<Error> for Miss {
    fn from(e: Error) -> Miss {
        Miss::Failed(e)
    }
}

/// The largest object read whole from a server that ignores Range
/// (`NEFF_REMOTE_SPOOL_MAX`, bytes, default 4 GiB).
pub(super) fn spool_max() -> u64 {
    static N: OnceLock<u64> = OnceLock::new();
    *N.get_or_init(|| env_u64("NEFF_REMOTE_SPOOL_MAX", 4 << 30))
}

pub(super) fn too_large_to_read_whole(size: u64, max: u64) -> Error {
    remote(format!(
        "the server ignores Range, and the object ({size} bytes) is larger than the \
         {max} bytes read whole (NEFF_REMOTE_SPOOL_MAX)"
    ))
}

/// The object at `path` of the store of `url`, read whole by one GET
/// without Range into an unlinked temporary file, its chunks written as
/// they arrive (never held whole in memory). With `pinned` (the size and
/// ETag the object had when first read), an object of another size or
/// ETag is [`Error::ObjectChanged`], and one larger than
/// [`spool_max`] is refused before any request; else it is refused when
/// its response announces so. Returns the file, the object's size and
/// its ETag.
pub(super) fn fetch_whole(
    url: &str,
    path: &ObjPath,
    pinned: Option<(u64, Option<&str>)>,
) -> Result<(File, u64, Option<String>)> {
    let max = spool_max();
    // Read whole, every byte is moved: a cap on bytes per object refuses
    // an object larger than it, as the spool's own bound does.
    let bounded = |size: u64| -> Result<()> {
        if size > max {
            return Err(too_large_to_read_whole(size, max));
        }
        link::within_cap(size)
    };
    if let Some((size, _)) = pinned {
        bounded(size)?;
    }
    let etag = pinned.and_then(|(_, e)| e);
    let changed = || Error::ObjectChanged {
        etag: etag.unwrap_or("").to_string(),
    };
    let (store, _) = store_for(url, Timeout::PerRead)?;
    let opts = GetOptions {
        if_match: etag.map(str::to_string),
        ..Default::default()
    };
    let file = spool_file()?;
    runtime()?
        .block_on(async {
            let counted = link::Request::start();
            let r = store
                .get_opts(path, opts)
                .await
                .map_err(|e| describe(&e, etag))?;
            let size = r.meta.size;
            let got_etag = r.meta.e_tag.clone();
            if let Some((want, want_etag)) = pinned {
                let other_etag =
                    matches!((want_etag, got_etag.as_deref()), (Some(a), Some(b)) if a != b);
                if size != want || other_etag {
                    return Err(changed());
                }
            }
            bounded(size)?;
            log::debug!(
                "{}: the server ignored Range: reading the object whole ({size} bytes) \
                 into a temporary file, and from it from now on",
                redact(url)
            );
            let mut at = 0u64;
            let mut body = r.into_stream();
            while let Some(chunk) = body.next().await {
                let chunk = chunk.map_err(|e| describe(&e, etag))?;
                if at + chunk.len() as u64 > size {
                    return Err(remote(format!(
                        "the server sent more than the {size} bytes it announced"
                    )));
                }
                file.write_all_at(&chunk, at)?;
                at += chunk.len() as u64;
                counted.got(chunk.len() as u64);
            }
            if at != size {
                return Err(remote(format!("truncated body: {at} of {size} bytes")));
            }
            Ok((size, got_etag))
        })
        .map(|(size, got_etag)| (file, size, got_etag))
}

/// Hands the bytes at `range` of `file` to `sink`, a bounded chunk at a
/// time.
pub(super) fn read_local(
    file: &File,
    range: Range<u64>,
    sink: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    const CHUNK: u64 = 1 << 20;
    let mut buf = vec![0u8; range.end.saturating_sub(range.start).min(CHUNK) as usize];
    let mut at = range.start;
    while at < range.end {
        let n = (range.end - at).min(CHUNK) as usize;
        file.read_exact_at(&mut buf[..n], at)?;
        sink(&buf[..n])?;
        at += n as u64;
    }
    Ok(())
}

/// What every request for one version of an object needs: where it is,
/// its size and its ETag (`If-Match` on each ranged GET). Cheap to clone,
/// for requests that outlive a borrow (the read-ahead's).
#[derive(Debug, Clone)]
pub(super) struct Pinned {
    pub(super) url: String,
    pub(super) store: Arc<dyn ObjectStore>,
    pub(super) path: ObjPath,
    pub(super) size: u64,
    pub(super) etag: Option<String>,
}

/// An object, pinned to the version (ETag) the first response came from.
#[derive(Debug)]
pub struct Object {
    pub(super) pin: Pinned,
    /// Bytes asked of the object so far ([`link::cap`] bounds them).
    pub(super) moved: std::sync::atomic::AtomicU64,
    /// The whole object in an unlinked temporary file, once its server
    /// ignored a Range: every read after is served from it.
    pub(super) whole: OnceLock<File>,
    /// Held while the whole object is fetched: one GET of it, whatever
    /// the number of readers that found the Range ignored.
    pub(super) fetching: Mutex<()>,
    /// Counted among the objects open ([`link::hop_worth`]).
    pub(super) _open: link::Gauge,
}

/// The largest raw NEFF fetched whole (the first request, then one for
/// the rest) rather than walked by ranges; on a slow link the bound is
/// lower, four round trips' worth of bytes as measured: a walk by
/// ranges costs a round trip per window of tar headers (24 for a typical
/// 3 MiB compile-cache NEFF), the rest of an object this small costs one.
pub const WHOLE_BELOW: u64 = 8 << 20;

/// Bytes asked for by the first request: the header and, for a raw NEFF,
/// the first tar headers; an object this small is read in that one request.
pub const FIRST: u64 = 256 << 10;

impl Object {
    /// Opens the object at `url` with one GET of its first [`FIRST`] bytes
    /// (all of it when smaller), which gives its size and ETag. When the
    /// server ignores the Range, the object is read whole instead (see the
    /// module's doc) and its first bytes come from that copy:
    /// [`take_whole`](Self::take_whole) then gives it.
    pub fn open(url: &str) -> Result<(Object, Vec<u8>)> {
        let (store, path) = store_for(url, Timeout::PerRequest)?;
        // An object a listing said is small is asked for whole: one
        // request, where a walk would cost several round trips.
        let asked = listed_size(url)
            .filter(|&n| n <= link::whole_below(WHOLE_BELOW))
            .map_or(FIRST, |n| n.max(FIRST))
            .min(link::cap().unwrap_or(u64::MAX));
        let opts = GetOptions {
            range: Some(GetRange::Bounded(0..asked)),
            ..Default::default()
        };
        let rt = runtime()?;
        let retries = retries();
        let first = rt.block_on(async {
            let mut tries = 0u64;
            let (r, body, headers, t0, alone) = loop {
                let t0 = std::time::Instant::now();
                let counted = link::Request::start();
                let r = match store.get_opts(&path, opts.clone()).await {
                    Ok(r) => r,
                    Err(e) if ignores_range(&e) => return Ok(None),
                    Err(e) => return Err(describe(&e, None)),
                };
                let headers = t0.elapsed();
                let meta = r.meta.clone();
                let range = r.range.clone();
                match collect(r, range.end - range.start).await {
                    Ok(body) => {
                        counted.got(body.len() as u64);
                        break ((meta, range), body, headers, t0, counted.alone());
                    }
                    // A body cut or reset: the first request again (no
                    // version is pinned yet), a bounded number of times.
                    Err((e, true)) if tries < retries => {
                        tries += 1;
                        log::debug!("{}: the first GET's body failed ({e}): again", redact(url));
                        backoff(tries).await;
                    }
                    Err((e, _)) => return Err(e),
                }
            };
            let (meta, range) = r;
            link::observe(headers, body.len() as u64, t0.elapsed() - headers, alone);
            log::info!(
                "{}: GET bytes {}..{} (open): {} bytes of {} in {:.1} ms",
                redact(url),
                range.start,
                range.end,
                body.len(),
                meta.size,
                t0.elapsed().as_secs_f64() * 1e3
            );
            Ok::<_, Error>(Some((meta, body)))
        })?;
        let Some((meta, bytes)) = first else {
            let (file, size, etag) = fetch_whole(url, &path, None)?;
            let mut first = vec![0u8; FIRST.min(size) as usize];
            file.read_exact_at(&mut first, 0)?;
            let object = Object {
                pin: Pinned {
                    url: url.to_string(),
                    store,
                    path,
                    size,
                    etag,
                },
                whole: OnceLock::from(file),
                fetching: Mutex::new(()),
                moved: size.into(),
                _open: link::open(),
            };
            return Ok((object, first));
        };
        let object = Object {
            pin: Pinned {
                url: url.to_string(),
                store,
                path,
                size: meta.size,
                etag: meta.e_tag,
            },
            whole: OnceLock::new(),
            fetching: Mutex::new(()),
            moved: (bytes.len() as u64).into(),
            _open: link::open(),
        };
        let want = asked.min(object.pin.size);
        if bytes.len() as u64 != want {
            return Err(remote(format!(
                "the server sent {} bytes for the first {want} of a {}-byte object",
                bytes.len(),
                object.pin.size
            )));
        }
        Ok((object, bytes))
    }

    /// Counts `n` more bytes asked of the object, refused past the cap on
    /// bytes moved per object ([`set_byte_cap`]).
    pub(crate) fn charge(&self, n: u64) -> Result<()> {
        use std::sync::atomic::Ordering;
        link::within_cap(self.moved.fetch_add(n, Ordering::Relaxed) + n)
    }

    /// Bytes that may still be asked of the object under the cap (`None`:
    /// no cap).
    pub fn budget(&self) -> Option<u64> {
        let moved = self.moved.load(std::sync::atomic::Ordering::Relaxed);
        link::cap().map(|cap| cap.saturating_sub(moved))
    }

    /// The bytes `parts` covers, fetched with several parts in flight and
    /// handed on in order: the tar walk reads through member data so. The
    /// span counts as moved when it is asked for.
    pub fn read_ahead(&self, parts: Parts) -> Result<ReadAhead<'_>> {
        let span = parts.span();
        self.check_range(&span)?;
        self.charge(span.end - span.start)?;
        ReadAhead::start(self, parts)
    }

    /// The bytes `head` (already held: the range's first bytes) and then
    /// `rest`, as a `Read`: `rest` is read ahead in parts growing from
    /// `first` bytes ([`STREAM_PART`]: the inflater starts soon) to [`PART`],
    /// several in flight, each pinned to the
    /// ETag, so that a gzip payload is inflated as it arrives, with no
    /// temporary file. A failure of the object comes out of `read` as an
    /// `io::Error` wrapping this crate's [`Error`] (see
    /// `payload::Pieces`, which unwraps it).
    pub fn reader<'a>(
        &'a self,
        head: &'a [u8],
        rest: Range<u64>,
        first: u64,
    ) -> Result<RangeReader<'a>> {
        let ahead = match rest.start < rest.end {
            true => Some(self.read_ahead(Parts::new(rest, first, PART))?),
            false => None,
        };
        Ok(RangeReader {
            head,
            chunks: std::collections::VecDeque::new(),
            ahead,
        })
    }

    /// The object's size, as its first response said.
    pub fn size(&self) -> u64 {
        self.pin.size
    }

    /// The ETag every read of it is pinned to, as its first response gave
    /// it (with its quotes), if it gave one.
    pub fn etag(&self) -> Option<&str> {
        self.pin.etag.as_deref()
    }

    /// The whole object in an unlinked temporary file, if its server
    /// ignored Range and it was read whole: the caller reads it as a local
    /// file from then on (later reads of this `Object` fetch by ranges
    /// again).
    pub fn take_whole(&mut self) -> Option<File> {
        self.whole.take()
    }

    /// The whole object on disk: the copy already made, or one GET of it
    /// now ([`fetch_whole`], pinned to the size and ETag), made once.
    pub(super) fn whole(&self) -> Result<&File> {
        if let Some(f) = self.whole.get() {
            return Ok(f);
        }
        let _one = self.fetching.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = self.whole.get() {
            return Ok(f);
        }
        let (file, _, _) = fetch_whole(
            &self.pin.url,
            &self.pin.path,
            Some((self.pin.size, self.pin.etag.as_deref())),
        )?;
        Ok(self.whole.get_or_init(|| file))
    }

    /// The bytes at `range` of the object, handed to `sink` in order as
    /// they arrive; exactly `range.len()` bytes or an error. A range longer
    /// than [`PART`] is fetched as parts of that size, up to the object's
    /// share of `--io-depth` (1 to 8) GETs in flight at once, each
    /// pinned to the ETag, and handed on in order: a large member or
    /// payload arrives at the speed of several connections (as `aws s3 cp`
    /// fetches one), with at most that many parts held. Once the server
    /// has ignored a Range, the object is read whole (once) and the rest
    /// of this range, and every later one, comes from that copy.
    pub fn stream(
        &self,
        range: Range<u64>,
        sink: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        self.check_range(&range)?;
        self.charge(range.end - range.start)?;
        if let Some(file) = self.whole.get() {
            return read_local(file, range, sink);
        }
        if range.end - range.start > PART {
            // Parts in flight, handed on in order: the read-ahead's way.
            let mut parts = ReadAhead::start(self, Parts::new(range, PART, PART))?;
            while let Some(part) = parts.next_part()? {
                for chunk in part {
                    sink(&chunk)?;
                }
            }
            return Ok(());
        }
        let mut sent = 0u64;
        let got = runtime()?.block_on(self.pin.get(range.clone(), &mut |c: Bytes| {
            sent += c.len() as u64;
            sink(&c)
        }));
        match got {
            Ok(()) => Ok(()),
            Err(Miss::Failed(e)) => Err(e),
            Err(Miss::IgnoredRange) => {
                read_local(self.whole()?, range.start + sent..range.end, sink)
            }
        }
    }

    pub(super) fn check_range(&self, range: &Range<u64>) -> Result<()> {
        if range.end > self.pin.size || range.start > range.end {
            return Err(remote(format!(
                "bytes {}..{} asked of a {}-byte object",
                range.start, range.end, self.pin.size
            )));
        }
        Ok(())
    }

    /// A local copy of the whole object, for a payload that cannot be read
    /// by ranges (gzip): `first` (its first bytes, as [`open`](Self::open)
    /// gave them) and then the rest in [`PART`]-sized GETs, the object's
    /// share of `--io-depth` in flight (1 to 8), each pinned to the ETag and
    /// written at its place in an unlinked temporary file (in `$TMPDIR`,
    /// gone when closed) as its bytes arrive. Memory holds the chunks in
    /// flight, never a part or the object. Returns the file and its length.
    /// From a server that ignores Range, the object is read whole by one
    /// GET (see [`stream`](Self::stream)) and that copy is the file, or,
    /// when a later part's Range was ignored, fills the rest of it
    /// ([`spool_landing`](Self::spool_landing)).
    pub fn spool(&self, first: &[u8]) -> Result<(File, u64)> {
        let file = self.spool_landing(first, |file, _| Ok(file))?;
        Ok((file, self.pin.size))
    }

    /// The bytes at `range`, in memory.
    pub fn read(&self, range: Range<u64>) -> Result<Vec<u8>> {
        let mut v = Vec::new();
        let n = range.end.saturating_sub(range.start);
        v.try_reserve_exact(usize::try_from(n).unwrap_or(usize::MAX))
            .map_err(|_| Error::OutOfMemory {
                what: "a range of a remote object",
            })?;
        self.stream(range, &mut |c| {
            v.extend_from_slice(c);
            Ok(())
        })?;
        Ok(v)
    }

    /// The size and version of the object at `url`: its `ETag`, else its
    /// `Last-Modified` (as a listing gives them: what a catalogue compares
    /// to answer from its row), from one GET of its first byte (a URL
    /// presigned for GET allows no HEAD), or a HEAD from a server that
    /// ignores Range. An answer with neither is an error: nothing tells
    /// this object from another of its size, and a catalogue reads it
    /// again each time rather than trust a row.
    #[cfg(feature = "catalog")]
    pub fn version_of(url: &str) -> Result<(u64, String)> {
        use object_store::ObjectStoreExt;
        let (store, path) = store_for(url, Timeout::PerRequest)?;
        let opts = GetOptions {
            range: Some(GetRange::Bounded(0..1)),
            ..Default::default()
        };
        runtime()?.block_on(async {
            let _counted = link::Request::start();
            let meta = match store.get_opts(&path, opts).await {
                // (The one byte of body is left unread.)
                Ok(r) => r.meta,
                Err(e) if ignores_range(&e) => {
                    store.head(&path).await.map_err(|e| describe(&e, None))?
                }
                Err(e) => return Err(describe(&e, None)),
            };
            // (object_store dates an answer without Last-Modified at 0.)
            let dated = meta.last_modified.timestamp_nanos_opt() != Some(0);
            let version = match meta.e_tag {
                Some(tag) => tag,
                None if dated => meta.last_modified.to_rfc3339(),
                None => return Err(remote(NO_VALIDATOR)),
            };
            Ok((meta.size, version))
        })
    }
}

impl Pinned {
    /// One GET of `range` (within the object), pinned to the ETag, its
    /// body handed to `sink` as it arrives and checked to be exactly the
    /// bytes asked for ([`Miss::IgnoredRange`], before any byte, when the
    /// server answers with the whole object).
    pub(super) async fn get<S: FnMut(Bytes) -> Result<()> + ?Sized>(
        &self,
        range: Range<u64>,
        sink: &mut S,
    ) -> std::result::Result<(), Miss> {
        if range.start >= range.end {
            return Ok(());
        }
        // A body cut or reset after some bytes is asked for again from
        // where it stopped (the same version: If-Match), a bounded number
        // of times; the client retries what fails before a body.
        let retries = retries();
        let mut at = range.start;
        let mut tries = 0u64;
        loop {
            match self.get_once(at..range.end, sink).await {
                Ok(()) => return Ok(()),
                Err((Miss::Failed(e), Some(n))) if tries < retries => {
                    tries += 1;
                    at += n;
                    log::debug!(
                        "{}: GET bytes {}..{} stopped after {n} bytes ({e}): again from {at}",
                        redact(&self.url),
                        at - n,
                        range.end
                    );
                    backoff(tries).await;
                }
                Err((miss, _)) => return Err(miss),
            }
        }
    }

    /// One GET of `range`; on a failure of its body (cut, reset), also how
    /// many bytes went to `sink` before it (`None`: a failure that asking
    /// again would not mend).
    pub(super) async fn get_once<S: FnMut(Bytes) -> Result<()> + ?Sized>(
        &self,
        range: Range<u64>,
        sink: &mut S,
    ) -> std::result::Result<(), (Miss, Option<u64>)> {
        let opts = GetOptions {
            range: Some(GetRange::Bounded(range.clone())),
            if_match: self.etag.clone(),
            ..Default::default()
        };
        let want = range.end - range.start;
        let etag = self.etag.as_deref();
        let t0 = std::time::Instant::now();
        let counted = link::Request::start();
        let r = match self.store.get_opts(&self.path, opts).await {
            Ok(r) => r,
            Err(e) if ignores_range(&e) => return Err((Miss::IgnoredRange, None)),
            Err(e) => return Err((describe(&e, etag).into(), None)),
        };
        let headers = t0.elapsed();
        if r.meta.size != self.size {
            let changed = Error::ObjectChanged {
                etag: etag.unwrap_or("").to_string(),
            };
            return Err((changed.into(), None));
        }
        if r.range != range {
            let e = remote(format!(
                "asked for bytes {}..{}, the server sent {}..{}",
                range.start, range.end, r.range.start, r.range.end
            ));
            return Err((e.into(), None));
        }
        let mut got = 0u64;
        let mut body = r.into_stream();
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|e| (describe(&e, etag).into(), Some(got)))?;
            if got + chunk.len() as u64 > want {
                let e = remote(format!(
                    "the server sent more than the {want} bytes asked for"
                ));
                return Err((e.into(), None));
            }
            let n = chunk.len() as u64;
            sink(chunk).map_err(|e| (e.into(), None))?;
            got += n;
            counted.got(n);
        }
        if got != want {
            let e = remote(format!(
                "truncated body: {got} of {want} bytes at offset {}",
                range.start
            ));
            return Err((e.into(), Some(got)));
        }
        link::observe(headers, got, t0.elapsed() - headers, counted.alone());
        log::info!(
            "{}: GET bytes {}..{}: {got} bytes in {:.1} ms",
            redact(&self.url),
            range.start,
            range.end,
            t0.elapsed().as_secs_f64() * 1e3
        );
        Ok(())
    }
}

/// The first part a [`RangeReader`] reads ahead: the inflater starts on
/// it while the larger parts after it are on their way.
pub const STREAM_PART: u64 = 256 << 10;

/// A range of an [`Object`] as a `Read` ([`Object::reader`]).
pub struct RangeReader<'o> {
    /// The range's first bytes, held by the caller (not copied).
    pub(super) head: &'o [u8],
    pub(super) chunks: std::collections::VecDeque<Bytes>,
    pub(super) ahead: Option<ReadAhead<'o>>,
}

impl std::io::Read for RangeReader<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        loop {
            if out.is_empty() {
                return Ok(0);
            }
            if !self.head.is_empty() {
                let n = self.head.len().min(out.len());
                out[..n].copy_from_slice(&self.head[..n]);
                self.head = &self.head[n..];
                return Ok(n);
            }
            if let Some(c) = self.chunks.front_mut() {
                let n = c.len().min(out.len());
                out[..n].copy_from_slice(&c[..n]);
                bytes::Buf::advance(c, n);
                if c.is_empty() {
                    self.chunks.pop_front();
                }
                return Ok(n);
            }
            let Some(ahead) = self.ahead.as_mut() else {
                return Ok(0);
            };
            match ahead.next_part() {
                Ok(Some(part)) => self
                    .chunks
                    .extend(part.into_iter().filter(|c| !c.is_empty())),
                Ok(None) => self.ahead = None,
                Err(e) => {
                    self.ahead = None;
                    return Err(std::io::Error::other(e));
                }
            }
        }
    }
}

/// Parts of a range of an [`Object`] in flight, handed on in order
/// ([`Object::read_ahead`]).
pub struct ReadAhead<'o> {
    pub(super) object: &'o Object,
    /// The parts not yet handed on, in order (the task's, mirrored: once
    /// the server ignores a Range, they come from the whole copy).
    pub(super) parts: std::collections::VecDeque<Range<u64>>,
    pub(super) rx: tokio::sync::mpsc::Receiver<std::result::Result<Vec<Bytes>, Miss>>,
    /// The task fetching the parts; `None` once they come from the whole
    /// copy of the object.
    pub(super) task: Option<tokio::task::JoinHandle<()>>,
    pub(super) _alive: link::Gauge,
}

impl<'o> ReadAhead<'o> {
    /// Starts fetching `parts` (within the object, charged by the caller).
    pub(super) fn start(object: &'o Object, parts: Parts) -> Result<Self> {
        let parts: std::collections::VecDeque<Range<u64>> = parts.collect();
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        // Its share among the others alive, then counted among them.
        let depth = ahead::depth();
        let alive = ahead::alive();
        if object.whole.get().is_some() {
            // The server ignores Range: every part from the whole copy.
            return Ok(ReadAhead {
                object,
                parts,
                rx,
                task: None,
                _alive: alive,
            });
        }
        let pin: Pinned = object.pin.clone();
        let todo: Vec<Range<u64>> = parts.iter().cloned().collect();
        log::debug!(
            "{}: reading ahead {} parts from byte {}, {depth} in flight",
            redact(&object.pin.url),
            todo.len(),
            todo.first().map_or(0, |r| r.start)
        );
        let task = runtime()?.spawn(async move {
            let pin = &pin;
            let fetches = futures_util::stream::iter(todo).map(|r| async move {
                // The body's chunks as the client received them: no copy.
                let mut held = Vec::new();
                pin.get(r, &mut |c| {
                    held.push(c);
                    Ok(())
                })
                .await
                .map(|()| held)
            });
            let mut fetches = std::pin::pin!(fetches.buffered(depth));
            while let Some(part) = fetches.next().await {
                let failed = part.is_err();
                if tx.send(part).await.is_err() || failed {
                    break;
                }
            }
        });
        Ok(ReadAhead {
            object,
            parts,
            rx,
            task: Some(task),
            _alive: alive,
        })
    }

    /// The next part (`None` once the range is done): its bytes in the
    /// chunks they arrived in.
    pub fn next_part(&mut self) -> Result<Option<Vec<Bytes>>> {
        let Some(range) = self.parts.pop_front() else {
            return Ok(None);
        };
        if self.task.is_some() {
            match runtime()?.block_on(self.rx.recv()) {
                Some(Ok(part)) => return Ok(Some(part)),
                Some(Err(Miss::Failed(e))) => return Err(e),
                Some(Err(Miss::IgnoredRange)) => {
                    if let Some(t) = self.task.take() {
                        t.abort();
                    }
                }
                None => {
                    return Err(Error::Remote {
                        reason: "the read-ahead ended before its range".into(),
                        io: std::io::ErrorKind::UnexpectedEof,
                    })
                }
            }
        }
        let mut part = Vec::with_capacity((range.end - range.start) as usize);
        read_local(self.object.whole()?, range, &mut |c| {
            part.extend_from_slice(c);
            Ok(())
        })?;
        Ok(Some(vec![Bytes::from(part)]))
    }
}

impl Drop for ReadAhead<'_> {
    fn drop(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

/// The size of the parts a long range is fetched in.
pub const PART: u64 = 8 << 20;

/// The body of a first response, checked against its announced length;
/// an error says whether asking again may mend it (a body cut or reset).
pub(super) async fn collect(
    r: object_store::GetResult,
    want: u64,
) -> std::result::Result<Vec<u8>, (Error, bool)> {
    let mut v = Vec::with_capacity(want.min(FIRST) as usize);
    let mut body = r.into_stream();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| (describe(&e, None), true))?;
        if (v.len() + chunk.len()) as u64 > want {
            return Err((
                remote(format!(
                    "the server sent more than the {want} bytes it announced"
                )),
                false,
            ));
        }
        v.extend_from_slice(&chunk);
    }
    if (v.len() as u64) < want {
        let e = remote(format!("truncated body: {} of {want} bytes", v.len()));
        return Err((e, true));
    }
    Ok(v)
}

/// The last `n` bytes of the object at `url` (all of it when shorter), in
/// one GET (two where the store takes no suffix range, as Azure's client:
/// its size asked for first).
pub fn read_tail(url: &str, n: u64) -> Result<Vec<u8>> {
    let (store, path) = store_for(url, Timeout::PerRequest)?;
    let opts = |range| GetOptions {
        range: Some(range),
        ..Default::default()
    };
    runtime()?.block_on(async {
        let _counted = link::Request::start();
        let got = match store.get_opts(&path, opts(GetRange::Suffix(n))).await {
            // A store without suffix ranges, or one that answers 416 to a
            // suffix longer than the object (rclone's): its size first.
            Err(e)
                if matches!(e, object_store::Error::NotSupported { .. })
                    || super::failure::answered(&e) == Some(416) =>
            {
                let _counted = link::Request::start();
                let size = object_store::ObjectStoreExt::head(&store, &path)
                    .await
                    .map_err(|e| describe(&e, None))?
                    .size;
                if size == 0 {
                    return Ok(Vec::new());
                }
                let _counted = link::Request::start();
                // An object no longer than the tail is asked for whole
                // (rclone answers a range of all of it 200, whole, which
                // `object_store` refuses as a range's answer).
                let whole = GetOptions::default();
                let o = match size <= n {
                    true => whole,
                    false => opts(GetRange::Bounded(size - n..size)),
                };
                store.get_opts(&path, o).await
            }
            r => r,
        };
        let r = got.map_err(|e| describe(&e, None))?;
        // At most the n bytes asked for, whatever range the answer claims.
        let want = r.range.end - r.range.start;
        if want > n {
            return Err(remote(format!(
                "the server answered {want} bytes for the last {n} asked"
            )));
        }
        collect(r, want).await.map_err(|(e, _)| e)
    })
}
