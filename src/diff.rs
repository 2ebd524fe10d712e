//! What differs between two NEFFs: header fields, members (added, removed,
//! changed by size or content), and, for the JSON members that changed, a
//! structural diff at the level people reason at: def.json variables
//! added, removed and resized (by name), inputs and outputs whose shape or
//! dtype changed (def.json variables and tensor_map.json entries), the
//! collective metadata keys, tensor_map.json alias entries, the kelf
//! descriptors' target and graph (core) count, and the accessors' answers
//! (world size, aliasing, arch, core count).
//!
//! Members are the regular files, one per name (the last of a name in
//! archive order, as the runtime's map keeps); directories, links, modes
//! and mtimes are not compared. Two NEFFs are [`Diff::same`] when their
//! headers and members are.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::accessors::Accessor;
use crate::header::{hex, Header};
use crate::json::{Json, Obj};
use crate::reader::Neff;
use crate::tar::Entry;

/// One value that differs: `a` in the first NEFF, `b` in the second.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    /// The header field or accessor name.
    pub field: String,
    /// Its value in the first NEFF.
    pub a: Value,
    /// Its value in the second NEFF.
    pub b: Value,
}

/// A member present on one side only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Member {
    /// The member's name.
    pub name: String,
    /// Its size in bytes.
    pub size: u64,
}

/// A member on both sides whose bytes differ.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Changed {
    /// The member's name.
    pub name: String,
    /// Its size in the first NEFF.
    pub size_a: u64,
    /// Its size in the second NEFF.
    pub size_b: u64,
    /// Lower-case hex SHA-256 of its bytes in the first NEFF.
    pub sha256_a: String,
    /// The same in the second NEFF.
    pub sha256_b: String,
}

/// Member-level differences.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Members {
    /// In the second NEFF only.
    pub added: Vec<Member>,
    /// In the first NEFF only.
    pub removed: Vec<Member>,
    /// In both, with other bytes.
    pub changed: Vec<Changed>,
}

/// A def.json variable present on one side only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Var {
    /// The def.json member.
    pub member: String,
    /// The variable's name.
    pub name: String,
    /// Its `size`, if an integer.
    pub size: Option<u64>,
}

/// A def.json variable whose size changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Resized {
    /// The def.json member.
    pub member: String,
    /// The variable's name.
    pub name: String,
    /// Its `size` in the first NEFF.
    pub a: Option<u64>,
    /// Its `size` in the second NEFF.
    pub b: Option<u64>,
}

/// Variable-level differences of the def.json members.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Vars {
    /// In the second NEFF's def.json only.
    pub added: Vec<Var>,
    /// In the first NEFF's def.json only.
    pub removed: Vec<Var>,
    /// In both, with another `size`.
    pub resized: Vec<Resized>,
}

/// A named value in a JSON member that differs (an input's shape, a CC key).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Keyed {
    /// The JSON member.
    pub member: String,
    /// The variable or tensor name (inputs/outputs), or the key (CC).
    pub name: String,
    /// `shape`, `dtype` (inputs/outputs); the key again (CC).
    pub field: String,
    /// The value in the first NEFF (null when absent).
    pub a: Value,
    /// The value in the second NEFF (null when absent).
    pub b: Value,
}

/// Everything that differs between two NEFFs.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Diff {
    /// Headers and members identical.
    pub same: bool,
    /// Header fields that differ.
    pub header: Vec<Change>,
    /// Regular members added, removed, changed.
    pub members: Members,
    /// def.json variables added, removed, resized.
    pub vars: Vars,
    /// Inputs and outputs whose shape or dtype changed.
    pub io: Vec<Keyed>,
    /// Collective metadata keys of def.json that changed.
    pub cc: Vec<Keyed>,
    /// Kelf descriptors (`kelf-*.json`) whose `target` or number of
    /// graphs (cores) changed.
    pub kelf: Vec<Keyed>,
    /// tensor_map.json alias entries (by input name) added, removed or
    /// changed: `{"output": name, "must_alias": bool}` or null.
    pub alias: Vec<Keyed>,
    /// Accessor answers that changed (`cc-world-size`, `alias`,
    /// `must-alias`, `arch`, `num-cores`); a refusal shows as
    /// `{"error": reason}`.
    pub accessors: Vec<Change>,
}

