//! The system libarchive (Debian `libarchive-dev`), the runtime's tar
//! reader, through the dozen C functions a listing needs.
//!
//! This is the only `unsafe` of the oracle crate: FFI calls into a C
//! library. Each call's contract is the one `archive.h` and
//! `archive_entry.h` document; the safety comments say how it is met.

use std::ffi::{c_char, c_int, c_void, CStr};

use crate::{Listed, Listing};

#[repr(C)]
struct Archive {
    _private: [u8; 0],
}
#[repr(C)]
struct ArchiveEntry {
    _private: [u8; 0],
}

const ARCHIVE_EOF: c_int = 1;
const ARCHIVE_OK: c_int = 0;
const ARCHIVE_WARN: c_int = -20;

const AE_IFMT: u32 = 0o170000;
const AE_IFREG: u32 = 0o100000;
const AE_IFLNK: u32 = 0o120000;
const AE_IFDIR: u32 = 0o040000;

#[link(name = "archive")]
extern "C" {
    fn archive_read_new() -> *mut Archive;
    fn archive_read_support_format_tar(a: *mut Archive) -> c_int;
    fn archive_read_open_memory(a: *mut Archive, buf: *const c_void, size: usize) -> c_int;
    fn archive_read_next_header(a: *mut Archive, e: *mut *mut ArchiveEntry) -> c_int;
    fn archive_read_data(a: *mut Archive, buf: *mut c_void, size: usize) -> isize;
    fn archive_read_free(a: *mut Archive) -> c_int;
    fn archive_error_string(a: *mut Archive) -> *const c_char;
    fn archive_entry_pathname(e: *mut ArchiveEntry) -> *const c_char;
    fn archive_entry_size(e: *mut ArchiveEntry) -> i64;
    fn archive_entry_filetype(e: *mut ArchiveEntry) -> u32;
    fn archive_entry_symlink(e: *mut ArchiveEntry) -> *const c_char;
    fn archive_entry_hardlink(e: *mut ArchiveEntry) -> *const c_char;
    fn archive_entry_sparse_count(e: *mut ArchiveEntry) -> c_int;
}

/// Owns one `struct archive` reading `tar`, freed on drop.
struct Reader<'a> {
    a: *mut Archive,
    _tar: &'a [u8],
}

impl Drop for Reader<'_> {
    fn drop(&mut self) {
        // SAFETY: `a` came from archive_read_new, is non-null, and is freed
        // exactly once, here.
        unsafe { archive_read_free(self.a) };
    }
}

impl Reader<'_> {
    fn error(&self) -> String {
        // SAFETY: `a` is a live archive; the string it returns (or NULL) is
        // valid until the next call on `a`, and is copied at once.
        let p = unsafe { archive_error_string(self.a) };
        text(p).map_or_else(
            || "(no message)".into(),
            |b| String::from_utf8_lossy(&b).into(),
        )
    }
}

/// A NUL-terminated C string copied out, or `None` for NULL.
fn text(p: *const c_char) -> Option<Vec<u8>> {
    // SAFETY: libarchive returns NULL or a pointer to a NUL-terminated
    // string that stays valid until the next call on its archive or entry;
    // it is copied before any such call.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_bytes().to_vec())
}

/// libarchive's reading of `tar` as a tar archive (the tar format only, no
/// filter: the runtime inflates the payload itself and hands libarchive the
/// tar bytes). Every entry up to the end of the archive, or the error that
/// stopped it; `None` when an entry's data is larger than
/// [`MAX_DATA`](crate::MAX_DATA) (a sparse file's holes, say: not judged).
pub fn list(tar: &[u8]) -> Option<Listing> {
    // SAFETY: archive_read_new has no preconditions; NULL is checked.
    let a = unsafe { archive_read_new() };
    assert!(!a.is_null(), "libarchive could not allocate a reader");
    let r = Reader { a, _tar: tar };
    // SAFETY: `a` is a fresh reader; open_memory keeps a pointer to `tar`,
    // which outlives `r` (the borrow in `Reader` ties them).
    let rc = unsafe {
        archive_read_support_format_tar(a);
        archive_read_open_memory(a, tar.as_ptr().cast(), tar.len())
    };
    if rc != ARCHIVE_OK {
        return Some(Err(format!("open: {}", r.error())));
    }
    let mut entries = Vec::new();
    loop {
        let mut e: *mut ArchiveEntry = std::ptr::null_mut();
        // SAFETY: `a` is open; `e` receives an entry owned by `a`, valid
        // until the next next_header call, and used only before it.
        let rc = unsafe { archive_read_next_header(a, &mut e) };
        match rc {
            ARCHIVE_EOF => return Some(Ok(entries)),
            ARCHIVE_OK | ARCHIVE_WARN => {}
            _ => return Some(Err(format!("entry {}: {}", entries.len(), r.error()))),
        }
        // SAFETY (this block): `e` is the live entry just returned.
        let (name, ftype, size, symlink, hardlink, _sparse) = unsafe {
            (
                text(archive_entry_pathname(e)),
                archive_entry_filetype(e) & AE_IFMT,
                archive_entry_size(e),
                text(archive_entry_symlink(e)),
                text(archive_entry_hardlink(e)),
                archive_entry_sparse_count(e),
            )
        };
        let kind = if hardlink.is_some() {
            "hardlink"
        } else {
            match ftype {
                // A GNU sparse file: listed with its real size, and read
                // expanded (holes as zeros), as `neff` reads it.
                AE_IFREG => "file",
                AE_IFDIR => "dir",
                AE_IFLNK => "symlink",
                _ => "other",
            }
        };
        let mut data = Vec::new();
        let mut buf = vec![0u8; 64 << 10];
        loop {
            // SAFETY: `buf` is writable for its length; `a` is open.
            let n = unsafe { archive_read_data(a, buf.as_mut_ptr().cast(), buf.len()) };
            if n < 0 {
                return Some(Err(format!(
                    "data of entry {}: {}",
                    entries.len(),
                    r.error()
                )));
            }
            if n == 0 {
                break;
            }
            data.extend_from_slice(&buf[..n as usize]);
            if data.len() > crate::MAX_DATA {
                return None;
            }
        }
        entries.push(Listed {
            name: name.unwrap_or_default(),
            kind,
            size: u64::try_from(size).unwrap_or(u64::MAX),
            link: hardlink.or(symlink),
            data,
        });
    }
}
