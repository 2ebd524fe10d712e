//! One 512-byte tar header block, cast in place.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::number::{libarchive_bids, parse_octal};

/// Size of a tar block.
pub const BLOCK: usize = 512;

/// The POSIX ustar header layout (GNU uses the same offsets for the fields
/// read here; its `prefix` area holds other data and is ignored).
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, Unaligned)]
#[repr(C)]
pub struct Block {
    /// Member name, NUL-terminated unless it fills all 100 bytes (offset 0).
    pub name: [u8; 100],
    /// Permission bits, octal ASCII (offset 100).
    pub mode: [u8; 8],
    /// Owner user id, octal ASCII or GNU base-256 (offset 108).
    pub uid: [u8; 8],
    /// Owner group id, octal ASCII or GNU base-256 (offset 116).
    pub gid: [u8; 8],
    /// Data length in bytes, octal ASCII or GNU base-256 (offset 124); a PAX
    /// `size` record overrides it.
    pub size: [u8; 12],
    /// Modification time in seconds since the Unix epoch, octal ASCII or GNU
    /// base-256 (offset 136).
    pub mtime: [u8; 12],
    /// Header checksum, octal ASCII: the byte sum of the block with this field
    /// counted as eight spaces (offset 148); see [`Block::checksum_ok`].
    pub chksum: [u8; 8],
    /// Entry type (offset 156): `0`/NUL file, `1` hard link, `2` symlink, `5`
    /// directory, `x`/`g` PAX extended headers, `L`/`K` GNU long name/link, ….
    pub typeflag: u8,
    /// Link target of a hard or symbolic link, NUL-terminated unless full (offset 157).
    pub linkname: [u8; 100],
    /// `ustar\0` for POSIX ustar/PAX, `ustar ` for GNU tar, zeros for v7 (offset 257).
    pub magic: [u8; 6],
    /// `00` for POSIX, ` \0` for GNU (offset 263).
    pub version: [u8; 2],
    /// Owner user name, NUL-terminated (offset 265).
    pub uname: [u8; 32],
    /// Owner group name, NUL-terminated (offset 297).
    pub gname: [u8; 32],
    /// Device major number of a character or block device, octal (offset 329).
    pub devmajor: [u8; 8],
    /// Device minor number of a character or block device, octal (offset 337).
    pub devminor: [u8; 8],
    /// ustar only: the leading directories of a long name, joined to `name`
    /// with a `/` (offset 345).
    pub prefix: [u8; 155],
    /// Unused padding up to 512 bytes (offset 500).
    pub pad: [u8; 12],
}

const _: () = assert!(std::mem::size_of::<Block>() == BLOCK);

impl Block {
    /// Whether the stored checksum matches the block (unsigned or, as some
    /// old writers computed it, signed byte sum).
    pub fn checksum_ok(&self) -> bool {
        let Ok(stored) = parse_octal(&self.chksum) else {
            return false;
        };
        // Sum every byte (a loop the compiler vectorizes), then count the
        // checksum field itself as eight spaces.
        let bytes = self.as_bytes();
        let field = &bytes[148..156];
        let blanks = 8 * u64::from(b' ');
        let unsigned: u64 = bytes.iter().map(|&b| u64::from(b)).sum::<u64>()
            - field.iter().map(|&b| u64::from(b)).sum::<u64>()
            + blanks;
        if stored == unsigned {
            return true;
        }
        let signed: i64 = bytes.iter().map(|&b| i64::from(b as i8)).sum::<i64>()
            - field.iter().map(|&b| i64::from(b as i8)).sum::<i64>()
            + blanks as i64;
        stored as i64 == signed
    }

    /// Checks what libarchive's format bid checks in the first header of
    /// an archive: its typeflag is NUL, a digit or a letter, and its mode,
    /// uid, gid, mtime, size and device fields are octal digits between
    /// spaces and NULs (or start with a NUL or a base-256 marker).
    /// libarchive does not recognize a tar whose first header fails this;
    /// GNU tar reads it. In later headers libarchive no longer checks
    /// (see [`number`](super::number) for how each field is then read).
    pub fn check_first(&self) -> Result<(), String> {
        let t = self.typeflag;
        if !(t == 0 || t.is_ascii_alphanumeric()) {
            return Err(format!(
                "typeflag '{}' in the first header: libarchive does not recognize \
                 the archive as tar (GNU tar and libarchive read it differently)",
                [t].escape_ascii()
            ));
        }
        for (what, f) in [
            ("mode", &self.mode[..]),
            ("uid", &self.uid[..]),
            ("gid", &self.gid[..]),
            ("mtime", &self.mtime[..]),
            ("size", &self.size[..]),
            ("devmajor", &self.devmajor[..]),
            ("devminor", &self.devminor[..]),
        ] {
            if !libarchive_bids(f) {
                return Err(format!(
                    "{what} field \"{}\" in the first header: libarchive does not \
                     recognize the archive as tar (GNU tar and libarchive read it \
                     differently)",
                    f.escape_ascii()
                ));
            }
        }
        Ok(())
    }

    /// POSIX ustar (`ustar\0`), whose `prefix` field extends the name.
    pub fn is_ustar(&self) -> bool {
        &self.magic == b"ustar\0"
    }

    /// Old GNU (`ustar  \0`: magic `ustar ` and version ` \0`), the only
    /// format in which GNU tar and libarchive read typeflag `S` as a sparse
    /// file; under any other magic both read it as a plain file.
    pub fn is_old_gnu(&self) -> bool {
        &self.magic == b"ustar " && &self.version == b" \0"
    }

    /// A GNU sparse file with its map in the header: typeflag `S` under
    /// the old GNU magic.
    pub fn is_old_gnu_sparse(&self) -> bool {
        self.typeflag == b'S' && self.is_old_gnu()
    }

    /// The field up to its first NUL.
    pub fn field(f: &[u8]) -> &[u8] {
        &f[..memchr::memchr(0, f).unwrap_or(f.len())]
    }
}
