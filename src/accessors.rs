//! The reference reader's accessor roster, as functions of an open [`Neff`].
//!
//! Each function reads the member the reference reader reads (by its
//! pattern, first match in sorted name order, docs/FORMAT.md §4.2), parses
//! it once (later calls reuse the parse) and applies the reference's rule,
//! with its refusal strings verbatim (§4.3). JSON of the wrong shape for an
//! accessor is refused with an [`Error::Shape`] naming the key.
//!
//! | NeffInfo getter | here | `neff get` |
//! |---|---|---|
//! | `getInfoJson` | [`info`] | `info` |
//! | `getNeffJson` | [`neff_json`] | `neff` |
//! | `getDefJson` | [`def`] | `def` |
//! | `getKelf` | [`kelf`] (the JSON), [`arch`] (its target) | `kelf` |
//! | `getTensorMapJson`, `getTensorMap` | [`tensor_map`] | `tensor-map` |
//! | `getAliasInfo` | [`alias`] | `alias` |
//! | `hasMustAlias` | [`must_alias`] | `must-alias` |
//! | `getArchType` | [`arch`] | `arch` |
//! | `hasCC` | [`has_cc`] | `has-cc` |
//! | `getCCRankWorldSize` | [`cc_world_size`] | `cc-world-size` |
//! | `getNumNc`, `getNumNeuronCores` | [`num_cores`] | `num-cores` |

use crate::error::{Error, Result};
use crate::json::{Json, Obj};
use crate::reader::Neff;
use crate::select::Known;

pub use crate::json::CC_KEYS;

/// A member's parsed JSON together with its name (for error messages).
#[derive(Clone, Copy, Debug)]
pub struct Member<'a> {
    /// The member's name in the archive (e.g. `sg00/def.json`), as refusals quote it.
    pub name: &'a str,
    /// The member's parsed JSON root.
    pub json: Json<'a>,
}

impl<'a> Member<'a> {
    fn object(self, what: &str) -> Result<Obj<'a>> {
        self.json
            .object()
            .ok_or_else(|| self.shape(format!("{what} is not an object")))
    }

    fn shape(self, what: impl Into<String>) -> Error {
        Error::shape(self.name, what)
    }
}

fn find(neff: &Neff, k: Known) -> Result<Option<Member<'_>>> {
    Ok(neff.known_json(k)?.map(|(e, json)| Member {
        name: std::str::from_utf8(neff.name(e)).unwrap_or("member"),
        json,
    }))
}

fn require(neff: &Neff, k: Known) -> Result<Member<'_>> {
    find(neff, k)?.ok_or_else(|| Error::no_match(k.pattern().to_string()))
}

/// `info.json`.
pub fn info(neff: &Neff) -> Result<Member<'_>> {
    require(neff, Known::Info)
}

/// `neff.json`.
pub fn neff_json(neff: &Neff) -> Result<Member<'_>> {
    require(neff, Known::Neff)
}

/// The first `sg\d+/def.json`.
pub fn def(neff: &Neff) -> Result<Member<'_>> {
    require(neff, Known::Def)
}

/// The first `sg\d+/tensor_map.json` (flat `sgNN/` sorts before `sgLnk/`).
pub fn tensor_map(neff: &Neff) -> Result<Member<'_>> {
    require(neff, Known::TensorMap)
}

fn kelf_member(neff: &Neff) -> Result<Option<Member<'_>>> {
    match find(neff, Known::Kelf0)? {
        Some(m) => Ok(Some(m)),
        None => find(neff, Known::KelfAny),
    }
}

/// `kelf-0.json`, else the first `kelf-*.json`.
pub fn kelf(neff: &Neff) -> Result<Member<'_>> {
    kelf_member(neff)?.ok_or_else(|| Error::no_match(Known::KelfAny.pattern().to_string()))
}

/// The tensor map and its `alias_map` entries, shape-checked in full.
fn alias_map(neff: &Neff) -> Result<(Member<'_>, Obj<'_>, Vec<Obj<'_>>)> {
    let tm = tensor_map(neff)?;
    let obj = tm.object("tensor_map.json")?;
    let mut entries = Vec::new();
    if let Some(am) = obj.get("alias_map") {
        let list = am
            .array()
            .ok_or_else(|| tm.shape("alias_map is not a list"))?;
        for (i, e) in list.enumerate() {
            entries.push(
                e.object()
                    .ok_or_else(|| tm.shape(format!("alias_map[{i}] is not an object")))?,
            );
        }
    }
    Ok((tm, obj, entries))
}

