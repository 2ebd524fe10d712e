#!/usr/bin/env python3
"""`neff ls` at several thread counts against the other inflaters, on the
gzip NEFFs of bench/make_shapes.py: medians of wall time, CPU time (user +
sys) and peak RSS, interleaved round-robin after one warm-up round.

    python3 bench/threads.py SHAPES_DIR NEFF [--threads 1,2,3,8,32]
        [--taskset] [--peers] [--runs 5] [--only a,b] [--rapidgzip BIN]

For each SHAPES_DIR/NAME.neff it runs:

  neff -j N ls FILE          each N of --threads (the default pool then has
                             N threads: the stream's rounds have N segments)
  --taskset: taskset -c 0 neff -j 1 / -j 8, and taskset -c 0,1 neff -j 2
             (what one and two cores give, however many threads)
  --peers:   over the payload (NAME.gz, extracted once, deleted after):
             bsdtar -tf, rapidgzip --count -P 1 and -P 2 (PyPI rapidgzip,
             --rapidgzip BIN), pigz -dc -p 1 and -p 2, libdeflate-gunzip -c
             (apt libdeflate-tools), gzip -dc

and prints one Markdown table per shape: command, median wall, median CPU,
CPU against `neff -j 1`, peak RSS. Every `neff` output is compared with the
`-j 1` one (a difference stops the run).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shapes  # noqa: E402  (bench/shapes.py: one way to time a command)


def run(cmd, stdout):
    """Wall seconds, CPU seconds (user + sys) and peak RSS in MiB."""
    wall, rss, cpu = shapes.run(cmd, stdout)
    return wall, cpu, rss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("neff")
    ap.add_argument("--threads", default="1,2,3,8,32")
    ap.add_argument("--taskset", action="store_true")
    ap.add_argument("--peers", action="store_true")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", default="")
    ap.add_argument("--rapidgzip", default=shutil.which("rapidgzip") or "rapidgzip")
    a = ap.parse_args()
    threads = [int(n) for n in a.threads.split(",")]
    names = sorted(f[:-5] for f in os.listdir(a.dir) if f.endswith(".neff"))
    if a.only:
        names = [n for n in names if n in a.only.split(",")]
    for name in names:
        neff = os.path.join(a.dir, name + ".neff")
        cmds = [(f"neff -j {n}", [a.neff, "-j", str(n), "ls", neff], True) for n in threads]
        if a.taskset:
            cmds += [
                ("taskset -c 0 neff -j 1", ["taskset", "-c", "0", a.neff, "-j", "1", "ls", neff], True),
                ("taskset -c 0 neff -j 8", ["taskset", "-c", "0", a.neff, "-j", "8", "ls", neff], True),
                ("taskset -c 0,1 neff -j 2", ["taskset", "-c", "0,1", a.neff, "-j", "2", "ls", neff], True),
            ]
        gz = None
        if a.peers:
            gz = os.path.join(a.dir, name + ".gz")
            with open(neff, "rb") as f, open(gz, "wb") as o:
                f.seek(1024)
                shutil.copyfileobj(f, o, 1 << 20)
            cmds += [("bsdtar -tf", ["bsdtar", "-tf", gz], False)]
            if shutil.which(a.rapidgzip) or os.path.exists(a.rapidgzip):
                cmds += [
                    ("rapidgzip --count -P 1", [a.rapidgzip, "--count", "-P", "1", gz], False),
                    ("rapidgzip --count -P 2", [a.rapidgzip, "--count", "-P", "2", gz], False),
                ]
            if shutil.which("pigz"):
                cmds += [
                    ("pigz -dc -p 1", ["pigz", "-dc", "-p", "1", gz], False),
                    ("pigz -dc -p 2", ["pigz", "-dc", "-p", "2", gz], False),
                ]
            if shutil.which("libdeflate-gunzip"):
                cmds += [("libdeflate-gunzip -c", ["libdeflate-gunzip", "-c", gz], False)]
            cmds += [("gzip -dc", ["gzip", "-dc", gz], False)]
        got = {label: [] for label, _, _ in cmds}
        want = subprocess.run(cmds[0][1], capture_output=True, check=True).stdout
        for r in range(a.runs + 1):
            for label, cmd, check in cmds:
                if check:
                    out = subprocess.run(cmd, capture_output=True, check=True).stdout
                    if out != want:
                        raise SystemExit(f"{label}: output differs from {cmds[0][0]} on {name}")
                with open(os.devnull, "wb") as null:
                    m = run(cmd, null)
                if r > 0:
                    got[label].append(m)
                print(f"{name} {label}: {m[0]:.3f} s {m[1]:.3f} CPU s {m[2]:.0f} MiB", file=sys.stderr)
        if gz:
            os.unlink(gz)
        base = statistics.median(c for _, c, _ in got[cmds[0][0]])
        print(f"\n{name} ({a.runs} runs, medians)\n")
        print("| command | wall | CPU | CPU ÷ `neff -j 1`'s | peak RSS |")
        print("|---|---:|---:|---:|---:|")
        for label, _, _ in cmds:
            v = got[label]
            wall = statistics.median(w for w, _, _ in v)
            cpu = statistics.median(c for _, c, _ in v)
            rss = max(m for _, _, m in v)
            print(f"| `{label}` | {wall:.3f} s | {cpu:.3f} s | {cpu / base:.2f} | {rss:.0f} MiB |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
