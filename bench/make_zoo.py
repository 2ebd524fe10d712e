#!/usr/bin/env python3
"""Writes a large compile cache: N entries laid out as neuronx-cc lays them out.

    python3 bench/make_zoo.py OUT --entries N [--layout L] [--budget-bytes B] [--seed S] [--jobs J]

OUT gets, for N = 1,000 / 10,000 / 100,000 (any N works):

  OUT/neuronxcc-<version>/MODULE_<20 hex>+<8 hex>/   one directory per entry, over four
                                                      compiler versions (2.15 to 2.18)
      model.neff, model.done, compile_flags.json,    a compiled entry (96.5 % of entries)
      model.hlo_module.pb
      model.log, compile_flags.json,                 a failed compile (2.5 %): no NEFF
      model.hlo_module.pb
      model.hlo_module.pb.lock, compile_flags.json,  a compile that held its lock when it
      model.hlo_module.pb                            was killed (1 %): no NEFF

About 30 % of the entries reuse the cache key (MODULE_... name) of an entry under an older
compiler version, as a model recompiled by a newer compiler does; each entry's files get an
mtime of their own (entry i is i minutes after 2026-01-01), so "the newest entry for a
cache key" has one answer.

NEFF sizes (the whole model.neff file) are drawn as

    size = 11 kB * (16 MB / 11 kB) ** (u ** 3.5),   u uniform in [0, 1)

which puts most of them near the small end, as public compile caches have them (many small
graphs, a long tail of large ones): median ~21 kB, 90th percentile ~1.7 MB, 99th ~12 MB,
mean ~0.7 MB. The draw is quantised to 64 size classes spaced evenly on a log scale; each
class has two template NEFFs (so 128 in all: arch sunda or cayman, 1 or 2 cores, with or
without collectives over 2 to 64 ranks, aliases), built by bench/make_corpus.py's own
functions (its JSON members, byte pools and write_neff; imported, not copied). Sizes land
within ~15 % of their class (gzip ratios are estimated, not searched for); the output
prints the quantiles of the sizes actually written.

Every distinct NEFF is a template with its own header UUID, name and gzip MTIME field, and
the MD5 in its header recomputed over its payload: distinct uuid, hash and bytes, and still
a valid NEFF (`neff verify` passes). Distinct NEFFs are written until their bytes reach
--budget-bytes (default 4 GiB); past it, an entry's model.neff is a hard link to one of the
distinct NEFFs already written of its size class (the pool): the output says how many
entries are links. (A size class with no distinct NEFF yet when the budget is reached gets
one, past the budget.) The small side files (model.done, compile_flags.json, ~512-byte
model.hlo_module.pb) are always distinct and not counted in the budget.

--layout small (issue 59) writes the same kind of cache from small NEFFs instead: every
NEFF distinct, 3-8 kB (6 size classes evenly spaced on a log scale, drawn uniformly), over
three compiler versions (2.15 to 2.17), 2.5 % failed and 1.5 % locked entries: the shape
where a scan's cost per entry (listings, opens, stats, hand-offs between threads) outweighs
reading the NEFF. --layout flat writes those small NEFFs without cache entries: a model zoo
of OUT/dNNN/nNNNNNN.neff, a thousand to a directory.

Everything follows from --seed, --layout and N: the same arguments give the same tree. The 128
templates take ~45 s on 2 cores (--templates DIR keeps them for the next run); then 100,000
entries take a minute or two more on a fast disk (most of it creating 400,000 files).
"""

import argparse
import hashlib
import json
import math
import os
import random
import shutil
import sys
import time
from multiprocessing import Pool

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_corpus as mc  # noqa: E402  (the NEFF writer this reuses)

