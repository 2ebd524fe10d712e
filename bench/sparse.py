#!/usr/bin/env python3
"""A 1 GiB GNU sparse member with 90% holes, and a dense one of the same
size, for `neff ls` side by side (PERF.md, ls-sparse-1g).

    python3 bench/sparse.py OUTDIR [--gib 1]
    hyperfine -N -w 3 -r 30 \\
        'target/release/neff ls OUTDIR/sparse-gnu.neff' \\
        'target/release/neff ls OUTDIR/sparse-pax1.neff' \\
        'target/release/neff ls OUTDIR/dense.neff'

Writes, in OUTDIR (nothing here is committed; about 1.3 GiB on disk for
--gib 1, delete it after): a file of GIB GiB holding 1 MiB of
pseudo-random data every 10 MiB (the rest holes), archived by GNU tar
with `--sparse` as old GNU (`sparse-gnu.neff`) and PAX 1.0
(`sparse-pax1.neff`); and the same size of dense data archived plainly
(`dense.neff`). All raw payloads (package version 1), so `ls` is the
header walk by `pread`. The header is fixtures/make_fixtures.py's.
"""
import argparse
import os
import random
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "fixtures"))
from make_fixtures import neff_header  # noqa: E402

MIB = 1 << 20


def wrap_file(tar, out, name):
    """Writes OUT: a NEFF header for the raw tar TAR, then TAR (streamed)."""
    size = os.path.getsize(tar)
    # The header's hash covers the stored bytes: hash them streaming.
    import hashlib

    h = hashlib.sha256()
    with open(tar, "rb") as fh:
        while chunk := fh.read(8 * MIB):
            h.update(chunk)
    head = bytearray(neff_header(b"", name, 1))
    head[16:24] = size.to_bytes(8, "little")  # data_size
    head[0xAC:0xCC] = h.digest()
    with open(out, "wb") as o, open(tar, "rb") as fh:
        o.write(head)
        while chunk := fh.read(8 * MIB):
            o.write(chunk)
    os.remove(tar)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--gib", type=int, default=1)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    src = os.path.join(a.out, "src")
    os.makedirs(src, exist_ok=True)
    size = a.gib << 30
    rnd = random.Random(1)
    member = os.path.join(src, "weights.bin")
    with open(member, "wb") as f:
        f.truncate(size)
        for at in range(0, size, 10 * MIB):
            f.seek(at)
            f.write(rnd.randbytes(MIB))
    for name, fmt in [("sparse-gnu", ["--format=gnu"]),
                      ("sparse-pax1", ["--format=posix", "--sparse-version=1.0"])]:
        tar = os.path.join(a.out, name + ".tar")
        subprocess.run(["tar", "--sparse", *fmt, "-cf", tar, "-C", src, "weights.bin"],
                       check=True)
        wrap_file(tar, os.path.join(a.out, name + ".neff"), name)
    # The dense twin: the same real size, every byte stored.
    with open(member, "r+b") as f:
        for at in range(0, size, 10 * MIB):
            n = min(9 * MIB, size - at - MIB)
            if n > 0:
                f.seek(at + MIB)
                f.write(rnd.randbytes(n))
    tar = os.path.join(a.out, "dense.tar")
    subprocess.run(["tar", "--format=gnu", "-cf", tar, "-C", src, "weights.bin"], check=True)
    os.remove(member)
    wrap_file(tar, os.path.join(a.out, "dense.neff"), "dense")
    for n in ["sparse-gnu", "sparse-pax1", "dense"]:
        p = os.path.join(a.out, n + ".neff")
        print(f"{p}: {os.path.getsize(p) / MIB:.1f} MiB")


if __name__ == "__main__":
    main()
