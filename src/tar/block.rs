//! One 512-byte tar header block, cast in place.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::number::parse_octal;

/// Size of a tar block.
pub const BLOCK: usize = 512;

/// The POSIX ustar header layout (GNU uses the same offsets for the fields
/// read here; its `prefix` area holds other data and is ignored).
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, Unaligned)]
#[repr(C)]
pub struct Block {
    pub name: [u8; 100],
    pub mode: [u8; 8],
    pub uid: [u8; 8],
    pub gid: [u8; 8],
    pub size: [u8; 12],
    pub mtime: [u8; 12],
    pub chksum: [u8; 8],
    pub typeflag: u8,
    pub linkname: [u8; 100],
    pub magic: [u8; 6],
    pub version: [u8; 2],
    pub uname: [u8; 32],
    pub gname: [u8; 32],
    pub devmajor: [u8; 8],
    pub devminor: [u8; 8],
    pub prefix: [u8; 155],
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

    /// POSIX ustar (`ustar\0`), whose `prefix` field extends the name.
    pub fn is_ustar(&self) -> bool {
        &self.magic == b"ustar\0"
    }

    /// The field up to its first NUL.
    pub fn field(f: &[u8]) -> &[u8] {
        &f[..memchr::memchr(0, f).unwrap_or(f.len())]
    }
}
