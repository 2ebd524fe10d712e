//! Typed views of the JSON sidecars (docs/FORMAT.md §3): thin wrappers over
//! a borrowed [`Json`] value that read the keys readers care about, tolerate
//! unknown keys (reachable through `raw`) and treat a missing optional key
//! as absent, not as an error.

use super::{Json, Obj};

/// `def.json`: one subgraph's definition.
#[derive(Clone, Copy, Debug)]
pub struct Def<'a> {
    /// The whole def.json object, for keys this view does not read.
    pub raw: Obj<'a>,
}

/// The storage class of a variable (`var[*].type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VarType<'a> {
    /// `input`: a tensor the caller passes in (runtime memory-ref type MR_INPUT).
    Input,
    /// `output`: a tensor handed back to the caller (MR_OUTPUT).
    Output,
    /// `tmp-buf`: scratch memory private to the subgraph (MR_TMP_BUF).
    TmpBuf,
    /// `virtual`: a slice of a shared scratch area; see [`Var::placement`].
    Virtual,
    /// `state-buffer`: the on-chip state buffer, SBUF (MR_SB).
    StateBuffer,
    /// `file`: constant data (weights) loaded from a member of the archive (MR_BUFFER).
    File,
    /// `pointer`: an 8-byte pointer to the var named by `referenced_var_id` (MR_PTR).
    Pointer,
    /// `list`: a list of other vars, by id (MR_LIST).
    List,
    /// `remote`: memory of another core or device (MR_REMOTE).
    Remote,
    /// `shared`, `sharded`, `local`, `main`, `dge-table` or anything newer.
    Other(&'a str),
}

impl<'a> VarType<'a> {
    /// Parses a `type` (or older `#transfer-type`) value.
    pub fn parse(s: &'a str) -> VarType<'a> {
        match s {
            "input" => VarType::Input,
            "output" => VarType::Output,
            "tmp-buf" => VarType::TmpBuf,
            "virtual" => VarType::Virtual,
            "state-buffer" => VarType::StateBuffer,
            "file" => VarType::File,
            "pointer" => VarType::Pointer,
            "list" => VarType::List,
            "remote" => VarType::Remote,
            other => VarType::Other(other),
        }
    }
}

/// Which scratch area a virtual variable lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Area<'a> {
    /// `fabric_path` (`main` / `alt`) takes precedence.
    FabricPath(&'a str),
    /// Else `backing_buf` (`main` / `sharded`).
    BackingBuf(&'a str),
    /// Neither: the main area.
    Main,
}

/// One entry of the variable table.
#[derive(Clone, Copy, Debug)]
pub struct Var<'a> {
    /// The variable's name: its key in the `var` object, or its `name` key in
    /// the list form (`""` when that is missing).
    pub name: &'a str,
    /// The entry object, for keys this view does not read (`var_id`, `alignment`, …).
    pub raw: Obj<'a>,
}

impl<'a> Var<'a> {
    /// The storage class; `None` when neither `type` nor `#transfer-type` is a string.
    pub fn var_type(&self) -> Option<VarType<'a>> {
        self.str("type")
            .or_else(|| self.str("#transfer-type"))
            .map(VarType::parse)
    }
    /// Size in bytes.
    pub fn size(&self) -> Option<u64> {
        self.raw.get("size").and_then(Json::u64)
    }
    /// The element type string (`float32`, `bfloat16`, …); `None` when absent or not a string.
    pub fn dtype(&self) -> Option<&'a str> {
        self.str("dtype")
    }
    /// `shape`, else `framework_shape`, else `internal_shape`, as integers.
    pub fn shape(&self) -> Option<Vec<u64>> {
        ["shape", "framework_shape", "internal_shape"]
            .iter()
            .find_map(|k| self.raw.get(k))
            .and_then(|v| v.array()?.map(Json::u64).collect())
    }
    /// For virtual variables: the area and the `[offset, offset + size)` span.
    pub fn placement(&self) -> Option<(Area<'a>, u64)> {
        if self.var_type() != Some(VarType::Virtual) {
            return None;
        }
        let area = match (self.str("fabric_path"), self.str("backing_buf")) {
            (Some(f), _) => Area::FabricPath(f),
            (None, Some(b)) => Area::BackingBuf(b),
            (None, None) => Area::Main,
        };
        let off = self
            .raw
            .get("backing_variable_off")
            .and_then(Json::u64)
            .unwrap_or(0);
        Some((area, off))
    }
    fn str(&self, k: &str) -> Option<&'a str> {
        self.raw.get(k).and_then(Json::str)
    }
}

/// One entry of the DMA queue table.
#[derive(Clone, Copy, Debug)]
pub struct DmaQueue<'a> {
    /// The queue's name (e.g. `q_gradient_in`): its key in `dma_queue`, or its
    /// `name` key in the list form (`""` when that is missing).
    pub name: &'a str,
    /// The entry object, for keys this view does not read (`num_queues`, `pinned`, …).
    pub raw: Obj<'a>,
}