VERSIONS = (
    "neuronxcc-2.15.128.0+56dc5a86",
    "neuronxcc-2.16.372.0+4a9b2326",
    "neuronxcc-2.17.194.0+d312836f",
    "neuronxcc-2.18.121.0+9e31e41a",
)
VARIANTS = 2
REUSE = 0.30
# Per layout: compiler versions, NEFF sizes (smallest, largest, the power u is raised to,
# size classes), the share of failed and of locked entries, and whether there are entries.
LAYOUTS = {
    "compiler": dict(versions=VERSIONS, sizes=(11_000, 16_000_000, 3.5, 64), failed=0.025,
                     locked=0.01, entries=True),
    "small": dict(versions=VERSIONS[:3], sizes=(3_000, 8_000, 1.0, 6), failed=0.025,
                  locked=0.015, entries=True),
    "flat": dict(versions=VERSIONS[:1], sizes=(3_000, 8_000, 1.0, 6), failed=0.0,
                 locked=0.0, entries=False),
}
EPOCH = 1_767_225_600  # 2026-01-01T00:00:00Z


def class_size(k, sizes):
    """The file size of size class k (0 .. classes - 1) of `sizes`."""
    lo, hi, _, classes = sizes
    return int(lo * (hi / lo) ** (k / (classes - 1)))


def draw_class(r, sizes):
    """A size class drawn from the stated distribution."""
    lo, hi, power, classes = sizes
    size = lo * (hi / lo) ** (r.random() ** power)
    k = round(math.log(size / lo) / math.log(hi / lo) * (classes - 1))
    return min(classes - 1, max(0, k))


