#!/usr/bin/env python3
"""Writes the benchmark corpus: a compile-cache zoo of small NEFFs and three big ones.

    python3 bench/make_corpus.py [OUTDIR] [--seed S] [--jobs N] [--small-count N]
                                 [--subset-every K] [--only small|large]
                                 [--scale F] [--many-count N] [--quick]

OUTDIR defaults to /tmp/neff-bench, the corpus path every script under bench/, the
criterion benches (`NEFF_BENCH_CORPUS=/tmp/neff-bench cargo bench`) and PERF.md's commands
use. It gets:

  small/                  the zoo: --small-count (2,000) gzip NEFFs (package version 2) laid
                          out as a Neuron compile cache,
                          small/<compiler>/MODULE_<hash>+<hash>/model.neff,
                          each entry also holding model.done, compile_flags.json and
                          model.hlo_module.pb as the compiler wrapper leaves them, and
                          every 50th NEFF's version directory an extra entry without
                          one: a failed compile (model.log) or a lock left behind
                          (model.hlo_module.pb.lock); 10 to 40 members, 1 or 2 cores, engine
                          programs and constants of 4 KiB to 2 MiB, def.json var tables of
                          50 to 5,000 entries, a mix of collective and alias metadata
  small_subset<M>/        hard links to every K-th zoo NEFF (M = count / K: small_subset200
                          by default), same relative paths; for the slow reference reader
  large/big_pkg1.neff     ~1 GiB of raw tar (package version 1, SHA-256), 3,000 members,
                          2 cores, a ~20 MB sg00/def.json (200,000 vars) mid-archive
  large/big_pkg2.neff     the same recipe at a quarter of the size (256 MiB of tar), gzip
                          (package version 2, MD5)
  large/many_members.neff 50,000 small members over 4 cores, gzip
  MANIFEST.json           the seed, sizes, member counts, where each large file's def.json
                          sits

Everything is a function of --seed (default "neff-bench") and of each file's name or zoo
index only: any --jobs gives the same bytes, and --small-count 100 gives the first 100
NEFFs of the 2,000. The full corpus is ~3.5 GiB and takes a few minutes on 2 cores.

--quick is for checking the script and the readers, not for timing: 100 zoo NEFFs, the
large files at 1/64 of their size and many_members with 5,000 members (~60 MB, seconds).
--scale multiplies the two big_pkg files' sizes; --many-count sets many_members' count.

The NEFFs: a 1024-byte little-endian header (package version, header size 1024, data size,
format 2.0, build version, hash, UUID, name, core counts, feature bits), then a PAX tar
written with Python's tarfile, gzip level 6 for package version 2. Archive order is a
depth-first walk with each directory's children shuffled (as a writer walking readdir
order gives), directory entries included, each entry with a PAX mtime record carrying
nanoseconds. Member bytes come from two pools made once per run: "instruction" records
(opcode words from a small vocabulary, random operands; gzip ratio ~0.35) and bf16-like
"weights" (random low byte, high byte from a few values; ratio ~0.8).

JSON members follow docs/FORMAT.md: kelf-N.json names the target arch and its subgraph;
neff.json's "graphs" object holds one "__kelf" node per core; sgNN/def.json holds the var
table (dense var_ids), the dma_queue table and, when the NEFF has collectives, the
top-level keys replica_groups / src_target_pairs / #rank_world_size; tensor_map.json holds
inputs, outputs and alias_map (sgLnk/sgNN/tensor_map.json in 5% of the zoo). A few zoo
NEFFs are refused by the reference reader's guards on purpose (two topologies of different
sizes, one input aliased twice).
"""

import argparse
import hashlib
import json
import math
import os
import random
import shutil
import struct
import sys
import tarfile
import time
import zlib
from multiprocessing import Pool

DEFAULT_OUT = "/tmp/neff-bench"
MTIME = 1_717_171_717
GZIP_LEVEL = 6
COMPILERS = ("neuronxcc-2.14.227.0+2d4f85be", "neuronxcc-2.15.128.0+56dc5a86")
ENGINES = ("pe", "act", "pool", "dve", "sp")
VAR_TYPES = (
    ("state-buffer", 28),
    ("local", 20),
    ("tmp-buf", 14),
    ("file", 16),
    ("virtual", 7),
    ("shared", 4),
    ("remote", 2),
    ("input", 5),
    ("output", 4),
)
LAYERS = (
    "self_attn.q_proj",
    "self_attn.k_proj",
    "self_attn.v_proj",
    "self_attn.o_proj",
    "mlp.gate_proj",
    "mlp.up_proj",
    "mlp.down_proj",
    "input_layernorm",
    "post_attention_layernorm",
    "embed_tokens",
    "lm_head",
)
QUEUE_KINDS = ("in", "out", "data", "act_load", "embedding_update", "dynamic")
FEATURES = (
    (0x2, "collective_has_offset"),
    (0x8, "neff_feature_custom_ops"),
    (0x20, "neff_has_functions"),
    (0x100, "dge_enabled"),
    (0x1000000, "runtime_barrier"),
)
DTYPES = (("bfloat16", 2), ("float32", 4), ("int32", 4), ("float16", 2))
COMPACT = {"separators": (",", ":")}

