#!/usr/bin/env python3
"""Large and lying gzip NEFFs for the bounded-memory benches (PERF.md,
memory-3g-tar and hostile-files).

    python3 bench/make_large.py OUTDIR [--gib 3]

Writes, in OUTDIR (nothing here is committed; about 10 MB on disk):
  huge.neff   GNU tar of the small fixture's JSON members plus zero-filled
              weight files, >= 3 GiB of tar, `gzip -6`: a compile cache's
              large model as `neff ls` meets it;
  bomb.neff   2 MiB of gzip that inflates to 2 GiB of zeros after one tar
              header that declares 3 GiB: truncated, must be refused;
  liar.neff   a 4 MB gzip NEFF (incompressible member) whose trailer claims
              an ISIZE of 4 GiB - 1: refused or read, never committed to;
  zoo_large/  symlinks to every NEFF of ZOO (--zoo) plus two copies of huge.
Uses GNU tar and gzip; the header is fixtures/make_fixtures.py's.
"""
import argparse, os, shutil, subprocess, sys, tarfile, io, gzip, zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "fixtures"))
from make_fixtures import neff_header  # noqa: E402


def wrap(path, stored, name):
    with open(path, "wb") as fh:
        fh.write(neff_header(stored, name, 2) + stored)


def huge(out, gib):
    tree = os.path.join(out, "huge-tree")
    shutil.rmtree(tree, ignore_errors=True)
    os.makedirs(os.path.join(tree, "sg00"))
    files = {
        "info.json": b'{"neuron_cc_version":"2.15.128.0","target":"trn1"}',
        "neff.json": b'{"graphs":{"sg00":{"nodes":[]}}}',
        "kelf-0.json": b'{"kelf_version":"1.0","target":"trn1"}',
        "sg00/def.json": b'{"#rank_world_size":32,"replica_groups":[[[0,1,2,3]]],'
                         b'"var":{"in0":{"type":"input","size":4096}}}',
        "sg00/tensor_map.json": b'{"alias_map":{}}',
    }
    for n, b in files.items():
        with open(os.path.join(tree, n), "wb") as fh:
            fh.write(b)
    per = 256 << 20
    for i in range(gib * 4 + 1):  # a little over `gib` GiB of zeros
        with open(os.path.join(tree, "sg00", f"weights-{i:03}.bin"), "wb") as fh:
            fh.truncate(per)
    env = dict(os.environ, LC_ALL="C", TZ="UTC")
    tar = subprocess.Popen(["tar", "--format=gnu", "--sort=name", "--mtime=@1700000000",
                            "--owner=0", "--group=0", "--numeric-owner", "-C", tree,
                            "-cf", "-", "."], stdout=subprocess.PIPE, env=env)
    gz = subprocess.run(["gzip", "-n", "-6"], stdin=tar.stdout, stdout=subprocess.PIPE,
                        check=True).stdout
    tar.wait()
    shutil.rmtree(tree)
    wrap(os.path.join(out, "huge.neff"), gz, "huge")


def bomb(out):
    hdr = tarfile.TarInfo("sg00/weights.bin")
    hdr.size = 3 << 30
    hdr.mtime = 1700000000
    head = hdr.tobuf(format=tarfile.GNU_FORMAT)
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [c.compress(head)]
    zero = bytes(64 << 20)
    for _ in range(32):  # 2 GiB of zeros
        parts.append(c.compress(zero))
    parts.append(c.flush())
    wrap(os.path.join(out, "bomb.neff"), b"".join(parts), "bomb")


def liar(out):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as t:
        for n, b in [("info.json", b'{"target":"trn1"}'), ("sg00/w.bin", os.urandom(4 << 20))]:
            ti = tarfile.TarInfo(n)
            ti.size, ti.mtime = len(b), 1700000000
            t.addfile(ti, io.BytesIO(b))
    gz = bytearray(gzip.compress(buf.getvalue(), mtime=0))
    gz[-4:] = (0xFFFFFFFF).to_bytes(4, "little")
    wrap(os.path.join(out, "liar.neff"), bytes(gz), "liar")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--gib", type=int, default=3)
    ap.add_argument("--zoo", default="/tmp/neff-bench/small")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    huge(a.out, a.gib)
    bomb(a.out)
    liar(a.out)
    if os.path.isdir(a.zoo):
        z = os.path.join(a.out, "zoo_large")
        shutil.rmtree(z, ignore_errors=True)
        os.makedirs(z)
        for root, _, names in os.walk(a.zoo):
            for n in names:
                if n.endswith(".neff"):
                    src = os.path.join(root, n)
                    os.symlink(src, os.path.join(z, os.path.relpath(src, a.zoo).replace("/", "_")))
        for k in (1, 2):
            os.symlink(os.path.join(os.path.abspath(a.out), "huge.neff"),
                       os.path.join(z, f"zz-huge-{k}.neff"))
    for n in sorted(os.listdir(a.out)):
        p = os.path.join(a.out, n)
        if os.path.isfile(p):
            print(f"{n}: {os.path.getsize(p)} bytes")


if __name__ == "__main__":
    main()
