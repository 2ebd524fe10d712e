//! What `neff info` reports: the header decoded, plus a summary of the
//! archive, as one serializable record.

use serde::Serialize;

use crate::error::Error;
use crate::header::hex;
use crate::json::views::{Def, VarType};
use crate::reader::Neff;

/// The decoded header and archive summary of one NEFF.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Header `pkg_version`: 1 = raw tar + SHA-256, 2 = gzip tar + MD5.
    pub pkg_version: u64,
    /// Header `header_size`: where the header says the payload starts (1024 in every file seen).
    pub header_size: u64,
    /// Header `data_size`: payload bytes as stored (the gzip length for package version 2).
    pub data_size: u64,
    /// Header `neff_version_major`: the container major version (the runtime accepts 0..=2).
    pub version_major: u64,
    /// Header `neff_version_minor`: the container minor version (never checked).
    pub version_minor: u64,
    /// The producing compiler's `<version>%<branch>@<sha>`, up to its first NUL.
    pub build_version: String,
    /// Lower-case hex of the meaningful hash bytes (16 for MD5, 32 for SHA-256).
    pub hash: String,
    /// Lower-case hex, 32 digits.
    pub uuid: String,
    /// The model name from the header, up to its first NUL.
    pub name: String,
    /// Header `num_tpb` (offset 0xA8; the loader reads 1 there as "payload is gzip").
    pub num_tpb: u32,
    /// Header `requested_tpb_count`: NeuronCores requested (1 = one core).
    pub requested_tpb_count: u32,
    /// Header `tpb_per_node`, one byte per node, with its trailing zero bytes cut
    /// (empty when all 64 are zero).
    pub tpb_per_node: Vec<u8>,
    /// Header `feature_bits`: the capability mask (docs/FORMAT.md §5).
    pub feature_bits: u64,
    /// The names of the set feature bits; a set bit without a name as `0x…` hex.
    pub features: Vec<String>,
    /// Header `vnc_size` (`lnc_size`): logical-core size, 1 or 2 (two fused physical cores).
    pub vnc_size: u32,
    /// Whether the payload is a gzip stream (sniffed from its bytes, not from `pkg_version`).
    pub compressed: bool,
    /// Bytes of the tar archive (after inflation).
    pub tar_size: u64,
    /// Count of regular members.
    pub members: usize,
    /// Count of all entries (directories, links and others included).
    pub entries: usize,
    /// Per subgraph (each `sgNN/def.json`), its input and output tensors.
    pub subgraphs: Vec<Subgraph>,
}

/// One subgraph's interface, from its def.json variable table.
#[derive(Debug, Clone, Serialize)]
pub struct Subgraph {
    /// The subgraph directory (`sg00`, or `sgLnk/sg00`).
    pub name: String,
    /// Its `input` variables, sorted by name.
    pub inputs: Vec<Tensor>,
    /// Its `output` variables, sorted by name.
    pub outputs: Vec<Tensor>,
    /// def.json's `neff_features`.
    pub features: Vec<String>,
    /// Why the def.json could not be read, if it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One input or output variable.
#[derive(Debug, Clone, Serialize)]
pub struct Tensor {
    /// The variable's name (its key in def.json's `var` object, or its
    /// `name` in the list form).
    pub name: String,
    /// Its `size` in bytes; `None` when absent or not an unsigned integer.
    pub size: Option<u64>,
    /// Its dimensions: the first of `shape`, `framework_shape`,
    /// `internal_shape` present; `None` when none is, or it is not a list of
    /// unsigned integers.
    pub shape: Option<Vec<u64>>,
    /// Its element type (`float32`, …); `None` when absent or not a string.
    pub dtype: Option<String>,
}

/// Every `sgNN/def.json` (flat or under `sgLnk/`), sorted by name, read into
/// its interface. A def.json that does not parse gets an `error` instead.
pub fn subgraphs(neff: &Neff) -> Vec<Subgraph> {
    static DEF: std::sync::LazyLock<regex_automata::meta::Regex> = std::sync::LazyLock::new(|| {
        crate::select::compile(r"(^|/)sg\d+/def\.json$").expect("static pattern")
    });
    // The accessors' def.json may be parsed (and cached) already, by a
    // scan for instance: use that parse rather than a second one.
    let known_def = neff.known(crate::select::Known::Def);
    let mut out = Vec::new();
    for &i in neff.sorted_files() {
        let e = &neff.entries()[i as usize];
        let name = neff.name(e);
        if !DEF.is_match(name) {
            continue;
        }
        let dir = String::from_utf8_lossy(&name[..name.len() - "/def.json".len()]).into_owned();
        let mut sg = Subgraph {
            name: dir,
            inputs: vec![],
            outputs: vec![],
            features: vec![],
            error: None,
        };
        let owned;
        let root = if known_def.is_some_and(|k| std::ptr::eq(k, e)) {
            neff.known_json(crate::select::Known::Def)
                .map(|found| found.map(|(_, json)| json))
        } else {
            owned = neff.parse_json(e);
            match &owned {
                Ok(parsed) => Ok(Some(parsed.root())),
                Err(err) => Err(Error::refused(err.to_string())),
            }
        };
        match root {
            Err(err) => sg.error = Some(err.to_string()),
            // Unreachable: the entry is the one `known` found.
            Ok(None) => sg.error = Some("def.json vanished".into()),
            Ok(Some(root)) => match Def::new(root) {
                None => sg.error = Some("def.json is not an object".into()),
                Some(def) => {
                    for v in def.vars() {
                        let t = Tensor {
                            name: v.name.to_string(),
                            size: v.size(),
                            shape: v.shape(),
                            dtype: v.dtype().map(str::to_string),
                        };
                        match v.var_type() {
                            Some(VarType::Input) => sg.inputs.push(t),
                            Some(VarType::Output) => sg.outputs.push(t),
                            _ => {}
                        }
                    }
                    sg.inputs.sort_by(|a, b| a.name.cmp(&b.name));
                    sg.outputs.sort_by(|a, b| a.name.cmp(&b.name));
                    sg.features = def
                        .neff_features()
                        .into_iter()
                        .map(str::to_string)
                        .collect();
                }
            },
        }
        out.push(sg);
    }
    out
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
            tar_size: neff.tar_len(),
            members: neff.files().count(),
            entries: neff.entries().len(),
            subgraphs: subgraphs(neff),
        }
    }
}
