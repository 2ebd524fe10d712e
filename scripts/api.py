#!/usr/bin/env python3
"""Prints the crate's public API, one item a line, from rustdoc's JSON.

    RUSTC_BOOTSTRAP=1 cargo rustdoc --lib -- -Z unstable-options --output-format json
    python3 scripts/api.py target/doc/neff.json > api.txt

Walks what a user can name: the root module, public modules, re-exports
(`pub use`), and for each type its public fields, variants and inherent
methods (trait impls are left out: they follow from derives). `api.txt` at
the root holds the result; `scripts/api --check` (CI) regenerates it and fails on any
difference, so that a change to the public surface shows in review.
"""
import json
import sys

doc = json.load(open(sys.argv[1]))
index = doc["index"]
out = set()


def inner_kind(item):
    return next(iter(item["inner"])) if isinstance(item["inner"], dict) else item["inner"]


def walk(iid, path, seen):
    item = index.get(str(iid))
    if item is None or (iid in seen):
        return
    seen = seen | {iid}
    kind = inner_kind(item)
    body = item["inner"][kind] if isinstance(item["inner"], dict) else None
    if kind == "module":
        out.add(f"mod {path}")
        for c in body["items"]:
            child = index.get(str(c))
            if child is None or child.get("visibility") != "public":
                continue
            ck = inner_kind(child)
            if ck == "use":
                u = child["inner"]["use"]
                if u["id"] is None:
                    continue
                if u["is_glob"]:
                    target = index.get(str(u["id"]))
                    if target:
                        for g in target["inner"]["module"]["items"]:
                            gi = index.get(str(g))
                            if gi and gi.get("visibility") == "public" and gi.get("name"):
                                walk(g, f"{path}::{gi['name']}", seen)
                    continue
                walk(u["id"], f"{path}::{u['name']}", seen)
            elif child.get("name"):
                walk(c, f"{path}::{child['name']}", seen)
        return
    if kind in ("struct", "enum", "union"):
        out.add(f"{kind} {path}")
        if kind == "struct":
            k = body["kind"]
            fields = k.get("plain", {}).get("fields", []) if isinstance(k, dict) else []
            for f in fields:
                fi = index.get(str(f))
                if fi and fi.get("visibility") == "public":
                    out.add(f"field {path}::{fi['name']}")
        if kind == "enum":
            for v in body["variants"]:
                out.add(f"variant {path}::{index[str(v)]['name']}")
        for imp in body.get("impls", []):
            ii = index[str(imp)]["inner"]["impl"]
            if ii["trait"] is not None or ii.get("is_synthetic") or ii.get("blanket_impl"):
                continue
            for m in ii["items"]:
                mi = index.get(str(m))
                if mi and mi.get("visibility") == "public":
                    out.add(f"{inner_kind(mi)} {path}::{mi['name']}")
        return
    out.add(f"{kind} {path}")


root = doc["root"]
walk(root, index[str(root)]["name"], frozenset())
print("\n".join(sorted(out)))
