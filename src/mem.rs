//! The device-memory estimate of docs/FORMAT.md §7: what loading a NEFF
//! costs in device memory, per subgraph (one physical core), per NEFF and
//! for a set of NEFFs loaded together.
//!
//! [`estimate`] reads one NEFF (def.json of every subgraph, the engine JSON
//! files it names, the sizes of the `.bin` members); [`Total::of`] combines
//! several under one scratchpad page: the scratchpad is shared (max over
//! graphs), everything else adds up, plus the runtime's own overheads.
//! Every length read from a file is checked; a def.json or engine JSON of
//! the wrong shape is refused with [`Error::Shape`] naming the key.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::json::{Json, Obj};
use crate::reader::Neff;
use crate::select::Known;

/// Bytes per DMA descriptor (as the compiler's analyser counts).
pub const DMA_DESCRIPTOR_BYTES: u64 = 16;
/// Extra descriptors per side of each transfer (the semaphore updates).
pub const DMA_SEMAPHORE_DESCRIPTORS: u64 = 16;
/// The shared scratchpad page when nothing overrides it.
pub const DEFAULT_SCRATCHPAD_PAGE_BYTES: u64 = 64 << 20;
/// The runtime's overhead per loaded graph (3.7 MiB measured).
pub const RUNTIME_BYTES_PER_GRAPH: u64 = 4 << 20;
/// The runtime's fixed overhead per logical core (≈ 70 MiB measured).
pub const RUNTIME_FIXED_BYTES: u64 = 72 << 20;
/// The environment variables that set the page, in MiB, first one wins.
pub const PAGE_ENV: [&str; 2] = [
    "NEURON_SCRATCHPAD_PAGE_SIZE",
    "NEURON_RT_ONE_TMPBUF_PAGE_SIZE_MB",
];
/// The def.json keys naming engine JSON files.
pub(crate) const ENGINE_KEYS: [&str; 5] = ["act", "dve", "pe", "pool", "sp"];

/// One subgraph's (physical core's) share.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Subgraph {
    /// The kelf graph name (else the subgraph directory).
    pub name: String,
    /// The def.json member.
    pub definition: String,
    /// Scratchpad bytes per area (`fabric_path`, else `backing_buf`, else `main`).
    pub scratchpad_areas: BTreeMap<String, u64>,
    /// Sum of the areas (before page rounding).
    pub scratchpad: u64,
    /// Bytes of `.bin` members under the subgraph directory.
    pub code: u64,
    /// Bytes of `file` variables.
    pub constants: u64,
    /// DMA descriptors of the engines' transfers.
    pub dma_descriptors: u64,
    /// `dma_descriptors` × [`DMA_DESCRIPTOR_BYTES`].
    pub dma_rings: u64,
    /// Engine JSON files def.json names that the NEFF lacks (the runtime
    /// uses an empty placeholder; they count for nothing).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missing_engines: Vec<String>,
}

impl Subgraph {
    /// What stays allocated while the graph is loaded: code + constants + rings.
    pub fn persistent(&self) -> Result<u64> {
        sum([self.code, self.constants, self.dma_rings])
    }
}

/// One input variable of the first subgraph.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Input {
    /// The variable's name in def.json.
    pub name: String,
    /// Its `size` in bytes.
    pub size: u64,
}

/// The estimate for one NEFF, independent of the page size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Estimate {
    /// One entry per subgraph (physical core), in kelf order.
    pub subgraphs: Vec<Subgraph>,
    /// `type == "input"` variables of the first subgraph (to match a graph
    /// to a KV-cache size).
    pub inputs: Vec<Input>,
    /// Sum of their sizes.
    pub input_bytes: u64,
}

impl Estimate {
    /// Σ over cores of the core's scratchpad rounded up to whole pages.
    pub fn scratchpad(&self, page: u64) -> Result<u64> {
        let mut t = 0u64;
        for sg in &self.subgraphs {
            t = add(t, paged(sg.scratchpad, page)?)?;
        }
        Ok(t)
    }

    /// Σ over cores of code + constants + rings.
    pub fn persistent(&self) -> Result<u64> {
        let mut t = 0u64;
        for sg in &self.subgraphs {
            t = add(t, sg.persistent()?)?;
        }
        Ok(t)
    }
}

