#!/usr/bin/env python3
"""Gzip NEFFs of the payload shapes users ship, for the inflate benches (issue 22).

    python3 bench/make_shapes.py OUTDIR [--mib 256] [--only NAME[,NAME...]] [--seed S]

Writes OUTDIR/NAME.neff for each shape below, each a 1024-byte NEFF header
(fixtures/make_fixtures.py's, package version 2, MD5) then a gzip payload
whose tar (GNU format, a few JSON sidecars then weight files) is --mib MiB:

  zeros_noise_l1   zero padding with islands of noise (3%), zlib level 1
  gauss_f32_l6     gaussian float32 weights, zlib level 6
  mixed_l1         float32, bf16, int16, zero runs and JSON-like text, level 1
  mixed_l6         the same, zlib level 6
  mixed_gzip9      the same, GNU gzip -9
  mixed_pigz       the same, pigz -p 2 (independent 128 KiB blocks, sync-flushed)
  random_l6        random bytes, zlib level 6 (stored DEFLATE blocks)
  members32        mixed, level 6, as 32 concatenated gzip members
  zoo              a compile-cache NEFF: instruction records, bf16-like
                   weights and constants, JSON sidecars; level 6

Nothing is held whole in memory (a 3 GiB shape streams through the
compressor to disk); the bytes are a function of --seed and the shape.
Stdlib only (no numpy): each shape repeats a pool of values with fresh
random low bytes, so no two 32 KiB windows repeat. Uses gzip and pigz for
their shapes. Delete the big files after measuring.
"""
import argparse
import hashlib
import os
import random
import struct
import subprocess
import sys
import tarfile
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "fixtures"))
from make_fixtures import neff_header  # noqa: E402

CHUNK = 1 << 20
SHAPES = ["zeros_noise_l1", "gauss_f32_l6", "mixed_l1", "mixed_l6", "mixed_gzip9",
          "mixed_pigz", "random_l6", "members32", "zoo"]


class Rng:
    """Deterministic bytes, fast: random.Random's getrandbits in big draws."""

    def __init__(self, seed):
        self.r = random.Random(seed)

    def bytes(self, n):
        return self.r.getrandbits(n * 8).to_bytes(n, "little") if n else b""


def gauss_pool(rng, n):
    """n float32 draws of N(0, 0.02), as bytes."""
    g = rng.r.gauss
    return struct.pack(f"<{n}f", *(g(0.0, 0.02) for _ in range(n)))


