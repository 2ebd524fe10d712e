#!/usr/bin/env python3
"""A bucket at a distance (issue 34): `neff scan s3://…` against
download-then-scan of the same NEFFs, with every request delayed by the fault
proxy's `delayMS` mode (0, 20 and 50 ms by default), for a gzip zoo and the
same NEFFs repacked raw (`neff optimize --keep-debug`). Requests and bytes
come from the proxy's log.

    python3 bench/remote_latency.py [--bin target/release/neff [--bin OTHER]]
        [--zoo /tmp/neff-bench/small_subset200] [--count 200]
        [--delays 0,20,50] [--runs 3] [--big /tmp/neff-bench/large/big_pkg1.neff] [--link MBPS]

With --big (a large raw NEFF), `neff ls` of it over HTTP (nginx behind the
proxy) is timed against downloading the whole object with 8 ranged
requests of 8 MiB in flight. The "ideal" row of each zoo is the larger of
the fastest download alone and the scan of the copy alone: transfer and
parse fully overlapped. With --link, every body crosses one link of that
many MB/s (the proxy's `bwN` mode: a laptop's connection to its bucket).

The download is done with boto3 and 10 requests in flight (what `aws s3 cp
--recursive` does by default) and, when `s5cmd` is on the PATH, with s5cmd;
each then scans the copy with `neff scan`. Medians of --runs runs. With
several --bin, each one's bucket scan is measured in the same run (the first
does the scans of the copies). The
servers (moto_server, nginx, the proxy) come from scripts/servers.
"""

import argparse
import concurrent.futures
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def sh(argv, env=None, check=True):
    p = subprocess.run(argv, env=env, capture_output=True)
    if check and p.returncode != 0:
        sys.exit("%s failed: %s" % (argv[:3], p.stderr.decode(errors="replace")[-2000:]))
    return p


def log_lines(log):
    with open(log) as f:
        return f.readlines()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", action="append")
    ap.add_argument("--zoo", default="/tmp/neff-bench/small")
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--delays", default="0,20,50")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--big")
    ap.add_argument("--link", type=int, default=0,
                    help="MB/s of the link in all (the proxy's bwN mode; 0: as fast as loopback)")
    a = ap.parse_args()
    bins = [os.path.abspath(b) for b in (a.bin or [os.path.join(ROOT, "target", "release", "neff")])]
    neff = bins[0]
    files = []
    for d, _, names in sorted(os.walk(a.zoo)):
        files += [os.path.join(d, n) for n in sorted(names) if n.endswith(".neff")]
    files = files[: a.count]
    tmp = tempfile.mkdtemp(prefix="neff-latency-")
    seed = os.path.join(tmp, "seed")
    for i, f in enumerate(files):
        for kind in ("gz", "raw"):
            os.makedirs(os.path.join(seed, kind), exist_ok=True)
        shutil.copy(f, os.path.join(seed, "gz", "%04d.neff" % i))
        sh([neff, "optimize", "--keep-debug", f, "-o", os.path.join(seed, "raw", "%04d.neff" % i)])
    if a.big:
        os.makedirs(os.path.join(seed, "big"), exist_ok=True)
        os.link(a.big, os.path.join(seed, "big", "big.neff"))
    sizes = {k: sum(os.path.getsize(os.path.join(seed, k, n)) for n in os.listdir(os.path.join(seed, k)))
             for k in ("gz", "raw")}
    if a.big:
        sizes["big"] = os.path.getsize(a.big)
    state = os.path.join(tmp, "state")
    info = json.loads(sh([sys.executable, os.path.join(ROOT, "scripts", "servers"), "start", state, seed]).stdout)
    try:
        run(a, bins, info, tmp, sizes)
    finally:
        sh([sys.executable, os.path.join(ROOT, "scripts", "servers"), "stop", state], check=False)
        shutil.rmtree(tmp, ignore_errors=True)