/// `{input_name: output_name}` of the tensor map's `alias_map`, in order.
/// Refuses `1 input aliasing to multiple outputs is not supported`.
pub fn alias(neff: &Neff) -> Result<Vec<(&str, &str)>> {
    let (tm, _, entries) = alias_map(neff)?;
    let mut pairs = Vec::with_capacity(entries.len());
    for (i, e) in entries.iter().enumerate() {
        let field = |key: &str| {
            e.get(key)
                .and_then(Json::str)
                .ok_or_else(|| tm.shape(format!("alias_map[{i}].{key} is not a string")))
        };
        pairs.push((field("input_name")?, field("output_name")?));
    }
    let mut seen = std::collections::HashSet::with_capacity(pairs.len());
    for (input, _) in &pairs {
        if !seen.insert(*input) {
            return Err(Error::guard(
                "1 input aliasing to multiple outputs is not supported",
            ));
        }
    }
    Ok(pairs)
}

/// Whether any alias must be honoured: the tensor map's own `must_alias`
/// flag or any `alias_map` entry's (Python truthiness, as the reference).
pub fn must_alias(neff: &Neff) -> Result<bool> {
    let (_, obj, entries) = alias_map(neff)?;
    Ok(obj.get("must_alias").is_some_and(Json::truthy)
        || entries
            .iter()
            .any(|e| e.get("must_alias").is_some_and(Json::truthy)))
}

/// The kelf's single target arch. Refuses more than one distinct arch
/// (`mixed accelerator usage is not supported`).
pub fn arch(neff: &Neff) -> Result<&str> {
    let k = kelf(neff)?;
    let obj = k.object("kelf")?;
    if let Some(t) = obj.get("target") {
        if let Some(s) = t.str() {
            return Ok(s);
        }
        let Some(list) = t.array() else {
            return Err(k.shape("kelf target is neither a string nor a list"));
        };
        let mut first: Option<&str> = None;
        let mut mixed = false;
        for x in list {
            let s = x
                .str()
                .ok_or_else(|| k.shape("kelf target list holds a non-string"))?;
            match first {
                None => first = Some(s),
                Some(f) if f != s => mixed = true,
                _ => {}
            }
        }
        let first = first.ok_or_else(|| k.shape("kelf target is an empty list"))?;
        if mixed {
            return Err(Error::guard("mixed accelerator usage is not supported"));
        }
        return Ok(first);
    }
    obj.get("metadata")
        .and_then(Json::object)
        .and_then(|m| m.get("target_arch"))
        .and_then(Json::str)
        .ok_or_else(|| Error::guard("kelf has no target"))
}

/// The object holding the CC keys: def.json itself when any is at its top
/// level, else its `CCInfo` object if it has one.
fn cc(neff: &Neff) -> Result<(Member<'_>, Obj<'_>)> {
    let d = neff
        .def_cc()?
        .map(|(e, json)| Member {
            name: std::str::from_utf8(neff.name(e)).unwrap_or("member"),
            json,
        })
        .ok_or_else(|| Error::no_match(Known::Def.pattern().to_string()))?;
    let obj = d.object("def.json")?;
    if CC_KEYS.iter().any(|k| obj.has(k)) {
        return Ok((d, obj));
    }
    match obj.get("CCInfo") {
        None => Ok((d, obj)),
        Some(inner) => Ok((
            d,
            inner
                .object()
                .ok_or_else(|| d.shape("CCInfo is not an object"))?,
        )),
    }
}

/// Whether def.json carries collective metadata.
pub fn has_cc(neff: &Neff) -> Result<bool> {
    let (_, obj) = cc(neff)?;
    Ok(CC_KEYS.iter().any(|k| obj.has(k)))
}

