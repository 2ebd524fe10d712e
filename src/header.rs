//! The 1024-byte NEFF header: its on-disk layout and the structural checks
//! that stand in for a magic number.
//!
//! The layout is the runtime loader's (docs/FORMAT.md §1.1). All integers are
//! little-endian; the struct is cast straight from the file's bytes with
//! zerocopy, so reading a header copies nothing.

use zerocopy::little_endian::{U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::error::{Error, Result};

/// Size of the header every NEFF starts with.
pub const HEADER_SIZE: usize = 1024;

/// The on-disk header, field for field (docs/FORMAT.md §1.1), read in place
/// from the file's bytes. Its numbers are little-endian on disk; the
/// accessors give them as plain integers.
#[derive(Clone, FromBytes, IntoBytes, Immutable, KnownLayout, Unaligned)]
#[repr(C)]
pub struct Header {
    /// 1 = raw tar + SHA-256, 2 = gzip tar + MD5.
    pub(crate) pkg_version: U64,
    /// Offset of the payload; 1024 in every file seen.
    pub(crate) header_size: U64,
    /// Payload length as stored (the compressed length for gzip).
    pub(crate) data_size: U64,
    /// `neff_version_major`: the container major version; the runtime accepts
    /// 0..=2, and 2 turns on its feature-bit check.
    pub(crate) version_major: U64,
    /// `neff_version_minor`: the container minor version; never checked.
    pub(crate) version_minor: U64,
    /// NUL-padded `<version>%<branch>@<sha>` of the producing compiler.
    pub(crate) build_version: [u8; 128],
    /// `num_tpb` (the runtime reads 1 here as "payload is gzip").
    pub(crate) num_tpb: U32,
    /// MD5 in bytes 0..16 (pkg 2) or SHA-256 in all 32 bytes (pkg 1).
    pub(crate) hash: [u8; 32],
    /// The model id (RFC 4122 bytes; the runtime also uses it as a cache key).
    pub(crate) uuid: [u8; 16],
    /// NUL-terminated model name.
    pub(crate) name: [u8; 256],
    /// NeuronCores requested (1 = one core).
    pub(crate) requested_tpb_count: U32,
    /// TPB (NeuronCore) count per node, one byte each.
    pub(crate) tpb_per_node: [u8; 64],
    /// Capability mask (docs/FORMAT.md §5).
    pub(crate) feature_bits: U64,
    /// Logical-core size (`lnc_size`): 1, or 2 for two fused cores.
    pub(crate) vnc_size: U32,
    /// Reserved, zero.
    pub(crate) pad: [u8; 468],
}

const _: () = assert!(std::mem::size_of::<Header>() == HEADER_SIZE);

/// Names of the feature bits that have one (docs/FORMAT.md §5.1).
pub const FEATURE_NAMES: &[(u64, &str)] = &[
    (0x1, "bin-weights"),
    (0x2, "collective_has_offset"),
    (0x4, "neff_feature_custom_ops"),
    (0x8, "neff_coalesced_ccops"),
    (0x10, "neff_queue_set_instances"),
    (0x20, "neff_has_functions"),
    (0x40, "neff_feature_dynamic_pwp"),
    (0x80, "neff_feature_indirect_memcpy_32b_sem_wait"),
    (0x100, "neff_feature_indirect_memcpy_bound_check"),
    (0x200, "neff_feature_DMA_desc_higher_dim"),
    (0x400, "neff_feature_vnc"),
    (0x800, "dve_perf_mode"),
    (0x1000, "neff_feature_DGE"),
    (0x2000, "neff_feature_POOL_RSQRT"),
    (0x4000, "neff_feature_remote_sem"),
    (0x8000, "neff_feature_DGE_cast"),
    (0x10000, "neff_feature_vector_DGE"),
    (0x20000, "neff_feature_embedding_stride32"),
    (0x100000, "neff_feature_SQI_no_rearm"),
    (0x200000, "neff_feature_hardware_DGE"),
    (0x400000, "neff_feature_partial_sb2sb_ccop"),
    (0x1000000, "arch_companion"),
    (0x2000000, "neff_feature_large_tensor_support"),
];

/// How the payload is stored, decided by its first bytes, not by `pkg_version`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// The payload starts with the gzip magic `1f 8b`.
    Gzip,
    /// Anything else is read as a plain tar.
    None,
}

/// Where the payload lies in the file, after the structural checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PayloadSpan {
    /// Offset of the payload's first byte in the file (normally 1024).
    pub start: usize,
    /// Payload length in bytes (`data_size`, checked to fit in the file).
    pub len: usize,
    /// How the payload is stored, sniffed from its first bytes.
    pub compression: Compression,
}

impl Header {
    /// Casts the first 1024 bytes of `file` as a header, without checks.
    pub fn from_file_bytes(file: &[u8]) -> Result<&Header> {
        match Header::ref_from_prefix(file) {
            Ok((h, _)) => Ok(h),
            Err(_) => Err(Error::header(format!(
                "file is {} bytes, shorter than the {HEADER_SIZE}-byte NEFF header",
                file.len()
            ))),
        }
    }

    /// 1 = raw tar + SHA-256, 2 = gzip tar + MD5.
    pub fn pkg_version(&self) -> u64 {
        self.pkg_version.get()
    }

    /// Offset of the payload; 1024 in every file seen.
    pub fn header_size(&self) -> u64 {
        self.header_size.get()
    }

    /// Payload length as stored (the compressed length for gzip).
    pub fn data_size(&self) -> u64 {
        self.data_size.get()
    }

    /// `neff_version_major`: the container major version; the runtime
    /// accepts 0..=2, and 2 turns on its feature-bit check.
    pub fn version_major(&self) -> u64 {
        self.version_major.get()
    }

