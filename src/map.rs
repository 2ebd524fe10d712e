//! The bytes of a NEFF file: memory-mapped, or read into memory.
//!
//! This module holds every `unsafe` block of the crate, and no other module
//! has any: the read-only shared map of a whole file ([`FileBytes::open`])
//! and the SIGBUS guard that keeps a file
//! truncated under a mapping from killing the process ([`guard`]).
//! Everything above it sees a plain `&[u8]`.
//!
//! # Files that change under the reader
//!
//! A compile cache is written while it is read. A read of a shared mapping
//! past the end of a file that another process truncated raises SIGBUS,
//! which by default kills the process. Every mapping made here is
//! registered with [`guard`]: its SIGBUS handler maps a page of zeros over
//! the faulting page of a registered mapping and records the fault, so the
//! read goes on (seeing zeros) and the mapping's owner learns of it through
//! [`FileBytes::changed`]. Callers check that before they trust what they
//! read (`Neff` does after opening and on every error), and report the file
//! as changed while read. A fault outside our mappings goes to whatever
//! handler was there before (or the default action).
//!
//! Files are opened non-blocking and checked to be regular files on the
//! open descriptor ([`open_regular`]): a FIFO, a device or a socket named
//! like a NEFF is refused without a read that could block or never end.
//!
//! # Access times
//!
//! Files are opened with `O_NOATIME` where the kernel allows it (the
//! caller owns the file, or holds `CAP_FOWNER`), so reading a NEFF does
//! not count as using it. Where it does not, a reader that must leave the
//! access time alone (a compile cache's judgement: `--max-size` evicts by
//! it) asks [`atime`] whether the read would move it, and reads nothing
//! if so ([`Error::AtimeKept`]).

use std::fs::File;
use std::ops::Deref;
use std::path::Path;

use memmap2::Mmap;

use crate::error::{Error, Result};

mod atime;

/// The whole file's bytes, however they were obtained.
#[derive(Debug)]
pub enum FileBytes {
    /// A read-only shared mapping of the file (the file is kept open for
    /// copy-on-write mappings of its members).
    Mapped(Guarded<Mmap>, File),
    /// The file read into (or built in) memory.
    Owned(Vec<u8>),
}

impl Deref for FileBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            FileBytes::Mapped(m, _) => &m.map,
            FileBytes::Owned(v) => v,
        }
    }
}

/// Opens `path` for reading without blocking, and refuses anything that is
/// not a regular file, judged on the open descriptor (so a file swapped for
/// a FIFO between a directory walk and the open cannot hang the caller).
/// A directory is the I/O error the OS gives for reading one.
pub fn open_regular(path: &Path) -> Result<File> {
    open_sized(path, false).map(|(file, _)| file)
}

/// [`open_regular`], with the file's size from the same `fstat`.
/// `keep_atime`: refuse ([`Error::AtimeKept`]) a file the caller may not
/// open with `O_NOATIME` whose access time a read would move (judged from
/// that same `fstat`, and the mount's options: see [`atime`]).
fn open_sized(path: &Path, keep_atime: bool) -> Result<(File, u64)> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    // Reading a NEFF to describe it is not a use of it: where the caller
    // may (it owns the file, or is root), the read leaves the file's access
    // time alone, which is what a compile cache's least-recently-used
    // eviction (`neff cache prune --max-size`) goes by. Elsewhere the open
    // is refused (EPERM) and made again without; opening reads nothing,
    // so the time is still the file's own when `keep_atime` looks at it.
    let open = |noatime: libc::c_int| {
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | noatime)
            .open(path)
    };
    let (file, noatime) = match open(libc::O_NOATIME) {
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => (open(0)?, false),
        r => (r?, true),
    };
    let meta = file.metadata()?;
    let t = meta.file_type();
    if t.is_file() {
        if keep_atime && !noatime {
            atime::untouched(path, &meta)?;
        }
        return Ok((file, meta.len()));
    }
    if t.is_dir() {
        return Err(Error::Io(std::io::Error::from_raw_os_error(libc::EISDIR)));
    }
    let what = if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    };
    Err(Error::refused(format!(
        "{what}, not a regular file: refused without reading it"
    )))
}