# --------------------------------------------------------------------------- byte pools

POOL_BYTES = 32 << 20
POOLS = {}


def make_pools(seed):
    """The two member-byte pools, made once in the parent (workers fork after)."""
    if POOLS.get("seed") == seed:
        return
    r = random.Random("%s/pools" % seed)
    # Instruction-like: 32-byte records = a 24-byte opcode word drawn from 256 words (about
    # half their bytes zero), then 8 random operand bytes.
    n = POOL_BYTES // 32
    zero_low = bytes(0 if b < 128 else b for b in range(256))
    words = [r.randbytes(24).translate(zero_low) for _ in range(256)]
    opcodes = b"".join(words[i] for i in r.randbytes(n))
    operands = r.randbytes(8 * n)
    instr = bytearray(POOL_BYTES)
    for j in range(24):
        instr[j::32] = opcodes[j::24]
    for j in range(8):
        instr[24 + j :: 32] = operands[j::8]
    # bf16-like weights: a random mantissa byte, then a sign/exponent byte from 8 values.
    high = bytes((0x3C, 0x3D, 0x3E, 0x3F, 0xBC, 0xBD, 0xBE, 0xBF)[b % 8] for b in range(256))
    weights = bytearray(POOL_BYTES)
    weights[0::2] = r.randbytes(POOL_BYTES // 2)
    weights[1::2] = r.randbytes(POOL_BYTES // 2).translate(high)
    POOLS.update(seed=seed, instr=memoryview(bytes(instr)), weights=memoryview(bytes(weights)))


def pool_bytes(r, kind, size):
    """`size` bytes of a pool (a zero-copy view), at a random 32-byte-aligned offset."""
    pool = POOLS[kind]
    size = min(size, len(pool) - 32)
    at = r.randrange((len(pool) - size) // 32 + 1) * 32
    return pool[at : at + size]


def skewed(r, lo, hi, power=2.5):
    """lo..hi, most values near lo (4 KiB..2 MiB: median ~12 KiB, mean ~150 KiB)."""
    return int(lo * math.exp(math.log(hi / lo) * r.random() ** power))


def log_uniform(r, lo, hi):
    return int(math.exp(r.uniform(math.log(lo), math.log(hi))))


# --------------------------------------------------------------------------- JSON members


def dump(obj):
    return json.dumps(obj, **COMPACT).encode()


def pad(r, doc, key, target, entry):
    """Sets doc[key] to a list of entry(r, i) long enough that doc's JSON is ~target bytes."""
    doc[key] = []
    room = target - len(dump(doc))
    if room <= 0:
        return doc
    one = len(dump(entry(r, 0))) + 1
    doc[key] = [entry(r, i) for i in range(max(1, room // one))]
    return doc


def info_json(r, module, build, cores, target):
    doc = {
        "name": module,
        "version": {"major": 2, "minor": 0},
        "build_version": build,
        "compiler": "neuronx-cc " + build,
        "num_tpb": cores,
        "engines": [True] * 5 + [False] * 3,
        "compile_flags": ["--target=trn1", "-O2", "--lnc=%d" % cores],
    }

    def hlo(r, i):
        op = r.choice(("dot", "add", "multiply", "reduce", "transpose", "all-reduce", "fusion"))
        return {"id": i, "hlo": "%s.%d" % (op, i), "cycles": r.randrange(1000, 10**7)}

    return dump(pad(r, doc, "hlo_ops", target, hlo))


def neff_json(r, cores, arch, target):
    graphs = {"main": {"op": "main", "nodes": ["sg_coreV1%d" % c for c in range(cores)]}}
    for c in range(cores):
        graphs["sg_coreV1%d" % c] = {
            "op": "__kelf",
            "attrs": {"func_name": "0", "kelf": "kelf-%d.json" % c, "tvm_op": "sg_coreV1%d" % c},
        }
    doc = {"version": "0.5", "revision": "r%06d" % r.randrange(10**6), "target_arch": arch}
    doc["graphs"] = graphs

    def edge(r, i):
        return {
            "src": "t%d" % i,
            "dst": "t%d" % (i + r.randrange(1, 64)),
            "bytes": r.randrange(64, 1 << 20),
        }

    return dump(pad(r, doc, "edges", target, edge))


def kelf_json(r, core, arch, programs, target):
    doc = {
        "graphs": [{"definition": "sg%02d/def.json" % core, "name": "sg%02d" % core}],
        "version": "0.5",
        "target": arch,
        "programs": {
            e: {"bin": name, "bytes": size} for e, (name, size) in sorted(programs.items())
        },
    }

    def section(r, i):
        return {
            "sec": i,
            "engine": r.choice(ENGINES),
            "off": r.randrange(1 << 24),
            "len": r.randrange(64, 1 << 16),
        }

    return dump(pad(r, doc, "sections", target, section))


def engine_json(r, core, engine, target):
    doc = {"name": "%s_array_json" % engine, "instr": "%s.bin" % engine}

    def block(r, i):
        return {
            "queue": "%s%d" % (r.choice(QUEUE_KINDS), r.randrange(16)),
            "instance_name": "%s_%d_%d" % (engine, core, i),
            "desc": [
                {
                    "from": "t%d" % r.randrange(10**5),
                    "to": "t%d" % r.randrange(10**5),
                    "from_sizes": [r.choice((1, 2, 4)), r.choice((128, 512, 2048))],
                }
            ],
        }

    return dump(pad(r, doc, "dma", target, block))


def collectives(r, kind):
    """def.json's collective keys: none, rg, pairs, both, explicit or mpmd (refused)."""
    if kind == "none":
        return {}
    ranks = r.choice((2, 4, 8, 16, 32))
    groups = r.choice((1, 1, 2, 4))
    topology = [[g * ranks + k for k in range(ranks)] for g in range(groups)]
    cc = {}
    if kind in ("rg", "both", "explicit"):
        cc["replica_groups"] = [topology]
    if kind in ("pairs", "both"):
        n = ranks * groups
        cc["src_target_pairs"] = [[i, (i + 1) % n] for i in range(n)]
    if kind == "explicit":
        cc["#rank_world_size"] = ranks * groups * r.choice((1, 2))
    if kind == "mpmd":
        cc["replica_groups"] = [topology, [list(range(2 * ranks))]]
    return cc


def def_json(r, module, core, n_vars, constants, queues, cc, plain_names=False):
    """def.json "0.6": n_vars vars with dense ids; `constants` ((member, size), ...) become
    the "file" vars, as far as the drawn types allow."""
    kinds = r.choices([k for k, _ in VAR_TYPES], [w for _, w in VAR_TYPES], k=n_vars)
    constants = list(constants)
    var = {}
    for i, kind in enumerate(kinds):
        if kind == "file" and constants:
            member, size = constants.pop()
            var["const.%d.%s" % (i, member.rsplit("/", 1)[-1])] = {
                "var_id": i,
                "type": "file",
                "size": size,
                "file_name": member.split("/", 1)[-1],
            }
            continue
        if kind == "file":
            kind = "local"
        layer = LAYERS[i % len(LAYERS)] if plain_names else r.choice(LAYERS)
        depth = i % 96 if plain_names else r.randrange(96)
        dtype, width = DTYPES[i % 4] if plain_names else r.choice(DTYPES)
        cols = 1 << (i % 9 + 3) if plain_names else 1 << r.randrange(3, 12)
        entry = {
            "var_id": i,
            "type": kind,
            "size": cols * 128 * width,
            "dtype": dtype,
            "shape": [128, cols],
        }
        if kind == "virtual":
            entry["backing_buf"] = "main" if i % 3 else "sharded"
            entry["backing_variable_off"] = i * 512
        elif kind in ("shared", "remote") and cc:
            entry["CCGrp"] = i % 4
        var["model.layers.%d.%s.t%d" % (depth, layer, i)] = entry
    doc = {
        "name": "definition",
        "version": "0.6",
        "git_version": "",
        "module": module,
        "var": var,
        "dma_queue": {
            q: {"owner": ENGINES[i % 5], "type": q.rstrip("0123456789"), "semaphore": i}
            for i, q in enumerate(queues)
        },
    }
    for e in ENGINES:
        doc[e] = "%s.json" % e
    doc.update(cc)
    doc["fp8_conversion_config"] = {"fp8_range_extension": 0, "ocp_sat": 1}
    doc["neff_features"] = ["collective_has_offset", "neff_has_functions"]
    return dump(doc)


def tensor_map_json(r, n_in, n_out, aliasing, target):
    def tensor(io, i):
        dtype, _ = r.choice(DTYPES)
        return {
            "name": "%s%d" % (io, i),
            "dtype": dtype,
            "shape": [r.choice((1, 4, 8)), r.choice((128, 2048))],
            "address": r.randrange(1 << 30) & ~63,
        }

    doc = {
        "inputs": [tensor("input", i) for i in range(n_in)],
        "outputs": [tensor("output", i) for i in range(n_out)],
        "alias_map": [],
    }
    if aliasing != "none":
        for i in range(min(n_in, n_out, r.randint(1, 4))):
            doc["alias_map"].append(
                {
                    "input_name": "input%d" % i,
                    "output_name": "output%d" % i,
                    "must_alias": aliasing == "must" and i == 0,
                }
            )
        if aliasing == "dup":
            doc["alias_map"].append(
                {
                    "input_name": "input0",
                    "output_name": "output%d" % (n_out - 1),
                    "must_alias": False,
                }
            )
    return dump(
        pad(r, doc, "notes", target, lambda r, i: {"k": "n%d" % i, "v": r.randrange(1 << 30)})
    )


# --------------------------------------------------------------------------- writing a NEFF


class Chunks:
    """A read() view over bytes/memoryview, for tarfile.addfile (no copies)."""

    def __init__(self, data):
        self.data, self.at = memoryview(data), 0

    def read(self, n=-1):
        end = len(self.data) if n is None or n < 0 else self.at + n
        out = self.data[self.at : end]
        self.at += len(out)
        return out


class Payload:
    """What tarfile writes into: counts tar bytes, gzips (package 2), hashes what is stored."""

    def __init__(self, out, gzip):
        self.out = out
        self.tar_bytes = 0
        self.stored = 0
        self.hash = hashlib.md5() if gzip else hashlib.sha256()
        self.z = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 16 + 15, 9) if gzip else None

    def tell(self):
        return self.tar_bytes

    def _store(self, b):
        if b:
            self.hash.update(b)
            self.out.write(b)
            self.stored += len(b)

    def write(self, b):
        self.tar_bytes += len(b)
        self._store(self.z.compress(b) if self.z else b)

    def close(self):
        if self.z:
            self._store(self.z.flush())


def header(pkg, data_size, digest, meta):
    """The 1024-byte NEFF header (the layout the fixtures use; see fixtures/README.md)."""
    h = bytearray(1024)
    struct.pack_into("<QQQQQ", h, 0x000, pkg, 1024, data_size, 2, 0)
    build = meta["build"].encode()[:127]
    h[0x028 : 0x028 + len(build)] = build
    struct.pack_into("<I", h, 0x0A8, 1 if pkg == 2 else 0)
    h[0x0AC:0x0CC] = digest + b"0" * 16 if pkg == 2 else digest
    h[0x0CC:0x0DC] = meta["uuid"]
    name = meta["name"].encode()[:255]
    h[0x0DC : 0x0DC + len(name)] = name
    struct.pack_into("<I", h, 0x1DC, meta["cores"])
    h[0x1E0 : 0x1E0 + meta["cores"]] = b"\x01" * meta["cores"]
    struct.pack_into("<Q", h, 0x220, meta["features"])
    struct.pack_into("<I", h, 0x228, 2 if meta["cores"] == 2 else 1)
    return bytes(h)


def meta_for(r, name, build, cores):
    uuid = bytearray(r.randbytes(16))
    uuid[6] = 0x40 | (uuid[6] & 0x0F)
    uuid[8] = 0x80 | (uuid[8] & 0x3F)
    features = 0
    for bit, _ in FEATURES:
        if r.random() < 0.35:
            features |= bit
    return {"uuid": bytes(uuid), "name": name, "build": build, "cores": cores, "features": features}


def archive_order(r, members, middle=None):
    """(path, is_dir) in a depth-first walk, each directory's children shuffled. `middle`
    (a file path), and each directory on its way, is moved among its siblings to the last
    place that starts before half of the archive's bytes: it sits mid-archive."""
    tree = {}
    for name in members:
        node = tree
        *dirs, leaf = name.split("/")
        for d in dirs:
            node = node.setdefault(d + "/", {})
        node[leaf] = None

    def full(node, prefix):
        return {k: weight_at(node, prefix, k) for k in node}

    def weight_at(node, prefix, key):
        sub = node[key]
        if sub is None:
            return 1536 + -(-len(members[prefix + key]) // 512) * 512
        return 1536 + sum(full(sub, prefix + key).values())

    half = sum(full(tree, "").values()) // 2
    order = []
    emitted = 0

    def walk(node, prefix):
        nonlocal emitted
        children = sorted(node)
        r.shuffle(children)
        if middle and middle.startswith(prefix):
            rest = middle[len(prefix) :]
            step = rest.split("/", 1)[0] + ("/" if "/" in rest else "")
            children.remove(step)
            sizes = [weight_at(node, prefix, c) for c in children]
            at, before = 0, emitted
            while at < len(children) and before + sizes[at] <= half:
                before += sizes[at]
                at += 1
            children.insert(at, step)
        for c in children:
            order.append((prefix + c, node[c] is not None))
            if node[c] is None:
                emitted += weight_at(node, prefix, c)
            else:
                emitted += 1536
                walk(node[c], prefix + c)

    walk(tree, "")
    return order


def write_neff(path, members, pkg, meta, r, middle=None):
    """Writes `members` ({name: bytes or memoryview}) as a NEFF at `path` (atomically);
    returns its sizes and where each def.json's data sits in the tar."""
    gzip = pkg == 2
    order = archive_order(r, members, middle)
    where = {}
    tmp = path + ".part"
    with open(tmp, "wb", buffering=1 << 20) as f:
        f.write(bytes(1024))
        out = Payload(f, gzip)
        tar = tarfile.TarFile(fileobj=out, mode="w", format=tarfile.PAX_FORMAT, copybufsize=4 << 20)
        files = 0
        for name, is_dir in order:
            info = tarfile.TarInfo(name.rstrip("/"))
            info.mtime = MTIME
            info.pax_headers = {"mtime": "%d.%09d" % (MTIME, r.randrange(10**9))}
            if is_dir:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
                continue
            data = members[name]
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, Chunks(data))
            files += 1
            if name.endswith("def.json"):
                where[name] = out.tell() - -(-info.size // 512) * 512
        tar.close()
        out.close()
        f.seek(0)
        f.write(header(pkg, out.stored, out.hash.digest(), meta))
    os.replace(tmp, path)
    return {
        "path": path,
        "pkg": pkg,
        "members": files,
        "entries": len(order),
        "tar_bytes": out.tar_bytes,
        "file_bytes": 1024 + out.stored,
        "def_json": {
            k: {
                "data_offset": v,
                "size": len(members[k]),
                "offset_fraction": round(v / out.tar_bytes, 3),
            }
            for k, v in sorted(where.items())
        },
    }


# --------------------------------------------------------------------------- the zoo


def zoo_path(seed, i):
    """small/<compiler>/MODULE_<20 hex>+<8 hex>/model.neff of zoo NEFF i."""
    m = hashlib.sha1(("%s/module/%d" % (seed, i)).encode()).hexdigest()
    compiler = COMPILERS[0] if i % 5 < 3 else COMPILERS[1]
    return os.path.join(compiler, "MODULE_%s+%s" % (m[:20], m[20:28])), "model.neff"


def side_entry(out, seed, i, reldir):
    """Every 50th zoo NEFF's compiler directory also gets an entry holding no NEFF, as
    the compiler wrapper leaves them: a failed compile (its model.log, replayed from the
    cache until removed) or a compile killed while it held its lock."""
    if i % 50 not in (7, 23):
        return
    h = hashlib.sha1(("%s/side/%d" % (seed, i)).encode()).hexdigest()
    d = os.path.join(out, "small", os.path.dirname(reldir), "MODULE_%s+%s" % (h[:20], h[20:28]))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "compile_flags.json"), "w") as f:
        json.dump(["--target=trn1", "-O2"], f)
    with open(os.path.join(d, "model.hlo_module.pb"), "wb") as f:
        f.write(hashlib.sha256(h.encode()).digest() * 16)
    if i % 50 == 7:
        with open(os.path.join(d, "model.log"), "w") as f:
            f.write("INFO: compiling\nERROR 70 [neuronx-cc]: internal compiler error\n")
    else:
        open(os.path.join(d, "model.hlo_module.pb.lock"), "w").close()


def zoo_neff(out, seed, i):
    r = random.Random("%s/small/%d" % (seed, i))
    reldir, fname = zoo_path(seed, i)
    build = reldir.split("/")[0].split("-", 1)[1]
    module = reldir.split("/")[1]
    cores = 1 if r.random() < 0.7 else 2
    arch = r.choice(("sunda", "sunda", "cayman"))
    cc_kind = r.choices(("none", "rg", "pairs", "both", "explicit", "mpmd"), (58, 22, 6, 8, 5, 1))[
        0
    ]
    aliasing = r.choices(("none", "may", "must", "dup"), (50, 30, 19, 1))[0]
    linked = r.random() < 0.05
    wanted = r.randint(10, 40)
    members, constants = {}, [[] for _ in range(cores)]
    for c in range(cores):
        programs = {}
        for e in ENGINES[: r.randint(3, 5)]:
            name = "sg%02d/%s.bin" % (c, e)
            members[name] = pool_bytes(r, "instr", skewed(r, 4 << 10, 2 << 20))
            programs[e] = (name, len(members[name]))
        members["kelf-%d.json" % c] = kelf_json(
            r, c, arch, programs, log_uniform(r, 4 << 10, 100 << 10)
        )
    for k in range(max(0, wanted - len(members) - 2 - 2 * cores)):
        c = k % cores
        if r.random() < 0.45:
            name = "sg%02d/%s.json" % (c, r.choice(ENGINES))
            if name not in members:
                members[name] = engine_json(r, c, name[5:-5], skewed(r, 2 << 10, 200 << 10, 1.5))
                continue
        name = "sg%02d/const_%04d.bin" % (c, k)
        members[name] = pool_bytes(
            r, "weights" if r.random() < 0.3 else "instr", skewed(r, 4 << 10, 2 << 20)
        )
        constants[c].append((name, len(members[name])))
    cc = collectives(r, cc_kind)
    for c in range(cores):
        queues = ["%s%d" % (q, c) for q in QUEUE_KINDS[: r.randint(2, len(QUEUE_KINDS))]]
        members["sg%02d/def.json" % c] = def_json(
            r, module, c, log_uniform(r, 50, 5000), constants[c], queues, cc
        )
        tm = ("sgLnk/sg%02d/tensor_map.json" if linked else "sg%02d/tensor_map.json") % c
        members[tm] = tensor_map_json(
            r, r.randint(1, 24), r.randint(1, 12), aliasing, log_uniform(r, 2 << 10, 40 << 10)
        )
    members["neff.json"] = neff_json(r, cores, arch, log_uniform(r, 2 << 10, 12 << 10))
    members["info.json"] = info_json(r, module, build, cores, log_uniform(r, 2 << 10, 24 << 10))
    d = os.path.join(out, "small", reldir)
    os.makedirs(d, exist_ok=True)
    s = write_neff(os.path.join(d, fname), members, 2, meta_for(r, module, build, cores), r)
    open(os.path.join(d, "model.done"), "w").close()
    with open(os.path.join(d, "compile_flags.json"), "w") as f:
        json.dump(["--target=trn1", "--lnc=%d" % cores, "-O2"], f)
    with open(os.path.join(d, "model.hlo_module.pb"), "wb") as f:
        f.write(hashlib.sha256(reldir.encode()).digest() * 16)
    side_entry(out, seed, i, reldir)
    return {
        "i": i,
        "rel": os.path.join(reldir, fname),
        "members": s["members"],
        "member_bytes": sum(len(v) for v in members.values()),
        "tar": s["tar_bytes"],
        "file": s["file_bytes"],
        "json_sizes": sorted(len(v) for k, v in members.items() if k.endswith(".json")),
        "bin_sizes": sorted(len(v) for k, v in members.items() if k.endswith(".bin")),
    }


# --------------------------------------------------------------------------- large files


def big_neff(out, seed, fname, pkg, scale):
    """3,000 regular members over 2 cores; scale 1 is ~1 GiB of tar and 200,000 vars per
    def.json. Weight members fill whatever the other members leave of the size."""
    r = random.Random("%s/large/%s" % (seed, fname))
    cores, arch = 2, "cayman"
    build = COMPILERS[1].split("-", 1)[1]
    module = "MODULE_llama3_70b_tp32_bs4_seq8192"
    n_vars = max(100, int(200_000 * scale))
    members, programs = {}, [{} for _ in range(cores)]
    for c in range(cores):
        for e in ENGINES:
            name = "sg%02d/%s.bin" % (c, e)
            members[name] = pool_bytes(
                r, "instr", max(4096, int(log_uniform(r, 2 << 20, 12 << 20) * scale))
            )
            programs[c][e] = (name, len(members[name]))
            members["sg%02d/%s.json" % (c, e)] = engine_json(
                r, c, e, max(4096, int(1_500_000 * scale))
            )
    fixed_members = len(members) + cores * 3 + 2  # def, tensor_map, kelf per core; neff, info
    names = []
    for k in range(3000 - fixed_members):
        c, shard = k % cores, r.randrange(32)
        layer = LAYERS[(k // 2) % len(LAYERS)]
        if r.random() < 0.5:
            tail = "weight.shard_%02d_of_32.bin" % shard
        else:  # past ustar's 100-byte name field: a PAX path record
            tail = (
                "weight.tp_rank_%02d.pp_stage_00.expert_none.dtype_bfloat16.layout_tiled.bin"
                % shard
            )
        names.append(
            "sg%02d/weights/model.layers.%d.%s.%s" % (c, k // (2 * len(LAYERS)), layer, tail)
        )
    draws = [log_uniform(r, 16 << 10, 4 << 20) for _ in names]
    target = int((1 << 30) * scale)
    json_guess = 2 * 105 * n_vars + int(1_300_000 * scale)
    room = target - sum(len(v) for v in members.values()) - json_guess - 3100 * 2048
    factor = max(room, 0) / sum(draws)
    constants = [[] for _ in range(cores)]
    for k, (name, draw) in enumerate(zip(names, draws)):
        members[name] = pool_bytes(r, "weights", max(4096, int(draw * factor)))
        constants[k % cores].append((name, len(members[name])))
    cc = collectives(random.Random("%s/large/%s/cc" % (seed, fname)), "both")
    cc["replica_groups"] = [[[g * 32 + k for k in range(32)] for g in range(2)]]
    queues = ["%s%d" % (q, i) for q in QUEUE_KINDS for i in range(4)]
    for c in range(cores):
        members["sg%02d/def.json" % c] = def_json(
            r, module, c, n_vars, constants[c], queues, cc, plain_names=True
        )
        members["sg%02d/tensor_map.json" % c] = tensor_map_json(
            r, 600, 300, "must", max(4096, int(200_000 * scale))
        )
        members["kelf-%d.json" % c] = kelf_json(
            r, c, arch, programs[c], max(4096, int(400_000 * scale))
        )
    members["neff.json"] = neff_json(r, cores, arch, 20_000)
    members["info.json"] = info_json(r, module, build, cores, 60_000)
    assert len(members) == 3000, len(members)
    os.makedirs(os.path.join(out, "large"), exist_ok=True)
    s = write_neff(
        os.path.join(out, "large", fname),
        members,
        pkg,
        meta_for(r, module, build, cores),
        r,
        middle="sg00/def.json",
    )
    s.update(member_bytes=sum(len(v) for v in members.values()), def_vars=n_vars)
    return s


def many_neff(out, seed, count):
    """`count` members (64 B to 16 KiB, a few JSON) over 4 cores, gzip."""
    fname = "many_members.neff"
    r = random.Random("%s/large/%s" % (seed, fname))
    cores, arch = 4, "sunda"
    build = COMPILERS[0].split("-", 1)[1]
    module = "MODULE_unet_sd21_tiled_4core"
    members, programs = {}, [{} for _ in range(cores)]
    for c in range(cores):
        for e in ENGINES:
            name = "sg%02d/%s.bin" % (c, e)
            members[name] = pool_bytes(r, "instr", log_uniform(r, 64 << 10, 1 << 20))
            programs[c][e] = (name, len(members[name]))
    constants = [[] for _ in range(cores)]
    for k in range(count - len(members) - 3 * cores - 2):
        c, q = k % cores, (k // cores) % 64
        if k % 97 == 0:
            name = "sg%02d/dma/q%03d/desc_%05d.json" % (c, q, k)
            members[name] = engine_json(r, c, "sp", log_uniform(r, 512, 4 << 10))
        else:
            name = "sg%02d/dma/q%03d/desc_%05d.bin" % (c, q, k)
            members[name] = pool_bytes(r, "instr", log_uniform(r, 64, 16 << 10))
            if k % 11 == 0 and len(constants[c]) < 400:
                constants[c].append((name, len(members[name])))
    cc = collectives(random.Random("%s/large/%s/cc" % (seed, fname)), "rg")
    for c in range(cores):
        queues = ["%s%d" % (q, c) for q in QUEUE_KINDS]
        members["sg%02d/def.json" % c] = def_json(r, module, c, 5000, constants[c], queues, cc)
        members["sg%02d/tensor_map.json" % c] = tensor_map_json(r, 16, 8, "may", 8 << 10)
        members["kelf-%d.json" % c] = kelf_json(r, c, arch, programs[c], 32 << 10)
    members["neff.json"] = neff_json(r, cores, arch, 8 << 10)
    members["info.json"] = info_json(r, module, build, cores, 8 << 10)
    assert len(members) == count, len(members)
    os.makedirs(os.path.join(out, "large"), exist_ok=True)
    s = write_neff(
        os.path.join(out, "large", fname),
        members,
        2,
        meta_for(r, module, build, cores),
        r,
        middle="sg00/def.json",
    )
    s["member_bytes"] = sum(len(v) for v in members.values())
    return s


def task(job):
    kind, out, seed, what, arg = job
    make_pools(seed)  # a no-op in forked workers; spawned ones build their own
    if kind == "small":
        return kind, zoo_neff(out, seed, what)
    if what == "many_members":
        return kind, (what, many_neff(out, seed, arg))
    pkg, scale = arg
    return kind, (what, big_neff(out, seed, what + ".neff", pkg, scale))


# --------------------------------------------------------------------------- main


def disk_usage(path):
    """(bytes on disk, files) under path, hard links counted once."""
    seen, total, files = set(), 0, 0
    for d, _, names in os.walk(path):
        for n in names:
            st = os.lstat(os.path.join(d, n))
            files += 1
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_blocks * 512
    return total, files


def human(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return "%d B" % n if unit == "B" else "%.1f %s" % (n, unit)
        n /= 1024


def spread(values):
    values = sorted(values)
    return [values[0], values[len(values) // 2], values[-1]] if values else []


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir", nargs="?", default=DEFAULT_OUT, help="default %s" % DEFAULT_OUT)
    ap.add_argument(
        "--seed", default="neff-bench", help="every byte follows from it (default neff-bench)"
    )
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--small-count", type=int, help="zoo NEFFs (default 2000)")
    ap.add_argument(
        "--subset-every", type=int, default=10, help="small_subset links every Kth (default 10)"
    )
    ap.add_argument("--only", choices=("small", "large"))
    ap.add_argument("--scale", type=float, help="size factor of big_pkg1/big_pkg2 (default 1)")
    ap.add_argument("--many-count", type=int, help="members of many_members.neff (default 50000)")
    ap.add_argument(
        "--quick",
        action="store_true",
        help="a small corpus to check the script: 100 NEFFs, scale 1/64, 5,000 members",
    )
    a = ap.parse_args()
    small_count = a.small_count or (100 if a.quick else 2000)
    scale = a.scale or (1 / 64 if a.quick else 1.0)
    many = a.many_count or (5000 if a.quick else 50_000)
    if many < 64:
        ap.error("--many-count must be at least 64")
    t0 = time.time()
    out = os.path.abspath(a.outdir)
    os.makedirs(out, exist_ok=True)
    make_pools(a.seed)
    jobs = []
    if a.only in (None, "large"):  # the longest first, to overlap with the zoo
        jobs += [
            ("large", out, a.seed, "big_pkg2", (2, scale / 4)),
            ("large", out, a.seed, "big_pkg1", (1, scale)),
            ("large", out, a.seed, "many_members", many),
        ]
    if a.only in (None, "small"):
        shutil.rmtree(os.path.join(out, "small"), ignore_errors=True)
        jobs += [("small", out, a.seed, i, None) for i in range(small_count)]
    zoo, large = [], {}
    with Pool(max(1, a.jobs)) as pool:
        for kind, res in pool.imap_unordered(task, jobs, chunksize=1):
            if kind == "small":
                zoo.append(res)
                if len(zoo) % 250 == 0:
                    print(
                        "  small: %d/%d (%.0f s)" % (len(zoo), small_count, time.time() - t0),
                        file=sys.stderr,
                    )
            else:
                large[res[0]] = res[1]
                print("  large: %s (%.0f s)" % (res[0], time.time() - t0), file=sys.stderr)
    manifest_path = os.path.join(out, "MANIFEST.json")
    manifest = {}
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            manifest = json.load(f)
        if manifest.get("seed") != a.seed:
            manifest = {}
    manifest["seed"] = a.seed
    if zoo:
        zoo.sort(key=lambda z: z["i"])
        for old in os.listdir(out):
            if old.startswith("small_subset"):
                shutil.rmtree(os.path.join(out, old))
        subset = os.path.join(out, "small_subset%d" % (small_count // a.subset_every))
        picked = [z for z in zoo if z["i"] % a.subset_every == 0]
        for z in picked:
            link = os.path.join(subset, z["rel"])
            os.makedirs(os.path.dirname(link), exist_ok=True)
            os.link(os.path.join(out, "small", z["rel"]), link)
        manifest["small"] = {
            "count": len(zoo),
            "subset_dir": os.path.basename(subset),
            "subset_count": len(picked),
            "members_min_median_max": spread(z["members"] for z in zoo),
            "json_member_bytes_min_median_max": spread(x for z in zoo for x in z["json_sizes"]),
            "bin_member_bytes_min_median_max": spread(x for z in zoo for x in z["bin_sizes"]),
            "member_bytes": sum(z["member_bytes"] for z in zoo),
            "tar_bytes": sum(z["tar"] for z in zoo),
            "file_bytes": sum(z["file"] for z in zoo),
            "subset_file_bytes": sum(z["file"] for z in picked),
        }
    if large:
        manifest.setdefault("large", {}).update(large)
    manifest.setdefault("generation_seconds", {})[a.only or "all"] = round(time.time() - t0, 1)
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)

    print("corpus: %s (seed %s, %.0f s, %d jobs)" % (out, a.seed, time.time() - t0, a.jobs))
    for sub in ("small", "large"):
        if os.path.isdir(os.path.join(out, sub)):
            b, n = disk_usage(os.path.join(out, sub))
            print("  %-8s %10s on disk, %d files" % (sub + "/", human(b), n))
    if "small" in manifest:
        m = manifest["small"]
        print(
            "  small: %d NEFFs, members %s (min/median/max), member bytes %s, tar %s, stored %s"
            % (
                m["count"],
                m["members_min_median_max"],
                human(m["member_bytes"]),
                human(m["tar_bytes"]),
                human(m["file_bytes"]),
            )
        )
    for name, s in sorted(manifest.get("large", {}).items()):
        line = "  large/%s.neff: pkg %d, %d members, tar %s, file %s" % (
            name,
            s["pkg"],
            s["members"],
            human(s["tar_bytes"]),
            human(s["file_bytes"]),
        )
        d = s["def_json"].get("sg00/def.json")
        if d:
            line += ", sg00/def.json %s at %.0f%%" % (human(d["size"]), 100 * d["offset_fraction"])
        print(line)


if __name__ == "__main__":
    main()