def run(a, bins, info, tmp, sizes):
    neff = bins[0]
    import boto3  # moto's dependency: scripts/servers setup installs it

    log = info["proxy_log"]
    base_env = dict(os.environ, AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test",
                    AWS_REGION="us-east-1", AWS_ALLOW_HTTP="true")
    if a.link:
        print("A link of %d MB/s in all (the proxy's bw%d mode)." % (a.link, a.link))
        print()
    print("| delay | zoo | way | median s | requests | MiB moved |")
    print("|---:|---|---|---:|---:|---:|")
    for delay in [int(x) for x in a.delays.split(",")]:
        mode = "delay%d" % delay if delay else "ok"
        if a.link:
            mode += "+bw%d" % a.link
        endpoint = "%s/s3/%s" % (info["proxy"], mode)
        env = dict(base_env, AWS_ENDPOINT_URL=endpoint)
        s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test",
                          aws_secret_access_key="test", region_name="us-east-1")
        for kind in ("gz", "raw"):
            def bucket_scan(b):
                return lambda: sh([b, "scan", "--no-progress", "--json", "s3://zoo/%s/" % kind], env=env)

            def download_then_scan():
                dest = tempfile.mkdtemp(dir=tmp)
                keys = [o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(
                    Bucket="zoo", Prefix=kind + "/") for o in page.get("Contents", [])]
                with concurrent.futures.ThreadPoolExecutor(10) as ex:
                    list(ex.map(lambda k: s3.download_file("zoo", k, os.path.join(dest, os.path.basename(k))), keys))
                sh([neff, "scan", "--no-progress", "--json", dest])
                shutil.rmtree(dest)

            ways = [("neff scan s3://" + ("" if len(bins) == 1 else " (%s)" % os.path.relpath(b)), bucket_scan(b))
                    for b in bins]
            ways.append(("download (10 in flight), then scan", download_then_scan))
            parts = {"download": [], "scan": []}
            if shutil.which("s5cmd"):
                def s5():
                    dest = tempfile.mkdtemp(dir=tmp)
                    t0 = time.monotonic()
                    sh(["s5cmd", "--endpoint-url", endpoint, "cp", "s3://zoo/%s/*" % kind, dest + "/"], env=env)
                    t1 = time.monotonic()
                    sh([neff, "scan", "--no-progress", "--json", dest])
                    parts["download"].append(t1 - t0)
                    parts["scan"].append(time.monotonic() - t1)
                    shutil.rmtree(dest)
                ways.append(("s5cmd, then scan", s5))
            for name, fn in ways:
                measure(a.runs, log, fn, "%d ms | %s (%.0f MiB) | %s" % (
                    delay, kind, sizes[kind] / 2**20, name))
            if parts["download"]:
                d, sc = statistics.median(parts["download"]), statistics.median(parts["scan"])
                print("| %d ms | %s (%.0f MiB) | ideal: max(s5cmd's download %.2f, the copy's scan %.2f) | %.2f | | |" % (
                    delay, kind, sizes[kind] / 2**20, d, sc, max(d, sc)), flush=True)
        if a.big:
            big(a, bins, info, log, delay, sizes["big"])


def download_whole(url, inflight=8, part=8 << 20):
    """The whole object at `url`, read with `inflight` ranged GETs of `part`
    bytes at a time (what `aws s3 cp` does for one large object), dropped."""
    import http.client
    import threading
    import urllib.parse
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port)
    c.request("GET", u.path, headers={"Range": "bytes=0-0"})
    r = c.getresponse()
    r.read()
    size = int(r.getheader("Content-Range").rsplit("/", 1)[1])
    todo = list(range(0, size, part))
    lock = threading.Lock()

    def worker():
        c = http.client.HTTPConnection(u.hostname, u.port)
        while True:
            with lock:
                if not todo:
                    return
                at = todo.pop(0)
            c.request("GET", u.path, headers={"Range": "bytes=%d-%d" % (at, min(size, at + part) - 1)})
            r = c.getresponse()
            while r.read(1 << 20):
                pass

    ts = [threading.Thread(target=worker) for _ in range(inflight)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def big(a, bins, info, log, delay, size):
    mode = "delay%d" % delay if delay else "ok"
    if a.link:
        mode += "+bw%d" % a.link
    url = "%s/http/%s/big/big.neff" % (info["proxy"], mode)
    # The last binary only: before issue 34 this took a round trip per
    # member (63 s at 20 ms).
    ways = [("neff ls", lambda: sh([bins[-1], "ls", url]))]
    ways.append(("whole object, 8 ranged GETs of 8 MiB in flight", lambda: download_whole(url)))
    for name, fn in ways:
        measure(a.runs, log, fn, "%d ms | big raw (%.0f MiB) | %s" % (delay, size / 2**20, name))


def measure(runs, log, fn, row):
    """Runs `fn` `runs` times; prints the table row `row` with the median
    time, and the requests and bytes the proxy's log says it sent."""
    times, reqs, moved = [], [], []
    for _ in range(runs):
        before = len(log_lines(log))
        t0 = time.monotonic()
        fn()
        times.append(time.monotonic() - t0)
        lines = log_lines(log)[before:]
        reqs.append(len(lines))
        # The last field of each complete line is the bytes sent (a line
        # still being written has none yet).
        last = [l.rsplit(" ", 1)[-1].strip() for l in lines]
        moved.append(sum(int(x) for x in last if x.isdigit()))
    print("| %s | %.2f | %d | %.1f |" % (row, statistics.median(times), statistics.median(reqs),
                                        statistics.median(moved) / 2**20), flush=True)


if __name__ == "__main__":
    main()
