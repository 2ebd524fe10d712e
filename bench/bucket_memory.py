#!/usr/bin/env python3
"""Peak RSS and CPU of a bucket scan against a local scan of the same NEFFs
(issue 59, items 2 and 3; PERF.md `bucket-memory`), for one or more `neff`
binaries side by side, runs alternating.

    python3 bench/bucket_memory.py ROOT RUNS NEFF [NEFF ...]

ROOT is a directory of buckets as `bench/bucket_scale.py` makes them
(`/tmp/neff-bucket-scale/root-2100`: ROOT/zoo is the bucket `zoo`). It is
served by `scripts/servers bucket ROOT STATE --delay 30` (rclone serve s3
behind the latency pipe, 30 ms a request). Each round runs, for each binary
in turn (the order reversed every other round), `neff scan --json
--no-progress s3://zoo/` and then `neff scan --json --no-progress ROOT/zoo`
under /usr/bin/time, and prints each run's wall, CPU (user + system) and
peak RSS; at the end the medians of each, and the bucket's CPU over the
local scan's.
"""
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVERS = os.path.join(HERE, "scripts", "servers")
ENV = dict(os.environ, AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test",
           AWS_REGION="us-east-1", AWS_ALLOW_HTTP="true")


def timed(argv, env):
    p = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M", *argv], env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if p.returncode not in (0, 1):
        sys.exit("%s exited %d: %s" % (" ".join(argv), p.returncode, p.stderr[-2000:]))
    wall, user, system, rss = p.stderr.strip().splitlines()[-1].split()
    return {"wall": float(wall), "cpu": float(user) + float(system), "rss": int(rss) / 1024}


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    root, runs, bins = os.path.abspath(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    state = "/tmp/bucket-memory-" + os.path.basename(root)
    subprocess.run([sys.executable, SERVERS, "stop", state], capture_output=True)
    out = subprocess.run([sys.executable, SERVERS, "bucket", root, state, "--delay", "30"],
                         capture_output=True, text=True, check=True).stdout
    env = dict(ENV, AWS_ENDPOINT_URL=json.loads(out)["pipe"])
    res = {b: {"bucket": [], "local": []} for b in bins}
    try:
        for i in range(runs):
            for b in (bins if i % 2 == 0 else bins[::-1]):
                for kind, target in (("bucket", "s3://zoo/"), ("local", os.path.join(root, "zoo"))):
                    r = timed([b, "scan", "--json", "--no-progress", target], env)
                    res[b][kind].append(r)
                    print(kind, b, "wall %.2f s, CPU %.2f s, peak RSS %.1f MiB" % (r["wall"], r["cpu"], r["rss"]),
                          flush=True)
    finally:
        subprocess.run([sys.executable, SERVERS, "stop", state], capture_output=True)
    for b in bins:
        med = {k: {x: statistics.median(r[x] for r in res[b][k]) for x in ("wall", "cpu", "rss")} for k in res[b]}
        for k in ("bucket", "local"):
            print("%s %s: median wall %.2f s, CPU %.2f s, peak RSS %.1f MiB (%d runs)"
                  % (b, k, med[k]["wall"], med[k]["cpu"], med[k]["rss"], len(res[b][k])))
        print("%s: bucket CPU / local CPU %.2f" % (b, med["bucket"]["cpu"] / med["local"]["cpu"]))


if __name__ == "__main__":
    main()