/// The collective world size: max(largest group of `replica_groups`,
/// `src_target_pairs` span, `#rank_world_size`, 1), with the reference
/// reader's refusals for MPMD and empty metadata (docs/FORMAT.md §4.4).
/// The result is u128 because the pairs' span (largest rank + 1) may be 2^64.
pub fn cc_world_size(neff: &Neff) -> Result<u128> {
    let (d, obj) = cc(neff)?;
    if !CC_KEYS.iter().any(|k| obj.has(k)) {
        return Err(Error::guard("NEFF does not have CC op"));
    }
    let mut rg: usize = 0;
    if let Some(groups) = obj.get("replica_groups") {
        let topos = groups
            .array()
            .ok_or_else(|| d.shape("replica_groups is not a list"))?;
        if topos.len() == 0 {
            return Err(Error::guard("Empty replica_groups found"));
        }
        for (idx, topo) in topos.enumerate() {
            let groups = topo
                .array()
                .ok_or_else(|| d.shape(format!("replica_groups[{idx}] is not a list")))?;
            if groups.len() == 0 {
                return Err(Error::guard(format!(
                    "Empty topology found at index {idx}, possible MPMD neff file. Try --stopAfter=compile"
                )));
            }
            let mut size = 0;
            for (j, g) in groups.enumerate() {
                let ranks = g
                    .array()
                    .ok_or_else(|| d.shape(format!("replica_groups[{idx}][{j}] is not a list")))?;
                size = size.max(ranks.len());
                for (k, r) in ranks.enumerate() {
                    if !r.is_int() {
                        return Err(
                            d.shape(format!("replica_groups[{idx}][{j}][{k}] is not an integer"))
                        );
                    }
                }
            }
            if rg != 0 && size != rg {
                return Err(Error::guard(format!(
                    "Inconsistent worker count across topologies: {rg} vs {size}. Possible MPMD neff file"
                )));
            }
            rg = size;
        }
    }
    let mut pairs: u128 = 0;
    if let Some(stp) = obj.get("src_target_pairs") {
        let top = stp
            .array()
            .ok_or_else(|| d.shape("src_target_pairs is not a list"))?;
        if top.len() == 0 {
            return Err(Error::guard("Empty src_target_pairs found"));
        }
        // Iterative flatten: nesting is bounded by the depth cap, but a
        // stack of iterators keeps this loop free of recursion anyway.
        let mut max: Option<u64> = None;
        let mut stack = vec![stp];
        while let Some(v) = stack.pop() {
            for x in v.array().into_iter().flatten() {
                if x.array_len().is_some() {
                    stack.push(x);
                } else {
                    let r = x
                        .u64()
                        .ok_or_else(|| d.shape("src_target_pairs holds a non-rank value"))?;
                    max = Some(max.map_or(r, |m| m.max(r)));
                }
            }
        }
        let max = max.ok_or_else(|| Error::guard("Empty src_target_pairs found"))?;
        pairs = u128::from(max) + 1;
    }
    let expl: u64 = match obj.get("#rank_world_size") {
        None => 0,
        Some(v) if v.is_null() => 0,
        Some(v) => v
            .u64()
            .or_else(|| {
                v.str()
                    .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                    .and_then(|s| s.parse().ok())
            })
            .ok_or_else(|| d.shape("#rank_world_size is not a non-negative integer"))?,
    };
    Ok((rg as u128).max(pairs).max(u128::from(expl)).max(1))
}

/// Whether a neff.json node is the kelf node: `op` or `func_name` (on the
/// node or in its `attrs`) is `__kelf`.
fn is_kelf_node(n: Json<'_>) -> bool {
    let Some(o) = n.object() else {
        return false;
    };
    let is = |v: Option<Json<'_>>| v.and_then(Json::str) == Some("__kelf");
    is(o.get("op"))
        || is(o.get("func_name"))
        || is(o
            .get("attrs")
            .and_then(Json::object)
            .and_then(|a| a.get("func_name")))
}

