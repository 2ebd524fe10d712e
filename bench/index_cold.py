#!/usr/bin/env python3
"""A cold `scan --index` against a plain `scan` of the same tree, in
alternating pairs (issue 59, item 4; PERF.md `zoo-index-cold`).

    python3 bench/index_cold.py NEFF ROOT [PAIRS]

Runs `NEFF scan --json --no-progress ROOT` and `NEFF scan --json
--no-progress --index DB ROOT` (DB, in a temporary directory, removed
before each run: every run is cold) PAIRS times each (default 9),
alternating which goes first; drops the first pair; prints the median wall
and CPU (user + system) of each and their ratio. Warm the page cache first
(`find ROOT -type f -exec cat {} + >/dev/null`).
"""
import glob
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    neff, root = sys.argv[1], sys.argv[2]
    pairs = int(sys.argv[3]) if len(sys.argv) > 3 else 9
    work = tempfile.mkdtemp(prefix="index-cold-")
    db = os.path.join(work, "cold.db")
    cmds = {"plain": [neff, "scan", "--json", "--no-progress", root],
            "index": [neff, "scan", "--json", "--no-progress", "--index", db, root]}
    res = {k: ([], []) for k in cmds}
    for i in range(pairs):
        for k in (list(cmds) if i % 2 == 0 else list(cmds)[::-1]):
            for f in glob.glob(db + "*"):
                os.remove(f)
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            code = subprocess.run(cmds[k], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
            if code not in (0, 1):
                sys.exit("%s exited %d" % (" ".join(cmds[k]), code))
            wall = time.perf_counter() - t
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            if i > 0:
                res[k][0].append(wall)
                res[k][1].append(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)
    for f in glob.glob(db + "*"):
        os.remove(f)
    os.rmdir(work)
    med = {k: (statistics.median(w), statistics.median(c)) for k, (w, c) in res.items()}
    for k, (w, c) in med.items():
        print("%s: wall %.3f s, CPU %.3f s (median of %d)" % (k, w, c, len(res[k][0])))
    print("index / plain: wall %.3f, CPU %.3f" % (med["index"][0] / med["plain"][0], med["index"][1] / med["plain"][1]))


if __name__ == "__main__":
    main()