class Content:
    """Chunks of one shape's weight bytes."""

    def __init__(self, shape, rng):
        self.shape, self.rng = shape, rng
        self.f32 = bytearray(gauss_pool(rng, CHUNK // 4))
        self.i = 0

    def f32_chunk(self, n):
        if n > len(self.f32):
            return self.f32_chunk(len(self.f32)) + self.f32_chunk(n - len(self.f32))
        b = bytearray(self.f32[: n - n % 4])
        b[0::4] = self.rng.bytes(len(b) // 4)  # fresh low mantissa bytes
        b[1::4] = self.rng.bytes(len(b) // 4)
        return bytes(b) + bytes(n % 4)

    def bf16_chunk(self, n):
        f = self.f32_chunk(2 * n)
        b = bytearray(n)
        b[0::2] = f[2::4][: len(b[0::2])]
        b[1::2] = f[3::4][: len(b[1::2])]
        return bytes(b)

    def int16_chunk(self, n):
        b = bytearray(self.rng.bytes(n))
        hi = self.rng.bytes(n // 2)
        b[1::2] = bytes(0 if x < 200 else 0xFF for x in hi)[: len(b[1::2])]
        return bytes(b)

    def text_chunk(self, n):
        r = self.rng.r
        keys = ["replica_groups", "tensor_map", "var", "dma_queue", "src_target_pairs",
                "size", "dtype", "shape", "offset", "name", "#rank_world_size"]
        out, k = [], 0
        while k < n:
            line = '{"%s": {"%s": [%d, %d, %d], "%s": "sg%02d/w_%x.bin"}},\n' % (
                r.choice(keys), r.choice(keys), r.randrange(1 << 20), r.randrange(4096),
                r.randrange(64), r.choice(keys), r.randrange(8), r.getrandbits(40))
            out.append(line)
            k += len(line)
        return "".join(out).encode()[:n]

    def noise_island_chunk(self, n):
        b = bytearray(n)
        r = self.rng.r
        at = 0
        while True:
            at += r.randrange(32 << 10, 96 << 10)
            ln = r.randrange(512, 4096)
            if at + ln > n:
                return bytes(b)
            b[at:at + ln] = self.rng.bytes(ln)

    def instr_chunk(self, n):
        # Opcode words from a small vocabulary, random operands (ratio ~0.35):
        # one pool of records, each chunk with fresh operand bytes.
        if not hasattr(self, "instr"):
            ops = [struct.pack("<I", 0x0100_0000 * k + 0x1234 * k) for k in range(1, 24)]
            r = self.rng.r
            self.instr = bytearray(b"".join(
                r.choice(ops) + r.choice(ops) + struct.pack("<HHI", r.randrange(64),
                                                            r.randrange(4096), 0)
                for _ in range(CHUNK // 16)))
        if n > len(self.instr):
            return self.instr_chunk(len(self.instr)) + self.instr_chunk(n - len(self.instr))
        b = bytearray(self.instr[: n - n % 16])
        b[12::16] = self.rng.bytes(len(b) // 16)
        b[13::16] = bytes(x & 7 for x in self.rng.bytes(len(b) // 16))
        return bytes(b) + bytes(n % 16)

    def chunk(self, n):
        s = self.shape
        self.i += 1
        if s.startswith("zeros_noise"):
            return self.noise_island_chunk(n)
        if s.startswith("gauss"):
            return self.f32_chunk(n)
        if s.startswith("random"):
            return self.rng.bytes(n)
        if s == "zoo":
            return [self.instr_chunk, self.bf16_chunk][self.i % 2](n)
        # mixed
        kind = self.i % 6
        if kind == 0:
            return self.f32_chunk(n)
        if kind == 1:
            return self.bf16_chunk(n)
        if kind == 2:
            return self.int16_chunk(n)
        if kind == 3:
            return bytes(n)
        if kind == 4:
            return self.text_chunk(n)
        return self.f32_chunk(n // 2) + bytes(n // 4) + self.text_chunk(n - n // 2 - n // 4)


class ZlibSink:
    """gzip (zlib, mtime 0) of what is written, `members` members of equal input."""

    def __init__(self, out, level, total, members=1):
        self.out, self.level = out, level
        self.per = -(-total // members) if members > 1 else None
        self.c, self.fed = None, 0

    def write(self, b):
        while b:
            if self.c is None:
                self.c = zlib.compressobj(self.level, zlib.DEFLATED, 31)
                self.fed = 0
            take = len(b) if self.per is None else min(len(b), self.per - self.fed)
            self.out.write(self.c.compress(b[:take]))
            self.fed += take
            b = b[take:]
            if self.per is not None and self.fed == self.per:
                self.out.write(self.c.flush())
                self.c = None

    def close(self):
        if self.c is not None:
            self.out.write(self.c.flush())


class ProcSink:
    """What is written, through an external compressor, into `out`."""

    def __init__(self, out, cmd):
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=out)

    def write(self, b):
        self.p.stdin.write(b)

    def close(self):
        self.p.stdin.close()
        if self.p.wait() != 0:
            raise SystemExit(f"compressor failed: {self.p.args}")


def tar_member(sink, name, size, fill):
    """One GNU tar member of `size` bytes from fill(n); returns bytes written."""
    ti = tarfile.TarInfo(name)
    ti.size, ti.mtime, ti.mode = size, 1700000000, 0o644
    h = ti.tobuf(format=tarfile.GNU_FORMAT)
    sink.write(h)
    left = size
    while left:
        n = min(CHUNK, left)
        sink.write(fill(n))
        left -= n
    pad = -size % 512
    sink.write(bytes(pad))
    return len(h) + size + pad


def write_tar(sink, shape, total, rng):
    content = Content(shape, rng)
    side = {
        "info.json": b'{"neuron_cc_version":"2.15.128.0","target":"trn1"}',
        "neff.json": b'{"graphs":{"sg00":{"nodes":[{"type":"__kelf","name":"sg00"}]}}}',
        "kelf-0.json": b'{"kelf_version":"1.0","target":"trn1","subgraph":"sg00"}',
        "sg00/def.json": b'{"#rank_world_size":32,"replica_groups":[[[0,1,2,3]]],'
                         b'"var":{"in0":{"type":"input","size":4096}}}',
        "sg00/tensor_map.json": b'{"inputs":["in0"],"outputs":[],"alias_map":{}}',
    }
    done = 0
    for name, body in side.items():
        done += tar_member(sink, name, len(body), lambda n, b=body: b[:n])
    # Weight files: 16 for a big tar (one per 1/16), zoo-like sizes for the zoo.
    body = total - done - 1024 - 16 * 512
    i = 0
    while body > 512:
        if shape == "zoo":
            size = min(body - 512, rng.r.randrange(4 << 10, 2 << 20))
        else:
            size = min(body - 512, max(total // 16, 1 << 20))
        size -= size % 512
        if size <= 0:
            break
        name = "sg00/%s-%04d.bin" % ("engine" if shape == "zoo" and i % 2 == 0 else "weights", i)
        wrote = tar_member(sink, name, size, content.chunk)
        body -= wrote
        done += wrote
        i += 1
    end = 1024 + (-(done + 1024) % 10240)  # two zero records, padded to GNU's block
    sink.write(bytes(end))
    return done + end


def make(outdir, shape, mib, seed):
    total = mib << 20
    rng = Rng(f"{seed}/{shape}")
    path = os.path.join(outdir, shape + ".neff")
    with tempfile.NamedTemporaryFile(dir=outdir, delete=False) as tmp:
        tmp.write(bytes(1024))
        tmp.flush()
        level = {"zeros_noise_l1": 1, "mixed_l1": 1}.get(shape, 6)
        if shape == "mixed_gzip9":
            sink = ProcSink(tmp, ["gzip", "-n", "-9"])
        elif shape == "mixed_pigz":
            sink = ProcSink(tmp, ["pigz", "-n", "-6", "-p", "2"])
        else:
            sink = ZlibSink(tmp, level, total, 32 if shape == "members32" else 1)
        tar_size = write_tar(sink, shape, total, rng)
        sink.close()
        tmp.flush()
        size = tmp.tell() if shape not in ("mixed_gzip9", "mixed_pigz") else os.fstat(tmp.fileno()).st_size
    # MD5 of the stored bytes, streamed, then the real header in place.
    md5 = hashlib.md5()
    with open(tmp.name, "rb") as fh:
        fh.seek(1024)
        while True:
            b = fh.read(8 << 20)
            if not b:
                break
            md5.update(b)
    stored = size - 1024
    hdr = neff_header(b"", shape, 2, data_size=stored, hash=md5.digest() + b"0" * 16)
    with open(tmp.name, "r+b") as fh:
        fh.write(hdr)
    os.replace(tmp.name, path)
    print(f"{path}: tar {tar_size} bytes, gzip {stored} bytes "
          f"(ratio {stored / tar_size:.3f})", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--mib", type=int, default=256, help="tar size in MiB")
    ap.add_argument("--only", default="", help="comma-separated shapes (default: all)")
    ap.add_argument("--seed", default="neff-shapes")
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    shapes = [s for s in a.only.split(",") if s] or SHAPES
    for s in shapes:
        if s not in SHAPES:
            raise SystemExit(f"unknown shape {s!r}; shapes: {', '.join(SHAPES)}")
        make(a.outdir, s, a.mib, a.seed)


if __name__ == "__main__":
    main()
