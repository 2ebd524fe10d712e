//! What `neff info` reports: the header decoded, plus a summary of the
//! archive, as one serializable record.

use serde::Serialize;

use crate::header::hex;
use crate::neff::Neff;

/// The decoded header and archive summary of one NEFF.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub pkg_version: u64,
    pub header_size: u64,
    pub data_size: u64,
    pub version_major: u64,
    pub version_minor: u64,
    pub build_version: String,
    /// Lower-case hex of the meaningful hash bytes (16 for MD5, 32 for SHA-256).
    pub hash: String,
    /// Lower-case hex, 32 digits.
    pub uuid: String,
    pub name: String,
    pub num_tpb: u32,
    pub requested_tpb_count: u32,
    pub tpb_per_node: Vec<u8>,
    pub feature_bits: u64,
    pub features: Vec<String>,
    pub vnc_size: u32,
    pub compressed: bool,
    /// Bytes of the tar archive (after inflation).
    pub tar_size: u64,
    /// Count of regular members.
    pub members: usize,
    /// Count of all entries (directories, links and others included).
    pub entries: usize,
}

impl Summary {
    /// Builds the summary of an open NEFF.
    pub fn of(neff: &Neff) -> Summary {
        let h = neff.header();
        let tpb_end = h
            .tpb_per_node
            .iter()
            .rposition(|&b| b != 0)
            .map_or(0, |i| i + 1);
        Summary {
            pkg_version: h.pkg_version.get(),
            header_size: h.header_size.get(),
            data_size: h.data_size.get(),
            version_major: h.version_major.get(),
            version_minor: h.version_minor.get(),
            build_version: h.build_version(),
            hash: hex(h.hash_bytes()),
            uuid: hex(&h.uuid),
            name: h.name(),
            num_tpb: h.num_tpb.get(),
            requested_tpb_count: h.requested_tpb_count.get(),
            tpb_per_node: h.tpb_per_node[..tpb_end].to_vec(),
            feature_bits: h.feature_bits.get(),
            features: h.feature_names(),
            vnc_size: h.vnc_size.get(),
            compressed: neff.is_compressed(),
            tar_size: neff.tar().len() as u64,
            members: neff.files().count(),
            entries: neff.entries().len(),
        }
    }
}
