#!/usr/bin/env python3
"""Large and hostile inputs (huge, bomb, liar NEFFs, a zoo of large ones):
time and peak RSS, side by side.

    python3 bench/large_inputs.py [--before BIN] [--runs N] [--large DIR] [--corpus DIR]

Each case runs its commands interleaved (A B C, A B C, ...) N times and
prints the median wall time and the median peak RSS of each (ru_maxrss of
the child, from wait4), with each command's ratio to the first. Inputs:
bench/make_large.py's DIR (default /tmp/neff-large: huge.neff, bomb.neff,
liar.neff, zoo_large/) and the bench corpus of bench/make_corpus.py (default
/tmp/neff-bench).
BIN is an older neff build to compare with (optional).
"""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
NEFF = os.path.join(HERE, "..", "target", "release", "neff")
REF = os.path.join(HERE, "..", "tests", "helpers", "neffinfo_ref.py")


def run(cmd, shell=False):
    t = time.perf_counter()
    p = subprocess.Popen(cmd, shell=shell, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    return wall, ru.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def case(title, cmds, runs):
    res = {name: [] for name, _ in cmds}
    for _ in range(runs):
        for name, cmd in cmds:
            res[name].append(run(cmd, shell=isinstance(cmd, str)))
    print(f"\n**{title}** ({runs} runs each, interleaved)\n")
    print("| command | median s | ratio to first | median peak RSS MiB | exit codes |")
    print("|---|---:|---:|---:|---|")
    base = None
    for name, _ in cmds:
        r = res[name]
        med = statistics.median(w for w, _, _ in r)
        rss = statistics.median(m for _, m, _ in r)
        codes = sorted({c for _, _, c in r})
        base = base or med
        print(f"| {name} | {med:.3f} | {med / base:.2f} | {rss:.0f} | {codes} |")
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--large", default="/tmp/neff-large")
    ap.add_argument("--corpus", default="/tmp/neff-bench")
    a = ap.parse_args()
    L, C, n = a.large, a.corpus, a.runs
    huge, bomb, liar = (os.path.join(L, f) for f in ("huge.neff", "bomb.neff", "liar.neff"))
    big2 = os.path.join(C, "large", "big_pkg2.neff")
    builds = [("neff", NEFF)] + ([("before", a.before)] if a.before else [])
    tmp = tempfile.mkdtemp()
    bsd = lambda f: f"tail -c +1025 {f} | bsdtar -tf - >/dev/null"

    print(f"huge.neff: {os.path.getsize(huge)} bytes of gzip")
    cmds = []
    for b, exe in builds:
        cmds.append((f"{b} ls huge", [exe, "ls", huge]))
    cmds.append(("bsdtar -tf huge", bsd(huge)))
    case("ls of a gzip NEFF holding 3.25 GiB of tar", cmds, n)
    for acc in ("def", "cc-world-size"):
        case(f"get {acc} on the 3.25 GiB NEFF",
             [(f"{b} get huge {acc}", [exe, "get", huge, acc]) for b, exe in builds], n)
    case("scan of the 3.25 GiB NEFF", [(f"{b} scan huge", [exe, "scan", "--json", "--no-progress", huge])
                                       for b, exe in builds], n)
    out = os.path.join(tmp, "u")
    case("unpack / cat of the 3.25 GiB NEFF",
         [("neff unpack huge", f"rm -rf {out}; {NEFF} unpack {huge} -o {out}"),
          ("neff cat huge weights-012", [NEFF, "cat", huge, r"weights-012\.bin"])], max(2, n // 2))
    shutil.rmtree(out, ignore_errors=True)

    for f, what in ((bomb, "2 MiB gzip bomb (2 GiB of zeros, tar truncated)"),
                    (liar, "4 MB gzip NEFF whose trailer claims 4 GiB")):
        cmds = [(f"neff {c}", [NEFF] + c.split() + [f] + (["def"] if c == "get" else []))
                for c in ("ls", "info", "get", "verify", "scan")]
        cmds.append(("neff cat", [NEFF, "cat", f, "."]))
        cmds.append(("neff unpack", f"rm -rf {out}; {NEFF} unpack {f} -o {out}"))
        if a.before:
            cmds.append(("before ls", [a.before, "ls", f]))
        case(what, cmds, n)

    cmds = []
    for b, exe in builds:
        cmds.append((f"{b} ls big_pkg2", [exe, "ls", big2]))
    cmds.append(("bsdtar -tf big_pkg2", bsd(big2)))
    cmds.append(("reference neffinfo_ref big_pkg2 arch", ["python3", REF, big2, "arch"]))
    case("big_pkg2.neff (256 MiB of tar), interleaved with bsdtar and the reference", cmds, n)

    zl = os.path.join(L, "zoo_large")
    zoo = os.path.join(C, "small")
    cmds = []
    for b, exe in builds:
        cmds.append((f"{b} scan --jobs 2 zoo+2 huge", [exe, "scan", "--json", "--no-progress",
                                                      "--jobs", "2", zl]))
    case("scan --jobs 2: the bench zoo plus two 3.25 GiB NEFFs", cmds, max(2, n // 2))
    cmds = []
    for b, exe in builds:
        cmds.append((f"{b} scan --jobs 2 zoo", [exe, "scan", "--json", "--no-progress",
                                                "--jobs", "2", zoo]))
    case("scan --jobs 2: the plain bench zoo (2,000 NEFFs)", cmds, n)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