/// The runtime's total for a set of NEFFs loaded together.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Total {
    /// The scratchpad page every core's scratchpad is rounded up to.
    pub page_bytes: u64,
    /// Number of NEFFs (graphs) in the set.
    pub graphs: u64,
    /// Each graph's page-rounded scratchpad, in the order given.
    pub graph_scratchpads: Vec<u64>,
    /// The largest of them: the scratchpad is shared.
    pub max_scratchpad: u64,
    /// Σ persistent bytes over every graph.
    pub persistent: u64,
    /// [`RUNTIME_FIXED_BYTES`].
    pub runtime_fixed: u64,
    /// [`RUNTIME_BYTES_PER_GRAPH`] × graphs.
    pub runtime_graphs: u64,
    /// max_scratchpad + persistent + runtime_fixed + runtime_graphs.
    pub total: u64,
}

impl Total {
    /// Combines the estimates of NEFFs loaded together under a `page`-byte
    /// scratchpad page.
    pub fn of(estimates: &[Estimate], page: u64) -> Result<Total> {
        let mut graph_scratchpads = Vec::with_capacity(estimates.len());
        let mut persistent = 0u64;
        for e in estimates {
            graph_scratchpads.push(e.scratchpad(page)?);
            persistent = add(persistent, e.persistent()?)?;
        }
        let max_scratchpad = graph_scratchpads.iter().copied().max().unwrap_or(0);
        let graphs = estimates.len() as u64;
        let runtime_graphs = mul(RUNTIME_BYTES_PER_GRAPH, graphs)?;
        let total = sum([
            max_scratchpad,
            persistent,
            RUNTIME_FIXED_BYTES,
            runtime_graphs,
        ])?;
        Ok(Total {
            page_bytes: page,
            graphs,
            graph_scratchpads,
            max_scratchpad,
            persistent,
            runtime_fixed: RUNTIME_FIXED_BYTES,
            runtime_graphs,
            total,
        })
    }
}

/// `bytes` rounded up to a whole number of `page`-byte pages.
pub(crate) fn paged(bytes: u64, page: u64) -> Result<u64> {
    if page == 0 {
        return Err(Error::usage("the scratchpad page must not be 0"));
    }
    mul(bytes.div_ceil(page), page)
}

/// The page in bytes: `flag_mib` (from `--page-mib`) if given, else the
/// first of [`PAGE_ENV`] that `env` has, else 64 MiB. A value that is not
/// a positive whole number of MiB is a usage error.
pub fn page_bytes(flag_mib: Option<u64>, env: impl Fn(&str) -> Option<String>) -> Result<u64> {
    let (mib, from) = match flag_mib {
        Some(m) => (m, "--page-mib".to_string()),
        None => match PAGE_ENV.iter().find_map(|k| env(k).map(|v| (*k, v))) {
            Some((k, v)) => {
                let m = v
                    .trim()
                    .parse::<u64>()
                    .map_err(|_| Error::usage(format!("{k}={v:?} is not a whole number of MiB")))?;
                (m, k.to_string())
            }
            None => return Ok(DEFAULT_SCRATCHPAD_PAGE_BYTES),
        },
    };
    if mib == 0 {
        return Err(Error::usage(format!(
            "{from}: the page must be at least 1 MiB"
        )));
    }
    mib.checked_mul(1 << 20)
        .ok_or_else(|| Error::usage(format!("{from}: {mib} MiB is too large")))
}

/// The estimate for one NEFF (docs/FORMAT.md §7).
///
/// The subgraphs are the `graphs[]` of the kelf descriptors neff.json names
/// (in order, each definition once); without such a name, those of the
/// accessors' kelf descriptor (`kelf-0.json`, else the first `kelf-*.json`);
/// without any kelf descriptor, every `sgNN/def.json` in name order.
pub fn estimate(neff: &Neff) -> Result<Estimate> {
    let defs = subgraph_definitions(neff)?;
    if defs.is_empty() {
        return Err(Error::refused(
            "no subgraph: no kelf graphs[] and no sgNN/def.json member",
        ));
    }
    let mut subgraphs = Vec::with_capacity(defs.len());
    let mut inputs = Vec::new();
    for (i, (name, def)) in defs.into_iter().enumerate() {
        let (sg, ins) = subgraph(neff, name, &def, i == 0)?;
        subgraphs.push(sg);
        if i == 0 {
            inputs = ins;
        }
    }
    let input_bytes = sum(inputs.iter().map(|i| i.size))?;
    Ok(Estimate {
        subgraphs,
        inputs,
        input_bytes,
    })
}