/// NeuronCores the NEFF needs: the kelf nodes of neff.json, else (no
/// neff.json, or none found in it) the kelf descriptor's `graphs`.
pub fn num_cores(neff: &Neff) -> Result<u64> {
    let nj = find(neff, Known::Neff)?;
    if let Some(nj) = nj {
        let obj = nj.object("neff.json")?;
        let mut count = 0u64;
        let (nodes, graphs) = (obj.get("nodes"), obj.get("graphs"));
        if nodes.is_none() && graphs.is_none() {
            return Err(nj.shape("neff.json has neither a graphs object nor a nodes list"));
        }
        if let Some(nodes) = nodes {
            let list = nodes
                .array()
                .ok_or_else(|| nj.shape("nodes is not a list"))?;
            for (i, n) in list.enumerate() {
                if n.object().is_none() {
                    return Err(nj.shape(format!("nodes[{i}] is not an object")));
                }
                count += u64::from(is_kelf_node(n));
            }
        }
        if let Some(g) = graphs {
            if let Some(g) = g.object() {
                count += g
                    .iter()
                    .filter(|&(k, v)| k.starts_with("sg_core") || is_kelf_node(v))
                    .count() as u64;
            } else if let Some(list) = g.array() {
                for (i, x) in list.enumerate() {
                    let Some(o) = x.object() else {
                        return Err(nj.shape(format!(
                            "graphs is neither an object nor a list of objects (graphs[{i}])"
                        )));
                    };
                    count += u64::from(is_kelf_node(x));
                    let inner = o
                        .get("definition")
                        .and_then(Json::object)
                        .and_then(|d| d.get("nodes"))
                        .and_then(Json::array);
                    if let Some(inner) = inner {
                        count += inner.filter(|&n| is_kelf_node(n)).count() as u64;
                    }
                }
            } else {
                return Err(nj.shape("graphs is neither an object nor a list of objects"));
            }
        }
        if count > 0 {
            return Ok(count);
        }
    }
    let Some(k) = kelf_member(neff)? else {
        if nj.is_some() {
            return Ok(0);
        }
        return Err(Error::no_match(Known::KelfAny.pattern().to_string()));
    };
    let obj = k.object("kelf")?;
    match obj.get("graphs") {
        None => Ok(0),
        Some(g) => g
            .array_len()
            .map(|n| n as u64)
            .ok_or_else(|| k.shape("kelf graphs is not a list")),
    }
}

/// Refuses to print strings of member `k` that may stand for a lone
/// surrogate: Python would keep the code point and then fail to print it as
/// UTF-8; the tape holds the escape's text instead
/// ([`crate::json::as_python::for_tape`]), which must not be printed as if it
/// were the string.
fn printable<'a>(neff: &Neff, k: Known, strings: impl IntoIterator<Item = &'a str>) -> Result<()> {
    let Some(e) = neff.known(k) else {
        return Ok(());
    };
    if crate::json::lone_surrogate(&neff.data(e)?).is_none() {
        return Ok(());
    }
    let escape = |s: &str| {
        s.as_bytes().windows(4).any(|w| {
            w[0] == b'\\'
                && w[1] == b'u'
                && matches!(w[2], b'd' | b'D')
                && w[3].is_ascii_hexdigit()
                && matches!(w[3].to_ascii_lowercase(), b'8'..=b'9' | b'a'..=b'f')
        })
    };
    if strings.into_iter().any(escape) {
        return Err(Error::Json {
            member: neff.name_str(e).into_owned(),
            reason: "a string to print holds a lone surrogate escape, which has no UTF-8 form"
                .into(),
        });
    }
    Ok(())
}

/// One accessor of the roster, by its `neff get` name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accessor {
    /// `info`: all of `info.json` ([`info`]).
    Info,
    /// `neff`: all of `neff.json` ([`neff_json`]).
    Neff,
    /// `def`: all of the first `sg\d+/def.json` ([`def`]).
    Def,
    /// `kelf`: all of `kelf-0.json`, else of the first `kelf-*.json` ([`kelf`]).
    Kelf,
    /// `tensor-map`: all of the first `sg\d+/tensor_map.json` ([`tensor_map`]).
    TensorMap,
    /// `alias`: the `{input_name: output_name}` object of `alias_map` ([`alias`]).
    Alias,
    /// `must-alias`: whether any alias must be honoured, `true`/`false` ([`must_alias`]).
    MustAlias,
    /// `arch`: the kelf's target arch as a JSON string ([`arch`]).
    Arch,
    /// `has-cc`: whether def.json has collective metadata ([`has_cc`]).
    HasCc,
    /// `cc-world-size`: the collective world size ([`cc_world_size`]).
    CcWorldSize,
    /// `num-cores`: the NeuronCores the NEFF needs ([`num_cores`]).
    NumCores,
}