/// The accessors compared.
const ACCESSORS: [Accessor; 5] = [
    Accessor::CcWorldSize,
    Accessor::Alias,
    Accessor::MustAlias,
    Accessor::Arch,
    Accessor::NumCores,
];

/// Compares `a` with `b`. Fails only when member data cannot be read
/// again (a streamed payload whose file changed since it was opened).
pub fn diff(a: &Neff, b: &Neff) -> crate::error::Result<Diff> {
    let mut d = Diff {
        header: header(a.header(), b.header()),
        ..Diff::default()
    };
    let (ma, mb) = (by_name(a), by_name(b));
    let mut json_pairs = Vec::new();
    let (mut ca, mut cb) = (a.cursor(), b.cursor());
    // In `a`'s archive order, so that a streamed payload is inflated once
    // (a cursor starts over when asked for an earlier member).
    let mut in_order: Vec<_> = ma.iter().collect();
    in_order.sort_by_key(|(_, e)| e.offset);
    for (name, ea) in in_order {
        match mb.get(name) {
            None => d.members.removed.push(Member {
                name: name.clone(),
                size: ea.size,
            }),
            Some(eb) => {
                let (da, db) = (ca.read(ea)?, cb.read(eb)?);
                if da != db {
                    d.members.changed.push(Changed {
                        name: name.clone(),
                        size_a: ea.size,
                        size_b: eb.size,
                        sha256_a: hex(&Sha256::digest(&da)),
                        sha256_b: hex(&Sha256::digest(&db)),
                    });
                    json_pairs.push((name.clone(), *ea, *eb));
                }
            }
        }
    }
    // Reported in name order, as before.
    d.members.removed.sort_by(|x, y| x.name.cmp(&y.name));
    d.members.changed.sort_by(|x, y| x.name.cmp(&y.name));
    json_pairs.sort_by(|x, y| x.0.cmp(&y.0));
    for (name, eb) in &mb {
        if !ma.contains_key(name) {
            d.members.added.push(Member {
                name: name.clone(),
                size: eb.size,
            });
        }
    }
    for (name, ea, eb) in json_pairs {
        let base = name.rsplit('/').next().unwrap_or(&name);
        let is_kelf = base == name && base.starts_with("kelf-") && base.ends_with(".json");
        if base != "def.json" && base != "tensor_map.json" && !is_kelf {
            continue;
        }
        // A side that does not parse is already reported as a changed member.
        let (Ok(pa), Ok(pb)) = (a.parse_json(ea), b.parse_json(eb)) else {
            continue;
        };
        let (Some(oa), Some(ob)) = (pa.root().object(), pb.root().object()) else {
            continue;
        };
        if is_kelf {
            kelf(&name, oa, ob, &mut d);
        } else if base == "def.json" {
            def_json(&name, oa, ob, &mut d);
        } else {
            tensor_map(&name, oa, ob, &mut d);
        }
    }
    for acc in ACCESSORS {
        let (va, vb) = (answer(a, acc), answer(b, acc));
        if va != vb {
            d.accessors.push(Change {
                field: acc.name().to_string(),
                a: va,
                b: vb,
            });
        }
    }
    let m = &d.members;
    d.same =
        d.header.is_empty() && m.added.is_empty() && m.removed.is_empty() && m.changed.is_empty();
    Ok(d)
}

/// Regular members by name, one per name.
fn by_name(n: &Neff) -> BTreeMap<String, &Entry> {
    n.sorted_files()
        .iter()
        .map(|&i| {
            let e = &n.entries()[i as usize];
            (n.name_str(e).into_owned(), e)
        })
        .collect()
}