/// How to bring a file into memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadMode {
    /// Map files of at least 64 KiB, read smaller ones (a read of a small
    /// file is cheaper than setting up and tearing down a mapping).
    #[default]
    Auto,
    /// Always memory-map.
    Map,
    /// Always read into memory.
    Read,
}

/// Files below this size are read rather than mapped in [`ReadMode::Auto`].
pub const MAP_THRESHOLD: u64 = 64 << 10;

impl FileBytes {
    /// Opens `path` and returns its bytes (mapped or read, per `mode`).
    pub fn open(path: &Path, mode: ReadMode) -> Result<FileBytes> {
        FileBytes::open_reusing(path, mode, false, Vec::new())
    }

    /// [`open`](Self::open), reading into `buf` (cleared first) when the
    /// file is read rather than mapped, so a scan can reuse one buffer.
    /// `keep_atime`: a file whose access time the read would move, and
    /// that the caller may not open with `O_NOATIME`, is not read
    /// ([`Error::AtimeKept`]).
    pub fn open_reusing(
        path: &Path,
        mode: ReadMode,
        keep_atime: bool,
        buf: Vec<u8>,
    ) -> Result<FileBytes> {
        let (file, len) = open_sized(path, keep_atime)?;
        FileBytes::from_open(file, len, mode, buf)
    }

    /// The bytes of `file`, an open regular file of `len` bytes (mapped or
    /// read per `mode`; read into `buf` when read): a file opened by
    /// [`open_reusing`](Self::open_reusing), or a spool of a remote object.
    pub fn from_open(file: File, len: u64, mode: ReadMode, mut buf: Vec<u8>) -> Result<FileBytes> {
        let map = match mode {
            ReadMode::Map => len > 0,
            ReadMode::Read => false,
            ReadMode::Auto => len >= MAP_THRESHOLD,
        };
        if !map {
            buf.clear();
            buf.reserve(len as usize);
            use std::io::Read;
            // At most the size the file had when opened: a file that grows
            // while it is read cannot make the read go on forever.
            (&file).take(len).read_to_end(&mut buf)?;
            return Ok(FileBytes::Owned(buf));
        }
        // SAFETY: the mapping is read-only. Another process may rewrite the
        // file while it is mapped: that changes the bytes under us. Rust's
        // model has no room for a `&[u8]` whose bytes change; this is the
        // risk every reader of a mapped file accepts (memmap2 says so), and
        // the crate keeps it small: every offset and length is checked
        // against the mapping's length, which a rewrite cannot change, so a
        // rewrite gives different (still bounded) bytes, never an access
        // out of range. It may also
        // truncate the file: reads past the new end raise SIGBUS, which the
        // guard turns into a page of zeros and a recorded fault (see the
        // module docs and `guard`): the process is not killed, and the
        // owner reports the file as changed. A remote object's spool is
        // mapped while its download still writes it
        // (`remote::Object::spool_landing`): the file is sized to the object
        // first, so no read is out of range, and the reader waits for each
        // range to land (a mutex and condvar order the write before the
        // read) before it reads it; a byte read before that would be a
        // zero of the sparse file, never memory outside the map.
        let map = unsafe { Mmap::map(&file)? };
        Ok(FileBytes::Mapped(Guarded::new(map), file))
    }

    /// Whether a registered mapping of this file faulted because the file
    /// shrank while it was read: what was read from it cannot be trusted.
    pub fn changed(&self) -> bool {
        match self {
            FileBytes::Mapped(m, _) => m.faulted(),
            FileBytes::Owned(_) => false,
        }
    }
}

impl FileBytes {
    /// Gives back the vector of bytes that were read, for reuse.
    pub fn into_vec(self) -> Option<Vec<u8>> {
        match self {
            FileBytes::Owned(v) => Some(v),
            FileBytes::Mapped(..) => None,
        }
    }