/// (graph name, def.json member name) of every subgraph.
fn subgraph_definitions(neff: &Neff) -> Result<Vec<(String, String)>> {
    // Each kelf descriptor once, with its entry (names as found, not
    // re-encoded: a non-UTF-8 name must still find its member).
    let mut kelfs: Vec<(String, &crate::tar::Entry)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    if let Some((_, json)) = neff.known_json(Known::Neff)? {
        for k in kelf_names(json) {
            let k = strip_dot(k);
            if let Some(e) = neff.member(k.as_bytes()) {
                if seen.insert(k) {
                    kelfs.push((k.to_string(), e));
                }
            }
        }
    }
    if kelfs.is_empty() {
        for k in [Known::Kelf0, Known::KelfAny] {
            if let Some(e) = neff.known(k) {
                kelfs.push((neff.name_str(e).into_owned(), e));
                break;
            }
        }
    }
    let mut out: Vec<(String, String)> = Vec::new();
    let mut defs = std::collections::HashSet::new();
    for (k, e) in &kelfs {
        let k = k.as_str();
        let parsed = neff.parse_json(e)?;
        let Some(obj) = parsed.root().object() else {
            return Err(Error::shape(k, "the kelf descriptor is not an object"));
        };
        let Some(graphs) = obj.get("graphs") else {
            continue;
        };
        let Some(list) = graphs.array() else {
            return Err(Error::shape(k, "graphs is not an array"));
        };
        for (i, g) in list.enumerate() {
            let Some(g) = g.object() else {
                return Err(Error::shape(k, format!("graphs[{i}] is not an object")));
            };
            let def = match g.get("definition") {
                Some(d) => d.str().ok_or_else(|| {
                    Error::shape(k, format!("graphs[{i}].definition is not a string"))
                })?,
                None => continue,
            };
            let def = strip_dot(def).to_string();
            let name = match g.get("name").and_then(Json::str) {
                Some(n) => n.to_string(),
                None => dir_of(&def).trim_end_matches('/').to_string(),
            };
            if defs.insert(def.clone()) {
                out.push((name, def));
            }
        }
    }
    if kelfs.is_empty() {
        for &i in neff.sorted_files() {
            let e = &neff.entries()[i as usize];
            let name = neff.name_str(e);
            if is_sg_def(&name) {
                let def = name.into_owned();
                out.push((dir_of(&def).trim_end_matches('/').to_string(), def));
            }
        }
    }
    Ok(out)
}

/// The kelf member names neff.json's nodes give (`attrs.kelf`, or `kelf`
/// on the node itself), over top-level `nodes` and `graphs` (object or
/// array), in document order.
fn kelf_names(neff_json: Json<'_>) -> Vec<&str> {
    let Some(o) = neff_json.object() else {
        return Vec::new();
    };
    let mut nodes: Vec<Json<'_>> = o
        .get("nodes")
        .and_then(Json::array)
        .into_iter()
        .flatten()
        .collect();
    if let Some(g) = o.get("graphs") {
        nodes.extend(g.object().into_iter().flat_map(Obj::iter).map(|(_, v)| v));
        nodes.extend(g.array().into_iter().flatten());
    }
    nodes
        .into_iter()
        .filter_map(|n| {
            let n = n.object()?;
            let attrs = n.get("attrs").and_then(Json::object);
            attrs
                .and_then(|a| a.get("kelf"))
                .or_else(|| n.get("kelf"))?
                .str()
        })
        .collect()
}