fn header(a: &Header, b: &Header) -> Vec<Change> {
    let fields = |h: &Header| -> Vec<(&'static str, Value)> {
        vec![
            ("pkg_version", h.pkg_version.get().into()),
            ("header_size", h.header_size.get().into()),
            ("data_size", h.data_size.get().into()),
            ("version_major", h.version_major.get().into()),
            ("version_minor", h.version_minor.get().into()),
            ("build_version", h.build_version().into()),
            ("num_tpb", h.num_tpb.get().into()),
            ("hash", hex(h.hash_bytes()).into()),
            ("uuid", hex(&h.uuid).into()),
            ("name", h.name().into()),
            ("requested_tpb_count", h.requested_tpb_count.get().into()),
            ("tpb_per_node", hex(&h.tpb_per_node).into()),
            (
                "feature_bits",
                format!("0x{:x}", h.feature_bits.get()).into(),
            ),
            ("vnc_size", h.vnc_size.get().into()),
        ]
    };
    fields(a)
        .into_iter()
        .zip(fields(b))
        .filter(|((_, x), (_, y))| x != y)
        .map(|((f, x), (_, y))| Change {
            field: f.to_string(),
            a: x,
            b: y,
        })
        .collect()
}

fn value(j: Option<Json<'_>>) -> Value {
    j.and_then(|j| serde_json::from_str(&j.encode()).ok())
        .unwrap_or(Value::Null)
}

fn answer(n: &Neff, acc: Accessor) -> Value {
    let mut buf = Vec::new();
    match acc.write_json(n, &mut buf) {
        Ok(()) => serde_json::from_slice(&buf).unwrap_or(Value::Null),
        Err(e) => serde_json::json!({ "error": e.to_string() }),
    }
}

/// def.json's variables, name → entry (object or list form; others ignored).
fn vars(o: Obj<'_>) -> BTreeMap<&str, Obj<'_>> {
    crate::json::views::Def { raw: o }
        .vars()
        .into_iter()
        .map(|v| (v.name, v.raw))
        .collect()
}

fn def_json(member: &str, a: Obj<'_>, b: Obj<'_>, d: &mut Diff) {
    let (va, vb) = (vars(a), vars(b));
    let size = |o: &Obj<'_>| o.get("size").and_then(Json::u64);
    for (name, x) in &va {
        match vb.get(name) {
            None => d.vars.removed.push(Var {
                member: member.into(),
                name: name.to_string(),
                size: size(x),
            }),
            Some(y) => {
                if size(x) != size(y) {
                    d.vars.resized.push(Resized {
                        member: member.into(),
                        name: name.to_string(),
                        a: size(x),
                        b: size(y),
                    });
                }
                let io = |o: &Obj<'_>| {
                    matches!(o.get("type").and_then(Json::str), Some("input" | "output"))
                };
                if io(x) || io(y) {
                    io_fields(member, name, *x, *y, d);
                }
            }
        }
    }
    for (name, y) in &vb {
        if !va.contains_key(name) {
            d.vars.added.push(Var {
                member: member.into(),
                name: name.to_string(),
                size: size(y),
            });
        }
    }
    for key in crate::json::CC_TOP_KEYS {
        let (x, y) = (value(a.get(key)), value(b.get(key)));
        if x != y {
            d.cc.push(Keyed {
                member: member.into(),
                name: key.into(),
                field: key.into(),
                a: x,
                b: y,
            });
        }
    }
}

fn kelf(member: &str, a: Obj<'_>, b: Obj<'_>, d: &mut Diff) {
    let graphs = |o: Obj<'_>| match o.get("graphs") {
        Some(g) => g.array_len().map_or(Value::Null, Value::from),
        None => Value::Null,
    };
    let target = |o: Obj<'_>| {
        let meta = o
            .get("metadata")
            .and_then(Json::object)
            .and_then(|m| m.get("target_arch"));
        value(o.get("target").or(meta))
    };
    for (field, x, y) in [
        ("target", target(a), target(b)),
        ("graphs", graphs(a), graphs(b)),
    ] {
        if x != y {
            d.kelf.push(Keyed {
                member: member.into(),
                name: member.into(),
                field: field.into(),
                a: x,
                b: y,
            });
        }
    }
}