impl<'a> DmaQueue<'a> {
    /// The engine that owns the queue (`pe`, `act`, `pool`, `dve`, `sp`).
    pub fn owner(&self) -> Option<&'a str> {
        self.raw.get("owner").and_then(Json::str)
    }
    /// The queue kind (`in`, `out`, `data`, `act_load`, `embedding_update`).
    pub fn kind(&self) -> Option<&'a str> {
        self.raw.get("type").and_then(Json::str)
    }
    /// The completion semaphore number; `None` when absent or not an unsigned integer.
    pub fn semaphore(&self) -> Option<u64> {
        self.raw.get("semaphore").and_then(Json::u64)
    }
}

/// The collective metadata keys (top level, else a `CCInfo` object).
#[derive(Clone, Copy, Debug, Default)]
pub struct Cc<'a> {
    /// `replica_groups`: the 3-D `[topology][group][rank]` array; `None` when absent.
    pub replica_groups: Option<Json<'a>>,
    /// `src_target_pairs`: the collective-permute `[source, target]` pairs; `None` when absent.
    pub src_target_pairs: Option<Json<'a>>,
    /// `#rank_world_size`: the world size given outright; `None` when absent.
    pub rank_world_size: Option<Json<'a>>,
}

/// One GPSIMD custom-op library entry of `ucode_lib`.
#[derive(Clone, Copy, Debug)]
pub enum UcodeLib<'a> {
    /// `ucode_lib` given as the name of a manifest member.
    Manifest(&'a str),
    /// An entry object (`library`, `ulib_to_ucode_version`, `functions`, …).
    Entry(Obj<'a>),
}

fn entries<'a>(v: Option<Json<'a>>, key: &str) -> Vec<(&'a str, Obj<'a>)> {
    // Objects keyed by name (the samples), or arrays of objects with a
    // `name` key (one runtime note): accept both.
    match v {
        Some(j) if j.object().is_some() => j
            .object()
            .into_iter()
            .flat_map(Obj::iter)
            .filter_map(|(k, v)| Some((k, v.object()?)))
            .collect(),
        Some(j) => j
            .array()
            .into_iter()
            .flatten()
            .filter_map(|v| {
                let o = v.object()?;
                Some((o.get(key).and_then(Json::str).unwrap_or(""), o))
            })
            .collect(),
        None => Vec::new(),
    }
}

impl<'a> Def<'a> {
    /// A view of `json`, if it is an object.
    pub fn new(json: Json<'a>) -> Option<Def<'a>> {
        json.object().map(|raw| Def { raw })
    }
    /// The variable table, in document order (object or list form).
    pub fn vars(&self) -> Vec<Var<'a>> {
        entries(self.raw.get("var"), "name")
            .into_iter()
            .map(|(name, raw)| Var { name, raw })
            .collect()
    }
    /// The DMA queue table (`dma_queue`, or `dma` when that is an object).
    pub fn dma_queues(&self) -> Vec<DmaQueue<'a>> {
        let v = self
            .raw
            .get("dma_queue")
            .or_else(|| self.raw.get("dma").filter(|d| d.object().is_some()));
        entries(v, "name")
            .into_iter()
            .map(|(name, raw)| DmaQueue { name, raw })
            .collect()
    }
    /// The CC keys, from the top level if any is there, else from `CCInfo`.
    pub fn cc(&self) -> Cc<'a> {
        let keys = super::CC_KEYS;
        let src = if keys.iter().any(|k| self.raw.has(k)) {
            Some(self.raw)
        } else {
            self.raw.get("CCInfo").and_then(Json::object)
        };
        match src {
            Some(o) => Cc {
                replica_groups: o.get(keys[0]),
                src_target_pairs: o.get(keys[1]),
                rank_world_size: o.get(keys[2]),
            },
            None => Cc::default(),
        }
    }
    /// The GPSIMD libraries.
    pub fn ucode_libs(&self) -> Vec<UcodeLib<'a>> {
        match self.raw.get("ucode_lib") {
            Some(v) if v.str().is_some() => vec![UcodeLib::Manifest(v.str().unwrap_or(""))],
            Some(v) => v
                .array()
                .into_iter()
                .flatten()
                .filter_map(Json::object)
                .map(UcodeLib::Entry)
                .collect(),
            None => Vec::new(),
        }
    }
    /// `fp8_conversion_config`.
    pub fn fp8(&self) -> Option<Obj<'a>> {
        self.raw.get("fp8_conversion_config").and_then(Json::object)
    }
    /// `neff_features`: the named feature flags.
    pub fn neff_features(&self) -> Vec<&'a str> {
        self.raw
            .get("neff_features")
            .and_then(Json::array)
            .into_iter()
            .flatten()
            .filter_map(Json::str)
            .collect()
    }
    /// Engine JSON file names by def.json key (`act`, `dve`, `pe`, `pool`, `sp`).
    pub fn engines(&self) -> Vec<(&'static str, &'a str)> {
        ["pe", "act", "pool", "dve", "sp"]
            .into_iter()
            .filter_map(|k| Some((k, self.raw.get(k)?.str()?)))
            .collect()
    }
}

