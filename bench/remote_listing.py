#!/usr/bin/env python3
"""A bucket prefix of many keys scanned while it is listed (issue 34):
`neff scan s3://zoo/PREFIX` of several builds side by side, through the fault
proxy's `delayMS` mode, rounds interleaved, medians of the whole scan's wall
time and of the time to its first record, with the list requests (and all
requests) the proxy logged for the last round (PERF.md, bucket-listing and
bucket-index).

    python3 scripts/servers start STATE SEED     # SEED: e.g. the bench's compile cache
    python3 bench/remote_listing.py [--index] STATE PREFIX RUNS DELAY BIN [BIN...]

STATE is the servers' state directory (its `proxy` URL and log are read
from the JSON line `scripts/servers start` printed, saved as STATE.json),
PREFIX the key prefix to scan (`` for the whole bucket). With `--index`
each scan is `scan --index DB` into a new, empty catalogue (a cold indexed
scan: every object read and written), and each round ends with a warm
rescan into the same catalogue (every object answered from its row),
timed too.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def scan(bin_, endpoint, url, db=None):
    env = dict(os.environ, AWS_ENDPOINT_URL=endpoint, AWS_ACCESS_KEY_ID="test",
               AWS_SECRET_ACCESS_KEY="test", AWS_REGION="us-east-1", AWS_ALLOW_HTTP="true")
    index = ["--index", db] if db else []
    t0 = time.monotonic()
    p = subprocess.Popen([bin_, "scan", "--json", "--no-progress", *index, url], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    first = None
    n = 0
    for line in p.stdout:
        if first is None:
            first = time.monotonic() - t0
        n += 1
    p.wait()
    return time.monotonic() - t0, first, n


def main():
    args = sys.argv[1:]
    indexed = bool(args) and args[0] == "--index"
    if indexed:
        args = args[1:]
    if len(args) < 5:
        sys.exit(__doc__)
    state, prefix, runs, delay, bins = args[0], args[1], int(args[2]), int(args[3]), args[4:]
    info = json.load(open(state.rstrip("/") + ".json"))
    endpoint = f"{info['proxy']}/s3/delay{delay}"
    url = f"s3://{info['bucket']}/{prefix}"
    log = info["proxy_log"]
    res = {b: ([], []) for b in bins}
    warm = {b: [] for b in bins}
    counts = {}
    tmp = tempfile.mkdtemp(prefix="remote_listing.")
    for i in range(runs):
        for b in bins:
            db = os.path.join(tmp, f"{i}-{bins.index(b)}.db") if indexed else None
            start = os.path.getsize(log)
            wall, first, n = scan(b, endpoint, url, db)
            res[b][0].append(wall)
            res[b][1].append(first)
            time.sleep(0.5)  # the proxy's last lines
            with open(log) as f:
                f.seek(start)
                lines = [l for l in f if f"/s3/delay{delay}/" in l]
            lists = sum(1 for l in lines if "list-type" in l)
            counts[b] = (n, lists, len(lines))
            if indexed:
                warm[b].append(scan(b, endpoint, url, db)[0])
    for b in bins:
        w, f = res[b]
        n, lists, reqs = counts[b]
        print(f"{delay} ms | {b} | scan {statistics.median(w):.2f} s | first record "
              f"{statistics.median(f):.2f} s | {n} records | {lists} list requests, {reqs} in all | "
              f"runs {' '.join('%.2f' % x for x in w)}", flush=True)
        if indexed:
            print(f"{delay} ms | {b} | warm indexed rescan {statistics.median(warm[b]):.2f} s | "
                  f"runs {' '.join('%.2f' % x for x in warm[b])}", flush=True)
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
