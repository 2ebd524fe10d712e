#!/usr/bin/env python3
"""Times `neff ls` on the payload shapes of bench/make_shapes.py, interleaved
with bsdtar, neff on one core and the other inflaters; medians and peak RSS.

    python3 bench/shapes.py SHAPES_DIR NEFF [NEFF2] [--runs 5] [--only a,b]
                            [--inflaters] [--rgcore BIN] [--cmd ls|get|scan]

For each SHAPES_DIR/NAME.neff it extracts the gzip payload once
(NAME.gz, `tail -c +1025`, deleted afterwards), then runs, round-robin
(command 1, 2, 3, ..., then again) --runs times after one warm-up round:

  neff ls FILE              NEFF (and NEFF2, e.g. the build before a change)
  taskset -c 0 neff ls FILE NEFF pinned to one core
  bsdtar -tf NAME.gz        libarchive listing the same tar
  with --inflaters: rapidgzip -d -P 2, libdeflate-gzip -d, gzip -d (each
  `-c NAME.gz > /dev/null`); "ideal 2-core" is libdeflate's median / 2.
  with --rgcore BIN: BIN (bench/inflaters' neff-inflaters) in mode
  `rapidgzip`, the rapidgzip-core crate on 2 threads over FILE's payload
  (it reads the file into memory first).

--cmd get times `neff get FILE def` (the 200-byte sg00/def.json near the
payload's start; neff still inflates and checks the whole payload, as
every read does) against `bsdtar -xOf NAME.gz sg00/def.json` (which reads
to the archive's end too); --cmd scan times
`neff scan DIR` over a directory holding only FILE (a symlink), against
`bsdtar -tf`. Prints one Markdown row per shape: each
command's median wall time, the ratios bsdtar/neff and one-core/neff,
and neff's peak RSS (the largest of its runs, from wait4); the progress
lines on stderr add each command's median CPU time (user + sys), the
steadier figure on a loaded machine.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def run(cmd, stdout):
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    if status != 0:
        raise SystemExit(f"failed ({status}): {' '.join(cmd)}")
    return wall, ru.ru_maxrss / 1024, ru.ru_utime + ru.ru_stime  # s, MiB, CPU s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("neff", nargs="+")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", default="")
    ap.add_argument("--inflaters", action="store_true")
    ap.add_argument("--rgcore", default="")
    ap.add_argument("--cmd", default="ls", choices=["ls", "get", "scan"])
    a = ap.parse_args()
    names = [s for s in a.only.split(",") if s] or sorted(
        f[:-5] for f in os.listdir(a.dir) if f.endswith(".neff"))
    rows = []
    for name in names:
        neff_file = os.path.join(a.dir, name + ".neff")
        gz = os.path.join(a.dir, name + ".gz")
        with open(gz, "wb") as out:
            subprocess.run(["tail", "-c", "+1025", neff_file], stdout=out, check=True)
        scan_dir = tempfile.mkdtemp(prefix="neff-shape-")
        os.symlink(os.path.abspath(neff_file), os.path.join(scan_dir, name + ".neff"))
        target = scan_dir if a.cmd == "scan" else neff_file
        args = [a.cmd, target] + (["def"] if a.cmd == "get" else [])
        cmds = {}
        for i, n in enumerate(a.neff):
            label = "neff" if i == 0 else f"neff#{i + 1}"
            cmds[label] = ([n] + args, None)
        cmds["1 core"] = (["taskset", "-c", "0", a.neff[0]] + args, None)
        if a.cmd == "get":
            cmds["bsdtar"] = (["bsdtar", "-xOf", gz, "sg00/def.json"], None)
        else:
            cmds["bsdtar"] = (["bsdtar", "-tf", gz], None)
        if a.inflaters:
            cmds["rapidgzip -P 2"] = (["rapidgzip", "-d", "-P", "2", "-c", gz], "null")
            cmds["libdeflate"] = (["libdeflate-gzip", "-d", "-c", gz], "null")
            cmds["gzip"] = (["gzip", "-d", "-c", gz], "null")
        if a.rgcore:
            cmds["rapidgzip-core"] = ([a.rgcore, "rapidgzip", neff_file], "null")
        wall = {k: [] for k in cmds}
        rss = {k: [] for k in cmds}
        cpu = {k: [] for k in cmds}
        with open(os.devnull, "wb") as null:
            for r in range(a.runs + 1):
                order = list(cmds) if r % 2 == 0 else list(cmds)[::-1]
                for k in order:
                    w, m, c = run(cmds[k][0], null)
                    if r > 0:
                        wall[k].append(w)
                        rss[k].append(m)
                        cpu[k].append(c)
        os.remove(gz)
        shutil.rmtree(scan_dir)
        med = {k: statistics.median(v) for k, v in wall.items()}
        rows.append((name, med, {k: max(v) for k, v in rss.items()}))
        cells = " | ".join(f"{k} {med[k]:.3f}s (CPU {statistics.median(cpu[k]):.3f}s)"
                           for k in cmds)
        print(f"{name}: {cells} | bsdtar/neff {med['bsdtar'] / med['neff']:.2f} | "
              f"1core/neff {med['1 core'] / med['neff']:.2f} | rss {max(rss['neff']):.0f} MiB",
              file=sys.stderr, flush=True)
    keys = list(rows[0][1])
    print("| shape | " + " | ".join(keys) + " | bsdtar ÷ neff | 1 core ÷ neff | neff peak RSS |")
    print("|---" * (len(keys) + 4) + "|")
    for name, med, rss in sorted(rows, key=lambda r: r[1]["bsdtar"] / r[1]["neff"]):
        extra = ""
        if "libdeflate" in med:
            extra = f" (ideal 2-core {med['libdeflate'] / 2:.3f} s)"
        print(f"| {name}{extra} | " + " | ".join(f"{med[k]:.3f} s" for k in keys)
              + f" | {med['bsdtar'] / med['neff']:.2f}× | {med['1 core'] / med['neff']:.2f}× "
              f"| {rss['neff']:.0f} MiB |")


if __name__ == "__main__":
    main()