    /// Prefaults the page tables for `len` bytes at `offset` in one call
    /// (`MADV_POPULATE_READ`), for a range about to be read whole. A no-op
    /// for bytes read into memory.
    pub fn populate(&self, offset: usize, len: usize) {
        if let FileBytes::Mapped(m, _) = self {
            if len > 0
                && offset
                    .checked_add(len)
                    .is_some_and(|end| end <= m.map.len())
            {
                // A hint: without it the pages fault in as they are read.
                let _ = m
                    .map
                    .advise_range(memmap2::Advice::PopulateRead, offset, len);
            }
        }
    }

    /// Unmaps the pages of `len` bytes at `offset` from this process
    /// (`MADV_DONTNEED`), for a range already read that will not be read
    /// again soon: a large gzip payload inflated as a stream is released
    /// behind the inflater, so the process's memory does not grow with the
    /// file. The pages stay in the page cache, and a later read of the range
    /// faults them back in with the same bytes. A no-op for bytes read into
    /// memory.
    pub fn release(&self, offset: usize, len: usize) {
        if let FileBytes::Mapped(m, _) = self {
            if len > 0
                && offset
                    .checked_add(len)
                    .is_some_and(|end| end <= m.map.len())
            {
                // SAFETY: the map is a read-only MAP_SHARED mapping of a file.
                // MADV_DONTNEED on such a mapping only drops this process's
                // page-table entries: the memory stays mapped, and the next
                // read of any byte in the range faults in the file's page
                // again (from the page cache), so every reference into the
                // map keeps seeing the file's bytes, exactly as before the
                // call. (A file truncated meanwhile faults with SIGBUS on
                // that read, which the guard handles as for any other read.)
                // Nothing is written through the map, so nothing is lost.
                let _ = unsafe {
                    m.map
                        .unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, offset, len)
                };
            }
        }
    }

    /// The open file behind a mapping.
    pub fn file(&self) -> Option<&File> {
        match self {
            FileBytes::Mapped(_, f) => Some(f),
            FileBytes::Owned(_) => None,
        }
    }

    /// Tells the kernel how the mapping will be read: `Random` for a raw tar
    /// (only header pages are touched, so no readahead or fault-around
    /// should pull in member data), `Sequential` for a payload inflated or
    /// hashed front to back. A no-op for bytes read into memory.
    pub fn advise(&self, advice: memmap2::Advice) {
        if let FileBytes::Mapped(m, _) = self {
            // Advice is a hint; failure changes nothing but speed.
            let _ = m.map.advise(advice);
        }
    }
}

/// A mapping registered with the SIGBUS [`guard`] for as long as it lives.
#[derive(Debug)]
pub struct Guarded<M: Deref<Target = [u8]>> {
    map: M,
    slot: Option<usize>,
}

impl<M: Deref<Target = [u8]>> Guarded<M> {
    fn new(map: M) -> Guarded<M> {
        let slot = guard::register(map.as_ptr() as usize, map.len());
        Guarded { map, slot }
    }

    /// Whether a read of this mapping hit the end of a truncated file.
    /// Without a free guard slot the mapping is unguarded (see
    /// [`guard::SLOTS`]) and this is always false.
    fn faulted(&self) -> bool {
        self.slot.is_some_and(guard::faulted)
    }
}

impl<M: Deref<Target = [u8]>> Drop for Guarded<M> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot {
            guard::unregister(slot);
        }
    }
}

pub mod guard {
    //! The SIGBUS guard: a process-wide handler and a fixed table of the
    //! address ranges it may repair.
    //!
    //! The table is a fixed array of atomics, so the handler reads it
    //! without locks or allocation (both unsafe in a signal handler). When a
    //! registered range faults, the handler maps one anonymous zero page
    //! over the faulting page (`mmap` with `MAP_FIXED` is async-signal-safe),
    //! marks the slot, and returns: the faulting load runs again and reads
    //! zeros. A fault outside every registered range is handed to the
    //! previous handler, or the default action is restored so the fault
    //! kills the process as it would have without us.

    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::OnceLock;