/// `sgNN/def.json`.
fn is_sg_def(name: &str) -> bool {
    name.strip_suffix("/def.json")
        .and_then(|d| d.strip_prefix("sg"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn strip_dot(s: &str) -> &str {
    s.strip_prefix("./").unwrap_or(s)
}

/// The directory part of a member name, with its trailing `/` (empty at the root).
fn dir_of(name: &str) -> &str {
    match name.rfind('/') {
        Some(i) => &name[..=i],
        None => "",
    }
}

/// One subgraph's estimate and, for the first, its inputs.
fn subgraph(
    neff: &Neff,
    name: String,
    def: &str,
    want_inputs: bool,
) -> Result<(Subgraph, Vec<Input>)> {
    let e = neff
        .member(def.as_bytes())
        .ok_or_else(|| Error::refused(format!("kelf names {def}, which the NEFF lacks")))?;
    let parsed = neff.parse_json(e)?;
    let obj = parsed
        .root()
        .object()
        .ok_or_else(|| Error::shape(def, "def.json is not an object"))?;
    let dir = dir_of(def);

    let mut areas: BTreeMap<String, u64> = BTreeMap::new();
    let mut constants = 0u64;
    let mut inputs = Vec::new();
    for (vname, var) in vars(obj, def)? {
        let what = |w: &str| Error::shape(def, format!("var {vname:?}: {w}"));
        let ty = match var.get("type").or_else(|| var.get("#transfer-type")) {
            Some(t) => t.str().ok_or_else(|| what("type is not a string"))?,
            None => continue,
        };
        let size = || -> Result<u64> {
            var.get("size")
                .and_then(Json::u64)
                .ok_or_else(|| what(&format!("a {ty} variable without an integer size")))
        };
        match ty {
            "virtual" => {
                let area = match (opt_str(var, "fabric_path"), opt_str(var, "backing_buf")) {
                    (Err(k), _) | (_, Err(k)) => return Err(what(&format!("{k} is not a string"))),
                    (Ok(Some(f)), _) => f,
                    (Ok(None), Ok(Some(b))) => b,
                    (Ok(None), Ok(None)) => "main",
                };
                let off = match var.get("backing_variable_off") {
                    None => 0,
                    Some(o) => o
                        .u64()
                        .ok_or_else(|| what("backing_variable_off is not an integer"))?,
                };
                let end = add(off, size()?)?;
                let slot = areas.entry(area.to_string()).or_insert(0);
                *slot = (*slot).max(end);
            }
            "file" => constants = add(constants, size()?)?,
            "input" if want_inputs => inputs.push(Input {
                name: vname.to_string(),
                size: size()?,
            }),
            _ => {}
        }
    }
    let scratchpad = sum(areas.values().copied())?;

    // Code: every regular `.bin` member under the subgraph directory.
    let mut code = 0u64;
    if !dir.is_empty() {
        let sorted = neff.sorted_files();
        let entries = neff.entries();
        let start = sorted.partition_point(|&i| neff.name(&entries[i as usize]) < dir.as_bytes());
        for &i in &sorted[start..] {
            let m = &entries[i as usize];
            let n = neff.name(m);
            if !n.starts_with(dir.as_bytes()) {
                break;
            }
            if n.ends_with(b".bin") {
                code = add(code, m.size)?;
            }
        }
    }

    let mut descriptors = 0u64;
    let mut missing_engines = Vec::new();
    for key in ENGINE_KEYS {
        let Some(v) = obj.get(key) else { continue };
        let file = v
            .str()
            .ok_or_else(|| Error::shape(def, format!("{key} is not a string")))?;
        let path = format!("{dir}{file}");
        let Some(eng) = neff.member(path.as_bytes()) else {
            missing_engines.push(path);
            continue;
        };
        let parsed = neff.parse_json(eng)?;
        descriptors = add(descriptors, engine_descriptors(parsed.root(), &path)?)?;
    }
    let dma_rings = mul(descriptors, DMA_DESCRIPTOR_BYTES)?;
    Ok((
        Subgraph {
            name,
            definition: def.to_string(),
            scratchpad_areas: areas,
            scratchpad,
            code,
            constants,
            dma_descriptors: descriptors,
            dma_rings,
            missing_engines,
        },
        inputs,
    ))
}

/// The `var` table as (name, entry), object or list form; refused when it
/// or an entry has another shape.
fn vars<'a>(def: Obj<'a>, member: &str) -> Result<Vec<(&'a str, Obj<'a>)>> {
    let Some(v) = def.get("var") else {
        return Ok(Vec::new());
    };
    if let Some(o) = v.object() {
        return o
            .iter()
            .map(|(k, x)| {
                x.object()
                    .map(|x| (k, x))
                    .ok_or_else(|| Error::shape(member, format!("var {k:?} is not an object")))
            })
            .collect();
    }
    if let Some(a) = v.array() {
        return a
            .enumerate()
            .map(|(i, x)| {
                let o = x
                    .object()
                    .ok_or_else(|| Error::shape(member, format!("var[{i}] is not an object")))?;
                Ok((o.get("name").and_then(Json::str).unwrap_or(""), o))
            })
            .collect();
    }
    Err(Error::shape(
        member,
        "var is neither an object nor an array",
    ))
}

/// `Ok(None)` when absent, `Err(key)` when present but not a string.
fn opt_str<'a>(o: Obj<'a>, key: &'static str) -> Result<Option<&'a str>, &'static str> {
    match o.get(key) {
        None => Ok(None),
        Some(v) => v.str().map(Some).ok_or(key),
    }
}

/// DMA descriptors of one engine JSON: over every `dma[]` block's `desc[]`.
pub(crate) fn engine_descriptors(engine: Json<'_>, member: &str) -> Result<u64> {
    let obj = engine
        .object()
        .ok_or_else(|| Error::shape(member, "engine JSON is not an object"))?;
    let Some(dma) = obj.get("dma") else {
        return Ok(0);
    };
    let blocks = dma
        .array()
        .ok_or_else(|| Error::shape(member, "dma is not an array"))?;
    let mut n = 0u64;
    for (i, b) in blocks.enumerate() {
        let b = b
            .object()
            .ok_or_else(|| Error::shape(member, format!("dma[{i}] is not an object")))?;
        let Some(desc) = b.get("desc") else { continue };
        let desc = desc
            .array()
            .ok_or_else(|| Error::shape(member, format!("dma[{i}].desc is not an array")))?;
        for (j, d) in desc.enumerate() {
            let at = format!("dma[{i}].desc[{j}]");
            n = add(
                n,
                descriptors(d).map_err(|w| Error::shape(member, format!("{at}: {w}")))?,
            )?;
        }
    }
    Ok(n)
}

/// Descriptors of one `desc[]` element: when `from` is null (or absent),
/// the sum over its `from_arr` parts, else the element itself. Each counts
/// `∏(from_sizes[1:]) + 16 + ∏(to_sizes[1:]) + 16`; a part's `to_sizes`
/// falls back to the element's, then `[1]`; `from_sizes` defaults to `[1]`.
/// The error is the reason a value has the wrong shape.
pub(crate) fn descriptors(desc: Json<'_>) -> Result<u64, String> {
    let d = desc.object().ok_or("not an object")?;
    let parent_to = sizes(d, "to_sizes")?;
    let from_null = d.get("from").is_none_or(Json::is_null);
    if !from_null {
        let from = sizes(d, "from_sizes")?;
        return count(from.as_deref(), parent_to.as_deref());
    }
    let parts = match d.get("from_arr") {
        None => return Ok(0),
        Some(p) if p.is_null() => return Ok(0),
        Some(p) => p.array().ok_or("from_arr is not an array")?,
    };
    let mut n = 0u64;
    for (k, p) in parts.enumerate() {
        let p = p
            .object()
            .ok_or_else(|| format!("from_arr[{k}] is not an object"))?;
        let from = sizes(p, "from_sizes").map_err(|w| format!("from_arr[{k}].{w}"))?;
        let to = sizes(p, "to_sizes").map_err(|w| format!("from_arr[{k}].{w}"))?;
        let c = count(from.as_deref(), to.as_deref().or(parent_to.as_deref()))?;
        n = n
            .checked_add(c)
            .ok_or("descriptor count overflows 64 bits")?;
    }
    Ok(n)
}

/// `o[key]` as a list of integers; `None` when absent or null.
fn sizes(o: Obj<'_>, key: &str) -> Result<Option<Vec<u64>>, String> {
    match o.get(key) {
        None => Ok(None),
        Some(v) if v.is_null() => Ok(None),
        Some(v) => {
            let a = v.array().ok_or_else(|| format!("{key} is not an array"))?;
            a.map(|x| x.u64().ok_or_else(|| format!("{key} holds a non-integer")))
                .collect::<Result<Vec<u64>, String>>()
                .map(Some)
        }
    }
}

fn count(from: Option<&[u64]>, to: Option<&[u64]>) -> Result<u64, String> {
    let side = |s: Option<&[u64]>| -> Result<u64, String> {
        let s = s.unwrap_or(&[1]);
        let mut p = 1u64;
        for &x in s.iter().skip(1) {
            p = p
                .checked_mul(x)
                .ok_or("descriptor count overflows 64 bits")?;
        }
        p.checked_add(DMA_SEMAPHORE_DESCRIPTORS)
            .ok_or_else(|| "descriptor count overflows 64 bits".to_string())
    };
    side(from)?
        .checked_add(side(to)?)
        .ok_or_else(|| "descriptor count overflows 64 bits".to_string())
}

fn add(a: u64, b: u64) -> Result<u64> {
    a.checked_add(b)
        .ok_or_else(|| Error::refused("memory estimate overflows 64 bits"))
}

fn mul(a: u64, b: u64) -> Result<u64> {
    a.checked_mul(b)
        .ok_or_else(|| Error::refused("memory estimate overflows 64 bits"))
}

fn sum(it: impl IntoIterator<Item = u64>) -> Result<u64> {
    it.into_iter().try_fold(0u64, add)
}

/// `bytes` as the runtime prints sizes: B, KB, MB, GB (powers of 1024),
/// three decimals above bytes.
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut v = bytes as f64 / 1024.0;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.3} {}", UNITS[u])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_uses_powers_of_1024() {
        assert_eq!(human(1023), "1023 B");
        assert_eq!(human(592_904), "579.008 KB");
        assert_eq!(human(64 << 20), "64.000 MB");
        assert_eq!(human(3 << 30), "3.000 GB");
    }

    #[test]
    fn sg_def_names() {
        assert!(is_sg_def("sg00/def.json"));
        assert!(!is_sg_def("sgLnk/sg00/def.json"));
        assert!(!is_sg_def("sg/def.json"));
    }
}