impl Accessor {
    /// Every accessor, in the order CLI.md lists them.
    pub const ALL: [Accessor; 11] = [
        Accessor::Info,
        Accessor::Neff,
        Accessor::Def,
        Accessor::Kelf,
        Accessor::TensorMap,
        Accessor::Alias,
        Accessor::MustAlias,
        Accessor::Arch,
        Accessor::HasCc,
        Accessor::CcWorldSize,
        Accessor::NumCores,
    ];

    /// The `neff get` spelling.
    pub fn name(self) -> &'static str {
        match self {
            Accessor::Info => "info",
            Accessor::Neff => "neff",
            Accessor::Def => "def",
            Accessor::Kelf => "kelf",
            Accessor::TensorMap => "tensor-map",
            Accessor::Alias => "alias",
            Accessor::MustAlias => "must-alias",
            Accessor::Arch => "arch",
            Accessor::HasCc => "has-cc",
            Accessor::CcWorldSize => "cc-world-size",
            Accessor::NumCores => "num-cores",
        }
    }

    /// Looks an accessor up by its `neff get` name or its NeffInfo getter name.
    pub fn from_name(s: &str) -> Option<Accessor> {
        let by_getter = match s {
            "getInfoJson" => Some(Accessor::Info),
            "getNeffJson" => Some(Accessor::Neff),
            "getDefJson" => Some(Accessor::Def),
            "getKelf" => Some(Accessor::Kelf),
            "getTensorMap" | "getTensorMapJson" => Some(Accessor::TensorMap),
            "getAliasInfo" => Some(Accessor::Alias),
            "hasMustAlias" => Some(Accessor::MustAlias),
            "getArchType" => Some(Accessor::Arch),
            "hasCC" => Some(Accessor::HasCc),
            "getCCRankWorldSize" => Some(Accessor::CcWorldSize),
            "getNumNc" | "getNumNeuronCores" => Some(Accessor::NumCores),
            _ => None,
        };
        by_getter.or_else(|| Accessor::ALL.into_iter().find(|a| a.name() == s))
    }

    /// Runs the accessor and writes its result as compact JSON (no newline).
    pub fn write_json(self, neff: &Neff, out: &mut Vec<u8>) -> Result<()> {
        use std::io::Write;
        // A whole member prints as Python re-prints it, straight from its
        // bytes (no tape: key order, duplicates and numbers stay Python's).
        let member = |k: Known, out: &mut Vec<u8>| {
            let e = neff
                .known(k)
                .ok_or_else(|| Error::no_match(k.pattern().to_string()))?;
            neff.dumps_json(e, out)
        };
        match self {
            Accessor::Info => member(Known::Info, out)?,
            Accessor::Neff => member(Known::Neff, out)?,
            Accessor::Def => member(Known::Def, out)?,
            Accessor::Kelf => match neff.known(Known::Kelf0) {
                Some(_) => member(Known::Kelf0, out)?,
                None => member(Known::KelfAny, out)?,
            },
            Accessor::TensorMap => member(Known::TensorMap, out)?,
            Accessor::Alias => {
                let pairs = alias(neff)?;
                let strings = pairs.iter().flat_map(|(i, o)| [*i, *o]);
                printable(neff, Known::TensorMap, strings)?;
                // alias_map's order; a repeated input was refused above.
                out.push(b'{');
                for (n, (i, o)) in pairs.into_iter().enumerate() {
                    if n > 0 {
                        out.push(b',');
                    }
                    serde_json::to_writer(&mut *out, i).map_err(|e| Error::Io(e.into()))?;
                    out.push(b':');
                    serde_json::to_writer(&mut *out, o).map_err(|e| Error::Io(e.into()))?;
                }
                out.push(b'}');
            }
            Accessor::MustAlias => write!(out, "{}", must_alias(neff)?)?,
            Accessor::Arch => {
                let a = arch(neff)?;
                let kelf = match neff.known(Known::Kelf0) {
                    Some(_) => Known::Kelf0,
                    None => Known::KelfAny,
                };
                printable(neff, kelf, [a])?;
                serde_json::to_writer(&mut *out, a).map_err(|e| Error::Io(e.into()))?
            }
            Accessor::HasCc => write!(out, "{}", has_cc(neff)?)?,
            Accessor::CcWorldSize => write!(out, "{}", cc_world_size(neff)?)?,
            Accessor::NumCores => write!(out, "{}", num_cores(neff)?)?,
        }
        Ok(())
    }
}