    /// How many mappings can be guarded at once. A scan holds one per
    /// worker (the file); past this, a mapping is made unguarded rather
    /// than refused.
    pub const SLOTS: usize = 256;

    struct Slot {
        start: AtomicUsize,
        len: AtomicUsize,
        faulted: AtomicBool,
    }

    #[allow(clippy::declare_interior_mutable_const)]
    const EMPTY: Slot = Slot {
        start: AtomicUsize::new(0),
        len: AtomicUsize::new(0),
        faulted: AtomicBool::new(false),
    };
    static TABLE: [Slot; SLOTS] = [EMPTY; SLOTS];
    /// The handler that was installed before ours.
    static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();
    /// The page size, read once outside the handler.
    static PAGE: AtomicUsize = AtomicUsize::new(4096);

    fn install() -> bool {
        static INSTALLED: OnceLock<bool> = OnceLock::new();
        *INSTALLED.get_or_init(|| {
            // SAFETY: a zeroed sigaction is a valid "no handler, empty mask"
            // value; we fill in a handler with the SA_SIGINFO signature and
            // read back the previous action from the kernel.
            unsafe {
                let page = libc::sysconf(libc::_SC_PAGESIZE);
                if page > 0 {
                    PAGE.store(page as usize, Ordering::Relaxed);
                }
                let mut new: libc::sigaction = std::mem::zeroed();
                new.sa_sigaction = on_sigbus as *const () as usize;
                new.sa_flags = libc::SA_SIGINFO | libc::SA_NODEFER;
                libc::sigemptyset(&mut new.sa_mask);
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(libc::SIGBUS, &new, &mut old) != 0 {
                    return false;
                }
                let _ = PREVIOUS.set(old);
            }
            true
        })
    }

    /// Registers `[start, start + len)`; `None` when the handler cannot be
    /// installed or every slot is taken.
    pub(super) fn register(start: usize, len: usize) -> Option<usize> {
        if len == 0 || !install() {
            return None;
        }
        for (i, slot) in TABLE.iter().enumerate() {
            if slot
                .len
                .compare_exchange(0, usize::MAX, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                slot.faulted.store(false, Ordering::Relaxed);
                slot.start.store(start, Ordering::Relaxed);
                slot.len.store(len, Ordering::Release);
                return Some(i);
            }
        }
        None
    }

    pub(super) fn unregister(i: usize) {
        TABLE[i].len.store(0, Ordering::Release);
    }

    pub(super) fn faulted(i: usize) -> bool {
        TABLE[i].faulted.load(Ordering::Acquire)
    }

    extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
        // SAFETY: the kernel passes a valid siginfo for an SA_SIGINFO
        // handler; `si_addr` is the faulting address for SIGBUS.
        let addr = unsafe { (*info).si_addr() } as usize;
        for slot in &TABLE {
            let len = slot.len.load(Ordering::Acquire);
            if len == 0 || len == usize::MAX {
                continue;
            }
            let start = slot.start.load(Ordering::Relaxed);
            if addr >= start && addr - start < len {
                // SAFETY: `page` lies inside a live mapping this process
                // made (registered until it is unmapped); replacing one of
                // its pages by an anonymous read-only zero page changes
                // what later loads see but keeps the range mapped, so the
                // slices borrowed from it stay valid.
                let page_size = PAGE.load(Ordering::Relaxed);
                let page = addr & !(page_size - 1);
                let r = unsafe {
                    libc::mmap(
                        page as *mut libc::c_void,
                        page_size,
                        libc::PROT_READ,
                        libc::MAP_FIXED | libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                        -1,
                        0,
                    )
                };
                if r != libc::MAP_FAILED {
                    slot.faulted.store(true, Ordering::Release);
                    return;
                }
            }
        }
        // Not ours (or not repairable): what would have happened without us.
        // SAFETY: re-installing the previous action (or the default) for
        // SIGBUS and returning makes the faulting instruction run again and
        // fault into that action; calling a previous SA_SIGINFO handler
        // directly passes it the same arguments the kernel gave us.
        unsafe {
            match PREVIOUS.get() {
                Some(prev)
                    if prev.sa_sigaction != libc::SIG_DFL && prev.sa_sigaction != libc::SIG_IGN =>
                {
                    if prev.sa_flags & libc::SA_SIGINFO != 0 {
                        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                            std::mem::transmute(prev.sa_sigaction);
                        f(sig, info, ctx);
                    } else {
                        let f: extern "C" fn(libc::c_int) = std::mem::transmute(prev.sa_sigaction);
                        f(sig);
                    }
                }
                _ => {
                    let mut dfl: libc::sigaction = std::mem::zeroed();
                    dfl.sa_sigaction = libc::SIG_DFL;
                    libc::sigaction(libc::SIGBUS, &dfl, std::ptr::null_mut());
                }
            }
        }
    }
}

