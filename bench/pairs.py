#!/usr/bin/env python3
"""Two neff builds side by side on the bench corpus, in alternating pairs.

    python3 bench/pairs.py BEFORE_NEFF AFTER_NEFF [PAIRS] [CORPUS]

CORPUS is what bench/make_corpus.py writes (default /tmp/neff-bench). For
each case (`ls` and `get cc-world-size` of the 1 GiB raw NEFF, `get def` of
a small gzip NEFF, `ls` of the big gzip NEFF, `scan --jobs 2` of the
200-NEFF subset) runs both builds PAIRS times (default 15), alternating which
goes first, after one warm-up pair, and prints a Markdown row: median wall
time and median CPU time (user + sys) of each, and after ÷ before. CPU time
is the figure a loaded machine disturbs least.
"""
import glob
import os
import resource
import statistics
import subprocess
import sys
import time

before, after = sys.argv[1:3]
pairs = int(sys.argv[3]) if len(sys.argv) > 3 else 15
corpus = sys.argv[4] if len(sys.argv) > 4 else "/tmp/neff-bench"
small = sorted(glob.glob(os.path.join(corpus, "small", "**", "*.neff"), recursive=True))[0]
big1 = os.path.join(corpus, "large", "big_pkg1.neff")
big2 = os.path.join(corpus, "large", "big_pkg2.neff")
cases = {
    "`ls` 1 GiB raw (3,000 members)": ["ls", big1],
    "`get cc-world-size`, 1 GiB raw": ["get", big1, "cc-world-size"],
    "`get def`, small gzip": ["get", small, "def"],
    "`ls`, big gzip (`big_pkg2`)": ["ls", big2],
    "`scan --jobs 2`, 200-NEFF zoo": ["scan", "--jobs", "2", os.path.join(corpus, "small_subset200")],
}
print("| case | wall before | wall after | ratio | CPU before | CPU after | ratio |")
print("|---|---:|---:|---:|---:|---:|---:|")
for name, args in cases.items():
    wall = {"before": [], "after": []}
    cpu = {"before": [], "after": []}
    for i in range(pairs + 1):
        order = [("before", before), ("after", after)]
        if i % 2:
            order.reverse()
        for k, b in order:
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            subprocess.run([b, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            w = time.perf_counter() - t
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            if i:
                wall[k].append(w)
                cpu[k].append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    mw = {k: statistics.median(v) * 1e3 for k, v in wall.items()}
    mc = {k: statistics.median(v) * 1e3 for k, v in cpu.items()}
    print(
        f"| {name} | {mw['before']:.1f} ms | {mw['after']:.1f} ms | {mw['after'] / mw['before']:.2f}× "
        f"| {mc['before']:.1f} ms | {mc['after']:.1f} ms | {mc['after'] / mc['before']:.2f}× |"
    )