def template(job):
    """Writes template (k, v): a NEFF of about class_size(k) bytes into the directory
    `tdir` (kept there: a later run with the same seed reuses it); returns (k, v, path)."""
    tdir, seed, k, v, sizes = job
    path = os.path.join(tdir, "t%02d_%d.neff" % (k, v))
    if os.path.exists(path):
        return k, v, path
    mc.make_pools(seed)
    r = random.Random("%s/template/%d/%d" % (seed, k, v))
    target = class_size(k, sizes)
    cores = 1 if r.random() < 0.7 else 2
    arch = r.choice(("sunda", "sunda", "cayman"))
    cc_kind = r.choices(("none", "rg", "pairs", "both", "explicit"), (55, 25, 6, 9, 5))[0]
    aliasing = r.choice(("none", "may", "must"))
    module = "MODULE_template_%d_%d" % (k, v)
    build = VERSIONS[-1].split("-", 1)[1]
    # JSON members first, scaled to the size (a 11 kB NEFF holds small ones).
    json_share = min(24 << 10, max(2 << 10, target // 6))
    members = {}
    programs = [{} for _ in range(cores)]
    for c in range(cores):
        for e in mc.ENGINES[:3]:
            name = "sg%02d/%s.bin" % (c, e)
            members[name] = mc.pool_bytes(r, "instr", max(256, target // (40 * cores)))
            programs[c][e] = (name, len(members[name]))
    # Constants: bf16-like weights (gzip ratio ~0.8), filling what the rest leaves.
    json_est = json_share * 0.25 * cores + 2048
    prog_est = sum(len(b) for b in members.values()) * 0.35
    tar_est = 1024 * (len(members) + 8 * cores + 4) * 0.1
    weights = max(0, int((target - 1024 - json_est - prog_est - tar_est) / 0.8))
    n_const = max(1, min(40, weights // (256 << 10) + 1))
    constants = [[] for _ in range(cores)]
    for i in range(n_const):
        c = i % cores
        name = "sg%02d/const_%04d.bin" % (c, i)
        members[name] = mc.pool_bytes(r, "weights", max(64, weights // n_const))
        constants[c].append((name, len(members[name])))
    cc = mc.collectives(r, cc_kind)
    n_vars = max(20, min(5000, json_share // 120))
    for c in range(cores):
        queues = ["%s%d" % (q, c) for q in mc.QUEUE_KINDS[: r.randint(2, len(mc.QUEUE_KINDS))]]
        members["kelf-%d.json" % c] = mc.kelf_json(r, c, arch, programs[c], json_share // 8)
        members["sg%02d/def.json" % c] = mc.def_json(
            r, module, c, n_vars, constants[c], queues, cc
        )
        members["sg%02d/tensor_map.json" % c] = mc.tensor_map_json(
            r, r.randint(1, 8), r.randint(1, 4), aliasing, json_share // 8
        )
    members["neff.json"] = mc.neff_json(r, cores, arch, 2 << 10)
    members["info.json"] = mc.info_json(r, module, build, cores, 2 << 10)
    mc.write_neff(path, members, 2, mc.meta_for(r, module, build, cores), r)
    return k, v, path


def variant(tpl, r, name, stamp):
    """The template's bytes with their own uuid, name, gzip MTIME and header MD5."""
    b = bytearray(tpl)
    uuid = bytearray(r.randbytes(16))
    uuid[6] = 0x40 | (uuid[6] & 0x0F)
    uuid[8] = 0x80 | (uuid[8] & 0x3F)
    b[0x0CC:0x0DC] = uuid
    nm = name.encode()[:255]
    b[0x0DC:0x1DC] = nm + bytes(256 - len(nm))
    # The gzip member's MTIME field (bytes 4-7 of its header): readers ignore it, and it
    # makes the payload, hence its MD5, this NEFF's own.
    b[1024 + 4 : 1024 + 8] = (stamp & 0xFFFFFFFF).to_bytes(4, "little")
    b[0x0AC:0x0BC] = hashlib.md5(memoryview(b)[1024:]).digest()
    return b


def key_hex(r):
    h = "%040x" % r.getrandbits(160)
    return "MODULE_%s+%s" % (h[:20], h[20:28])


def write(path, data, mode="wb"):
    with open(path, mode) as f:
        f.write(data)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--entries", type=int, required=True, help="cache entries (1000, 10000, ...)")
    ap.add_argument(
        "--budget-bytes",
        type=int,
        default=4 << 30,
        help="bytes of distinct NEFFs; hard links beyond (default 4 GiB)",
    )
    ap.add_argument("--layout", choices=sorted(LAYOUTS), default="compiler",
                    help="compiler (default): the compiler's cache, NEFFs of 11 kB-16 MB; "
                    "small: the same of 3-8 kB NEFFs; flat: those NEFFs, no cache entries")
    ap.add_argument("--seed", default="neff-zoo")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument(
        "--templates",
        help="keep the 128 template NEFFs here and reuse them (default: made in OUT, removed)",
    )
    a = ap.parse_args()
    t0 = time.monotonic()
    if os.path.exists(a.out) and os.listdir(a.out):
        sys.exit("make_zoo: %s exists and is not empty" % a.out)
    lay = LAYOUTS[a.layout]
    versions, sizes = lay["versions"], lay["sizes"]
    suffix = "" if a.layout == "compiler" else "-" + a.layout
    tdir = os.path.join(a.templates or a.out, ".templates-%s%s" % (a.seed, suffix))
    os.makedirs(tdir, exist_ok=True)
    mc.make_pools(a.seed)
    jobs = [(tdir, a.seed, k, v, sizes) for k in range(sizes[3]) for v in range(VARIANTS)]
    jobs.sort(key=lambda j: -j[2])  # the big ones first: the pool's tail stays busy
    with Pool(a.jobs) as p:
        done = p.map(template, jobs, chunksize=1)
    templates = {}
    for k, v, path in done:
        with open(path, "rb") as f:
            templates[(k, v)] = f.read()
    t_tpl = time.monotonic() - t0

    r = random.Random("%s/zoo%s/%d" % (a.seed, suffix, a.entries))
    keys_by_version = [[] for _ in versions]
    pool = {}  # (k, v) -> [paths of distinct NEFFs]
    distinct = links = failed = locked = 0
    distinct_bytes = 0
    sizes_out = []
    made = set()
    for i in range(a.entries):
        if not lay["entries"]:
            # A flat zoo: the NEFF alone, a thousand to a directory.
            tk = (draw_class(r, sizes), r.randrange(VARIANTS))
            d = os.path.join(a.out, "d%03d" % (i // 1000))
            os.makedirs(d, exist_ok=True)
            neff = os.path.join(d, "n%06d.neff" % i)
            b = variant(templates[tk], r, "n%06d" % i, i + 1)
            write(neff, b)
            stamp = EPOCH + 60 * i
            os.utime(neff, (stamp, stamp))
            distinct += 1
            distinct_bytes += len(b)
            sizes_out.append(len(b))
            continue
        vi = min(len(versions) - 1, int(r.random() ** 0.8 * len(versions)))
        version = versions[vi]
        key = None
        if vi > 0 and r.random() < REUSE:
            older = keys_by_version[r.randrange(vi)]
            if older:
                key = older[r.randrange(len(older))]
        if key is None or (version, key) in made:
            key = key_hex(r)
        made.add((version, key))
        keys_by_version[vi].append(key)
        d = os.path.join(a.out, version, key)
        os.makedirs(d)
        stamp = EPOCH + 60 * i
        write(os.path.join(d, "compile_flags.json"), b'["--target=trn1", "-O2"]')
        write(os.path.join(d, "model.hlo_module.pb"), r.randbytes(512))
        x = r.random()
        linked = False
        if x < lay["failed"]:
            write(
                os.path.join(d, "model.log"),
                b"INFO: compiling\nERROR 70 [neuronx-cc]: internal compiler error\n",
            )
            failed += 1
        elif x < lay["failed"] + lay["locked"]:
            write(os.path.join(d, "model.hlo_module.pb.lock"), b"")
            locked += 1
        else:
            tk = (draw_class(r, sizes), r.randrange(VARIANTS))
            neff = os.path.join(d, "model.neff")
            linked = not (distinct_bytes < a.budget_bytes or not pool.get(tk))
            if not linked:
                b = variant(templates[tk], r, key, i + 1)
                write(neff, b)
                os.utime(neff, (stamp, stamp))
                pool.setdefault(tk, []).append(neff)
                distinct += 1
                distinct_bytes += len(b)
                sizes_out.append(len(b))
            else:
                src = pool[tk][r.randrange(len(pool[tk]))]
                os.link(src, neff)
                links += 1
                sizes_out.append(len(templates[tk]))
            write(os.path.join(d, "model.done"), b"")
        for f in os.listdir(d):
            # A link keeps its pool NEFF's mtime (they share one inode).
            if f != "model.neff" or not linked:
                os.utime(os.path.join(d, f), (stamp, stamp))
        os.utime(d, (stamp, stamp))
        if (i + 1) % 10000 == 0:
            print("make_zoo: %d entries, %.0f s" % (i + 1, time.monotonic() - t0), file=sys.stderr)
    # The templates are not part of the cache.
    if not a.templates:
        shutil.rmtree(tdir)
    sizes = sorted(sizes_out)
    q = lambda f: sizes[min(len(sizes) - 1, int(f * len(sizes)))] if sizes else 0  # noqa: E731
    manifest = {
        "entries": a.entries,
        "layout": a.layout,
        "neffs": len(sizes),
        "distinct_neffs": distinct,
        "hard_links": links,
        "failed": failed,
        "locked": locked,
        "versions": {v: len(k) for v, k in zip(versions, keys_by_version)},
        "distinct_bytes": distinct_bytes,
        "apparent_neff_bytes": sum(sizes),
        "budget_bytes": a.budget_bytes,
        "size_quantiles": {"min": q(0), "p50": q(0.5), "p90": q(0.9), "p99": q(0.99), "max": q(1)},
        "seed": a.seed,
        "seconds": round(time.monotonic() - t0, 1),
        "template_seconds": round(t_tpl, 1),
    }
    with open(os.path.abspath(a.out) + ".manifest.json", "w") as f:
        json.dump(manifest, f, indent=1)
    beyond = (
        "%d hard links to them, beyond the %.2f GiB budget" % (links, a.budget_bytes / 2**30)
        if links
        else "no hard links: within the %.2f GiB budget" % (a.budget_bytes / 2**30)
    )
    print(
        "make_zoo: %d entries in %s (%d NEFFs: %d distinct, %.2f GiB; %s; %d failed, "
        "%d locked), NEFF sizes min %d, median %d, p90 %d, p99 %d, max %d bytes, %.0f s"
        % (
            a.entries,
            a.out,
            len(sizes),
            distinct,
            distinct_bytes / 2**30,
            beyond,
            failed,
            locked,
            q(0),
            q(0.5),
            q(0.9),
            q(0.99),
            q(1),
            time.monotonic() - t0,
        )
    )


if __name__ == "__main__":
    main()