/// A file whose bytes land only when a reader waits for them, for the
/// tests of input still arriving (`payload`'s): the mapping's `unsafe`
/// lives here, with the crate's others.
#[cfg(all(test, feature = "fuzzing"))]
pub(crate) mod lazy {
    use crate::map::{FileBytes, ReadMode};
    use std::fs::File;
    use std::os::unix::fs::FileExt;

    /// A file whose bytes land only when a reader of its map waits for
    /// them, exactly those bytes, and whose map is unreadable until then,
    /// page by page: a read of a page not waited for kills the test (and
    /// a read of a byte not waited for on a page that was sees `fill`,
    /// garbage or the zeros of a sparse file, not the input's byte).
    pub(crate) struct Lazy {
        file: File,
        data: Vec<u8>,
        map: usize,
    }

    const PAGE: usize = 4096;

    impl Lazy {
        /// Writes the input's bytes `r` into the file and makes their
        /// pages of the map readable.
        pub(crate) fn wait(&self, r: std::ops::Range<usize>) -> std::io::Result<()> {
            self.file
                .write_all_at(&self.data[r.clone()], r.start as u64)?;
            let from = r.start / PAGE * PAGE;
            let to = r.end.div_ceil(PAGE) * PAGE;
            // SAFETY: `map + from .. map + to` lies in the test's live
            // mapping of the file (page-aligned: the map is; `to` may pass
            // the file's end inside its last page, which the map covers).
            // Making pages readable again takes nothing from any reference.
            let ok = unsafe {
                libc::mprotect(
                    (self.map + from) as *mut libc::c_void,
                    to - from,
                    libc::PROT_READ,
                )
            };
            assert_eq!(ok, 0, "mprotect");
            Ok(())
        }
    }

    /// A file of `data`'s length holding `fill`, mapped with every page
    /// unreadable, and the `Lazy` that lands `data`'s bytes in it.
    pub(crate) fn lazy(data: &[u8], fill: u8) -> (Lazy, FileBytes) {
        let file = tempfile::tempfile().unwrap();
        file.set_len(data.len() as u64).unwrap();
        if fill != 0 {
            file.write_all_at(&vec![fill; data.len()], 0).unwrap();
        }
        let len = data.len() as u64;
        let map = FileBytes::from_open(file.try_clone().unwrap(), len, ReadMode::Map, Vec::new());
        let map = map.unwrap();
        let base = map.as_ptr() as usize;
        // SAFETY: the whole mapping, made above and alive until the test
        // drops it; nothing has borrowed its bytes yet, and every read of
        // them after this goes through `Lazy::wait`, which makes the
        // pages read readable first (a read that does not kills the test:
        // what it is for). Unmapping does not care about protection.
        let ok = unsafe {
            libc::mprotect(
                base as *mut libc::c_void,
                data.len().div_ceil(PAGE) * PAGE,
                libc::PROT_NONE,
            )
        };
        assert_eq!(ok, 0, "mprotect");
        let lazy = Lazy {
            file,
            data: data.to_vec(),
            map: base,
        };
        (lazy, map)
    }
}