    /// `neff_version_minor`: the container minor version; never checked.
    pub fn version_minor(&self) -> u64 {
        self.version_minor.get()
    }

    /// `num_tpb` (the runtime reads 1 here as "payload is gzip").
    pub fn num_tpb(&self) -> u32 {
        self.num_tpb.get()
    }

    /// The hash field as stored: MD5 in bytes 0..16 (package 2) or SHA-256
    /// in all 32 bytes (package 1); see [`hash_bytes`](Self::hash_bytes).
    pub fn hash(&self) -> &[u8; 32] {
        &self.hash
    }

    /// The model id (RFC 4122 bytes; the runtime also uses it as a cache key).
    pub fn uuid(&self) -> &[u8; 16] {
        &self.uuid
    }

    /// NeuronCores requested (1 = one core).
    pub fn requested_tpb_count(&self) -> u32 {
        self.requested_tpb_count.get()
    }

    /// TPB (NeuronCore) count per node, one byte each.
    pub fn tpb_per_node(&self) -> &[u8; 64] {
        &self.tpb_per_node
    }

    /// Capability mask (docs/FORMAT.md §5).
    pub fn feature_bits(&self) -> u64 {
        self.feature_bits.get()
    }

    /// Logical-core size (`lnc_size`): 1, or 2 for two fused cores.
    pub fn vnc_size(&self) -> u32 {
        self.vnc_size.get()
    }

    /// The build version string, up to its first NUL (lossy UTF-8).
    pub fn build_version(&self) -> String {
        c_string(&self.build_version)
    }

    /// The model name, up to its first NUL (lossy UTF-8).
    pub fn name(&self) -> String {
        c_string(&self.name)
    }

    /// The meaningful hash bytes: 16 (MD5) for package version 2, else 32.
    pub fn hash_bytes(&self) -> &[u8] {
        if self.pkg_version.get() == 2 {
            &self.hash[..16]
        } else {
            &self.hash[..]
        }
    }

    /// Names of the set feature bits that have a name; unnamed set bits as hex.
    pub fn feature_names(&self) -> Vec<String> {
        let bits = self.feature_bits.get();
        let mut out = Vec::new();
        let mut named = 0u64;
        for &(bit, name) in FEATURE_NAMES {
            named |= bit;
            if bits & bit != 0 {
                out.push(name.to_string());
            }
        }
        for i in 0..64 {
            let bit = 1u64 << i;
            if bits & bit != 0 && named & bit == 0 {
                out.push(format!("0x{bit:x}"));
            }
        }
        out
    }

    /// The structural checks that stand in for a magic number, in the
    /// runtime's order where they overlap (docs/FORMAT.md §1.3), and where the
    /// payload therefore lies in a file of `file.len()` bytes.
    ///
    /// The payload normally starts at 1024. A `header_size` other than 1024 is
    /// honoured when it is sane (at least 1024, inside the file) and the bytes
    /// at 1024 do not already start a gzip stream or a tar header.
    pub fn locate_payload(&self, file: &[u8]) -> Result<PayloadSpan> {
        self.locate_payload_in(file, file.len() as u64)
    }

    /// [`locate_payload`](Self::locate_payload) for a file of `file_len`
    /// bytes of which only the first (`prefix`, at least the header) are at
    /// hand: a remote object read by ranges. The payload's first bytes are
    /// sniffed where the prefix holds them.
    pub(crate) fn locate_payload_in(&self, prefix: &[u8], file_len: u64) -> Result<PayloadSpan> {
        let at = |from: u64| {
            prefix
                .get(usize::try_from(from).unwrap_or(usize::MAX)..)
                .unwrap_or(&[])
        };
        let pkg = self.pkg_version.get();
        if pkg != 1 && pkg != 2 {
            return Err(Error::header(format!(
                "unsupported NEFF package version {pkg} (expected 1 or 2): not a NEFF"
            )));
        }
        let header_size = self.header_size.get();
        if header_size >= file_len {
            return Err(Error::header(format!(
                "header_size {header_size} is not inside the {file_len}-byte file"
            )));
        }
        let data_size = self.data_size.get();
        if data_size == 0 {
            return Err(Error::header("data_size is 0: the NEFF has no payload"));
        }
        let mut start = HEADER_SIZE as u64;
        if header_size != start
            && header_size > start
            && sniff(at(start)).is_none()
            && sniff(at(header_size)).is_some()
        {
            start = header_size;
        }
        let room = file_len - start;
        if data_size > room {
            return Err(Error::header(format!(
                "data_size {data_size} runs past the end of the file ({room} bytes after the header)"
            )));
        }
        let payload = at(start);
        let payload = &payload[..payload.len().min(data_size as usize)];
        let compression = match sniff(payload) {
            Some(c) => c,
            None => {
                return Err(Error::header(
                    "payload is neither a gzip stream nor a tar archive",
                ))
            }
        };
        Ok(PayloadSpan {
            start: start as usize,
            len: data_size as usize,
            compression,
        })
    }
}

/// Recognises a gzip stream (`1f 8b`) or a tar header (a ustar magic, a
/// v7 header's octal checksum field, or the zero block of an empty archive).
fn sniff(p: &[u8]) -> Option<Compression> {
    if p.starts_with(&[0x1f, 0x8b]) {
        return Some(Compression::Gzip);
    }
    if p.len() >= 512
        && (&p[257..262] == b"ustar"
            || p[148..156].iter().any(|b| b.is_ascii_digit())
            || p[..512].iter().all(|&b| b == 0))
    {
        return Some(Compression::None);
    }
    None
}

fn c_string(b: &[u8]) -> String {
    let end = memchr::memchr(0, b).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}