/// `tensor_map.json`.
#[derive(Clone, Copy, Debug)]
pub struct TensorMap<'a> {
    /// The whole tensor_map.json object, for keys this view does not read.
    pub raw: Obj<'a>,
}

/// One `alias_map` entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Alias<'a> {
    /// The donated input tensor.
    pub input_name: &'a str,
    /// The output tensor that reuses the input's buffer.
    pub output_name: &'a str,
    /// `true`: the output must go into the input's buffer; `false`: it may.
    /// A missing `must_alias` reads as `false` (Python truthiness otherwise).
    pub must_alias: bool,
}

impl<'a> TensorMap<'a> {
    /// A view of `json`, if it is an object.
    pub fn new(json: Json<'a>) -> Option<TensorMap<'a>> {
        json.object().map(|raw| TensorMap { raw })
    }
    fn list(&self, k: &str) -> Vec<Obj<'a>> {
        self.raw
            .get(k)
            .and_then(Json::array)
            .into_iter()
            .flatten()
            .filter_map(Json::object)
            .collect()
    }
    /// The `inputs` tensor entries that are objects, in order (empty when absent).
    pub fn inputs(&self) -> Vec<Obj<'a>> {
        self.list("inputs")
    }
    /// The `outputs` tensor entries that are objects, in order (empty when absent).
    pub fn outputs(&self) -> Vec<Obj<'a>> {
        self.list("outputs")
    }
    /// Well-formed alias entries (string names), in order.
    pub fn aliases(&self) -> Vec<Alias<'a>> {
        self.list("alias_map")
            .into_iter()
            .filter_map(|o| {
                Some(Alias {
                    input_name: o.get("input_name")?.str()?,
                    output_name: o.get("output_name")?.str()?,
                    must_alias: o.get("must_alias").is_some_and(Json::truthy),
                })
            })
            .collect()
    }
}

/// `kelf-N.json`: the kelf descriptor.
#[derive(Clone, Copy, Debug)]
pub struct Kelf<'a> {
    /// The whole descriptor object, for keys this view does not read (`target`, …).
    pub raw: Obj<'a>,
}

/// One `graphs[]` entry of a kelf descriptor.
#[derive(Clone, Copy, Debug)]
pub struct KelfGraph<'a> {
    /// The subgraph directory name (e.g. `sg00`); `None` when absent or not a string.
    pub name: Option<&'a str>,
    /// The path of the subgraph's def.json (e.g. `sg00/def.json`); `None` when
    /// absent or not a string.
    pub definition: Option<&'a str>,
}

impl<'a> Kelf<'a> {
    /// A view of `json`, if it is an object.
    pub fn new(json: Json<'a>) -> Option<Kelf<'a>> {
        json.object().map(|raw| Kelf { raw })
    }
    /// The `graphs[]` entries that are objects, one per subgraph (physical core),
    /// in order (empty when absent).
    pub fn graphs(&self) -> Vec<KelfGraph<'a>> {
        self.raw
            .get("graphs")
            .and_then(Json::array)
            .into_iter()
            .flatten()
            .filter_map(Json::object)
            .map(|o| KelfGraph {
                name: o.get("name").and_then(Json::str),
                definition: o.get("definition").and_then(Json::str),
            })
            .collect()
    }
    /// The descriptor's `version` string (`"0.5"` in every sample); informative, not a gate.
    pub fn version(&self) -> Option<&'a str> {
        self.raw.get("version").and_then(Json::str)
    }
}

/// `info.json` and `neff.json` have no fixed schema a reader relies on
/// beyond what the accessors read; their views expose the raw object.
#[derive(Clone, Copy, Debug)]
pub struct Info<'a> {
    /// The whole info.json (or neff.json) object.
    pub raw: Obj<'a>,
}

impl<'a> Info<'a> {
    /// A view of `json`, if it is an object.
    pub fn new(json: Json<'a>) -> Option<Info<'a>> {
        json.object().map(|raw| Info { raw })
    }
}

/// `neff.json`, the TVM-style graph.
#[derive(Clone, Copy, Debug)]
pub struct NeffGraph<'a> {
    /// The whole neff.json object (`nodes`, `arg_nodes`, `heads`, `attrs`, …).
    pub raw: Obj<'a>,
}

impl<'a> NeffGraph<'a> {
    /// A view of `json`, if it is an object.
    pub fn new(json: Json<'a>) -> Option<NeffGraph<'a>> {
        json.object().map(|raw| NeffGraph { raw })
    }
    /// The `attrs.kelf` member names of its kelf nodes, top level and under `graphs`.
    pub fn kelf_members(&self) -> Vec<&'a str> {
        let mut nodes: Vec<Json<'a>> = self
            .raw
            .get("nodes")
            .and_then(Json::array)
            .into_iter()
            .flatten()
            .collect();
        if let Some(g) = self.raw.get("graphs") {
            nodes.extend(g.object().into_iter().flat_map(Obj::iter).map(|(_, v)| v));
            nodes.extend(g.array().into_iter().flatten());
        }
        nodes
            .into_iter()
            .filter_map(|n| n.object()?.get("attrs")?.object()?.get("kelf")?.str())
            .collect()
    }
}
