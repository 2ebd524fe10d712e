//! The `tar` crate as a pure-Rust oracle, with its known departures from
//! GNU tar and libarchive (the readers `neff` follows) taken out of the
//! comparison. Each departure is listed where it is handled:
//!
//! - a name or link target (GNU long name, PAX `path`/`linkpath`) with a
//!   NUL inside: the crate keeps the bytes after it; GNU tar and
//!   libarchive end the name at the NUL. Cut at the first NUL here.
//! - a PAX global header (`g`): the crate lists it as an entry; GNU tar
//!   and libarchive do not. Dropped here.
//! - two GNU long names (or long link names) for one entry: the crate
//!   refuses; GNU tar and libarchive both take the last. Not judged.
//! - a numeric field the crate cannot parse as a whole (it trims spaces
//!   and cuts at the first NUL, then wants only octal digits): a field of
//!   NULs, digits ended by a space and followed by more bytes
//!   (`"0000000004 7"`), anything after a leading NUL. GNU tar and
//!   libarchive read these (0, 4, 0) where `neff` does. Not judged.
//! - a volume label (`V`): the crate lists it as an entry; GNU tar and
//!   libarchive list no member for it (GNU tar shows a label). Dropped
//!   here.
//! - a GNU dump directory (`D`): the crate lists an entry of another
//!   type; GNU tar and libarchive a directory. Listed as a directory here.
//! - a type none of the readers knows (`Q`, `N`, `!`, …): the crate lists
//!   an entry of another type; GNU tar and libarchive read a regular file
//!   (GNU tar: "extracted as normal file"). Listed as a file here.
//! - a Solaris extended header (`X`): the crate lists it as an entry; GNU
//!   tar and libarchive apply it as a PAX header. Not judged.
//! - a regular file (`0` or NUL) whose name ends in `/`: the crate lists a
//!   file, GNU tar and libarchive a directory. Listed as a directory here.
//! - a header whose checksum is the signed byte sum (old writers): the
//!   crate checks the unsigned sum only; GNU tar and libarchive accept
//!   either. Not judged.
//! - a PAX header with a record the crate cannot parse: it skips records
//!   (the path among them) that GNU tar and libarchive read. Not judged.
//! - an extension header (PAX `x`, GNU `L`/`K`) without the ustar or GNU
//!   magic: the crate lists it as an entry; GNU tar and libarchive apply
//!   it to the next entry. Not judged.
//! - a header with the ustar magic (`ustar\0`) and a version other than
//!   `00` whose prefix field is not empty: the crate takes it as an old
//!   header and leaves the prefix out of the name; GNU tar and libarchive
//!   do not look at the version and join the prefix. Not judged.
//! - a GNU sparse file: the crate expands old-format (`S`) maps as GNU
//!   tar and libarchive do (compared: a file of its real size, holes as
//!   zeros), but knows nothing of the PAX encodings (0.0, 0.1, 1.0): it
//!   lists their stored bytes under the header's name. An entry with
//!   `GNU.sparse.*` PAX records is not judged.

use std::io::Read;

use tar::EntryType;

use crate::{Listed, Listing};

/// The crate's listing of `tar`, or `None` where it is known to read the
/// archive differently from GNU tar and libarchive, or where an entry's
/// data is larger than [`MAX_DATA`](crate::MAX_DATA).
pub fn list(tar: &[u8]) -> Option<Listing> {
    let mut ar = tar::Archive::new(tar);
    let entries = match ar.entries() {
        Ok(e) => e,
        Err(e) => return Some(Err(format!("open: {e}"))),
    };
    let mut out = Vec::new();
    for (i, e) in entries.enumerate() {
        let mut e = match e {
            Ok(e) => e,
            Err(err) if departs(&err.to_string()) => return None,
            Err(err) => return Some(Err(format!("entry {i}: {err}"))),
        };
        let raw = e.header().as_bytes();
        if &raw[257..263] == b"ustar\0" && &raw[263..265] != b"00" && raw[345] != 0 {
            return None;
        }
        let t = e.header().entry_type();
        let malformed_pax = match e.pax_extensions() {
            Ok(Some(recs)) => recs.into_iter().any(|r| r.is_err()),
            Ok(None) => false,
            Err(_) => true,
        };
        if malformed_pax {
            return None;
        }
        let pax_sparse = match e.pax_extensions() {
            Ok(Some(recs)) => recs
                .into_iter()
                .flatten()
                .any(|r| r.key_bytes().starts_with(b"GNU.sparse.")),
            _ => false,
        };
        if pax_sparse {
            return None;
        }
        let kind = match t {
            EntryType::XGlobalHeader => continue,
            EntryType::XHeader | EntryType::GNULongName | EntryType::GNULongLink => return None,
            EntryType::Regular | EntryType::Continuous => "file",
            EntryType::Directory => "dir",
            EntryType::Symlink => "symlink",
            EntryType::Link => "hardlink",
            EntryType::GNUSparse => "file",
            // The crate's other types carry their byte (`as_byte`).
            _ => match t.as_byte() {
                b'X' => return None,
                b'V' => continue,
                b'D' => "dir",
                // Devices and FIFOs, and the types GNU tar or libarchive
                // read otherwise than as a file (`neff` refuses an ACL and
                // a continuation).
                b'3' | b'4' | b'6' | b'A' | b'M' => "other",
                _ => "file",
            },
        };
        let name = cut_at_nul(&e.path_bytes());
        let kind = match kind {
            "file" if t == EntryType::Regular && name.ends_with(b"/") => "dir",
            k => k,
        };
        let link = e.link_name_bytes().map(|l| cut_at_nul(&l));
        let size = e.size();
        let mut data = Vec::new();
        if let Err(err) = (&mut e)
            .take(crate::MAX_DATA as u64 + 1)
            .read_to_end(&mut data)
        {
            return Some(Err(format!("data of entry {i}: {err}")));
        }
        if data.len() > crate::MAX_DATA {
            return None;
        }
        out.push(Listed {
            name,
            kind,
            size,
            link: if matches!(kind, "symlink" | "hardlink") {
                link
            } else {
                None
            },
            data,
        });
    }
    Some(Ok(out))
}

/// The crate's errors that mark one of its known departures.
fn departs(err: &str) -> bool {
    err.contains("two long name entries")
        || err.contains("numeric field was not a number")
        || err.contains("archive header checksum mismatch")
        // The crate's old GNU sparse reader refuses what GNU tar and
        // libarchive read alike: a short segment before the end-marker
        // entry, `S` under any magic but old GNU's (a plain file to both),
        // map fields it cannot parse whole after the map has ended
        // (`tests/sparse.rs`). Its sparse refusals are not judged; the
        // `vs_libarchive` target judges sparse maps.
        || err.contains("sparse")
}

fn cut_at_nul(b: &[u8]) -> Vec<u8> {
    b[..memchr(b)].to_vec()
}

fn memchr(b: &[u8]) -> usize {
    b.iter().position(|&c| c == 0).unwrap_or(b.len())
}
