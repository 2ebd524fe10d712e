#!/usr/bin/env python3
"""Two neff builds side by side on one command, in alternating pairs.

    python3 bench/alternate.py BEFORE_NEFF AFTER_NEFF ZOO [PAIRS]

Runs `scan --jobs 2 ZOO` with each binary PAIRS times (default 8),
alternating which goes first, drops the first pair (warm-up), and prints
the median wall and CPU time of each and their ratio. Warm the page cache
first (e.g. `find ZOO -type f -exec cat {} + >/dev/null`). SCAN_ARGS adds
options to both scans (e.g. SCAN_ARGS="--inflate-budget 0" to stream every
payload). COMMAND replaces `scan --jobs 2` (e.g. COMMAND="cache status",
or COMMAND="cache prune" with SCAN_ARGS="--failed --corrupt"); exit 1
(some entry not ok) counts as a run.
"""
import resource
import statistics
import subprocess
import os
import sys
import time

before, after, zoo = sys.argv[1:4]
pairs = int(sys.argv[4]) if len(sys.argv) > 4 else 8
extra = os.environ.get("SCAN_ARGS", "").split()
command = os.environ.get("COMMAND", "scan --jobs 2").split()
cmds = {k: [b, *command, *extra, zoo] for k, b in (("before", before), ("after", after))}
wall = {k: [] for k in cmds}
cpu = {k: [] for k in cmds}
for i in range(pairs):
    for k in (list(cmds) if i % 2 == 0 else list(cmds)[::-1]):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        code = subprocess.run(cmds[k], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
        if code not in (0, 1):
            sys.exit(f"{cmds[k]} exited {code}")
        dt = time.perf_counter() - t
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        if i > 0:
            wall[k].append(dt)
            cpu[k].append(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)
for k in cmds:
    print(f"{k}: wall median {statistics.median(wall[k]):.3f} s "
          f"(min {min(wall[k]):.3f}, max {max(wall[k]):.3f}), "
          f"CPU median {statistics.median(cpu[k]):.2f} s, n={len(wall[k])}")
print(f"after/before: wall {statistics.median(wall['after']) / statistics.median(wall['before']):.3f}, "
      f"CPU {statistics.median(cpu['after']) / statistics.median(cpu['before']):.3f}")