fn io_fields(member: &str, name: &str, x: Obj<'_>, y: Obj<'_>, d: &mut Diff) {
    for field in ["shape", "dtype"] {
        let (p, q) = (value(x.get(field)), value(y.get(field)));
        if p != q {
            d.io.push(Keyed {
                member: member.into(),
                name: name.into(),
                field: field.into(),
                a: p,
                b: q,
            });
        }
    }
}

fn named(l: Vec<Obj<'_>>) -> Vec<(String, Obj<'_>)> {
    l.into_iter()
        .filter_map(|o| Some((o.get("name")?.str()?.to_string(), o)))
        .collect()
}

fn tensor_map(member: &str, a: Obj<'_>, b: Obj<'_>, d: &mut Diff) {
    let (ta, tb) = (
        crate::json::views::TensorMap { raw: a },
        crate::json::views::TensorMap { raw: b },
    );
    let aliases = |t: &crate::json::views::TensorMap<'_>| -> BTreeMap<String, Vec<Value>> {
        let mut m: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        for x in t.aliases() {
            m.entry(x.input_name.to_string())
                .or_default()
                .push(serde_json::json!({ "output": x.output_name, "must_alias": x.must_alias }));
        }
        m
    };
    let (aa, ab) = (aliases(&ta), aliases(&tb));
    let one = |v: Option<&Vec<Value>>| match v {
        None => Value::Null,
        Some(v) if v.len() == 1 => v[0].clone(),
        Some(v) => Value::Array(v.clone()),
    };
    let mut inputs: Vec<&String> = aa.keys().chain(ab.keys()).collect();
    inputs.sort();
    inputs.dedup();
    for i in inputs {
        let (x, y) = (one(aa.get(i)), one(ab.get(i)));
        if x != y {
            d.alias.push(Keyed {
                member: member.into(),
                name: i.clone(),
                field: "alias".into(),
                a: x,
                b: y,
            });
        }
    }
    for (la, lb) in [(ta.inputs(), tb.inputs()), (ta.outputs(), tb.outputs())] {
        // B's tensors by name (the first of a repeated name, as before).
        let mut lb_by_name = std::collections::HashMap::new();
        for (n, o) in named(lb) {
            lb_by_name.entry(n).or_insert(o);
        }
        for (name, x) in named(la) {
            if let Some(y) = lb_by_name.get(&name) {
                io_fields(member, &name, x, *y, d);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pack::{pack, PackEntry, PackOptions};
    use crate::Options;

    fn neff(files: &[(&str, &str)]) -> Neff {
        let entries: Vec<PackEntry> = files
            .iter()
            .map(|(n, d)| PackEntry::file(n, d.as_bytes(), 0))
            .collect();
        let opts = PackOptions {
            no_gzip: true,
            uuid: Some([7; 16]),
            ..PackOptions::default()
        };
        Neff::from_bytes(pack(&entries, &opts).unwrap(), &Options::default()).unwrap()
    }

    #[test]
    fn identical_neffs_are_the_same() {
        let a = neff(&[("a.bin", "x")]);
        let b = neff(&[("a.bin", "x")]);
        let d = diff(&a, &b).unwrap();
        assert!(d.same, "{d:?}");
        assert!(d.header.is_empty() && d.accessors.is_empty());
    }

    #[test]
    fn a_changed_member_changes_the_header_hash_too() {
        let a = neff(&[("a.bin", "x")]);
        let b = neff(&[("a.bin", "y")]);
        let d = diff(&a, &b).unwrap();
        assert!(!d.same);
        assert_eq!(d.members.changed.len(), 1);
        let fields: Vec<&str> = d.header.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(fields, ["hash"]);
    }
}
