#!/usr/bin/env python3
"""The zoo-scale curve (issue 51), in one command: scan, index, rescan, cache status and the
control plane's queries at N = 1k / 10k / 100k compile-cache entries, side by side.

    cargo build --release --features fuzzing --bin neff
    python3 bench/zoo_scale.py [--sizes 1000,10000] [--runs 3] [--work /tmp/neff-zoo-scale]
                               [--rows 100000,1000000] [--budget-bytes B] [--cold]
                               [--neff target/release/neff] [--json OUT.json]
                               [--layout compiler|small|flat]

For each N it makes the cache with bench/make_zoo.py (kept under --work and reused by the
next run with the same N, budget and layout: --layout small is the compiler's layout of
small distinct NEFFs, 3-8 kB, three compiler versions; flat is those NEFFs without cache
entries), then measures, medians of --runs runs, each command
alone on the machine:

  scan          `neff scan --json --no-progress ROOT > pipe`: wall, CPU (user + sys) per
                NEFF, peak RSS (the child's ru_maxrss, from wait4), time to the first
                record on stdout; the same for `--sorted` (peak RSS)
  index cold    `neff scan --json --no-progress --index DB ROOT` on no DB: wall and CPU per
                NEFF, the catalogue's size (DB + WAL)
  rescan warm   the same again on the DB it made, beside the walk-and-stat floor
                `find -L ROOT -printf '%s %T@ %p\\n' > /dev/null`
  cache status  `neff cache status ROOT > /dev/null` (the whole cache)

with the page cache warm (every distinct file read once first); with --cold, also once after
`echo 3 > /proc/sys/vm/drop_caches` for scan, rescan and the floor (said in the output if the
drop failed: then no cold figures).

Then the queries of docs/GUIDE.md's catalogue section on catalogues of --rows rows: built
as `neff index schema | sqlite3 big.db`, then `neff index merge-sql shard.db | sqlite3
big.db` per shard, each shard the largest N's catalogue with its keys, paths, uuids,
hashes and cache keys suffixed or prefixed by the shard's number (so rows stay distinct) and
its members/tensors/aliases rows left out (no query reads them; 1M rows of them would be
~20 GB). Each query runs --runs + 1 times in one `sqlite3` session with `.timer on` (the
first run is reported apart, the median of the rest is the figure; sqlite3 prints
milliseconds), and the same through Python's sqlite3 (same libsqlite3) for microseconds; its
EXPLAIN QUERY PLAN is checked for a full scan of neffs. Where the Python running this has
`duckdb` (and its sqlite extension: scripts/python-setup's venv), the same queries from
DuckDB attaching the catalogue are timed beside them.

Prints one table per measure (markdown) and writes every figure to --json.

With --check (what CI runs, at N = 1k: `--sizes 1000 --runs 1 --rows '' --check`), the
answers are checked as well as timed: one record per compile-cache entry (every NEFF and
every entry holding none), `--sorted` the same records in path order, a cold `--index` scan
the plain scan's records, and a warm rescan the same again, every one from the catalogue.
"""

import argparse
import json
import os
import re
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

QUERIES = [
    ("by path", "SELECT record FROM neffs WHERE path = :path;"),
    ("by uuid", "SELECT path FROM neffs WHERE uuid = :uuid ORDER BY path;"),
    ("by hash", "SELECT path FROM neffs WHERE hash = :hash ORDER BY path;"),
    (
        "count for a target",
        "SELECT count(*) FROM neffs\n"
        "  WHERE arch = :arch AND cc_world_size = :world AND num_cores = :cores AND ok = 1;",
    ),
    (
        "which fit a target",
        "SELECT path FROM neffs\n"
        "  WHERE arch = :arch AND cc_world_size = :world AND num_cores = :cores AND ok = 1\n"
        "  ORDER BY path;",
    ),
    (
        "failed per version",
        "SELECT compiler, count(*) AS failed FROM neffs\n"
        "  WHERE cache_state = 'failed' GROUP BY compiler ORDER BY compiler;",
    ),
    (
        "newest for a key",
        "SELECT path, compiler, cache_state FROM neffs\n"
        "  WHERE cache_key = :key ORDER BY mtime_ns DESC LIMIT 1;",
    ),
]


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def run(cmd, stdout=subprocess.DEVNULL, first_line=False):
    """Runs cmd; returns wall s, CPU s, peak RSS bytes, time to first stdout byte (s)."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE if first_line else stdout)
    first = None
    if first_line:
        fd = p.stdout.fileno()
        while True:
            b = os.read(fd, 1 << 20)
            if first is None and b:
                first = time.monotonic() - t0
            if not b:
                break
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    code = os.waitstatus_to_exitcode(status)
    p.returncode = code
    if code not in (0, 1):  # cache status exits 1 when some entry is not ok
        raise SystemExit("%s: exit %d" % (" ".join(cmd), code))
    return {
        "wall": wall,
        "cpu": ru.ru_utime + ru.ru_stime,
        "rss": ru.ru_maxrss * 1024,
        "first": first,
    }


def median_of(samples, key):
    return statistics.median(s[key] for s in samples)


def drop_caches():
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError as e:
        log("zoo_scale: cannot drop the page cache (%s): no cold figures" % e)
        return False


def warm_page_cache(root):
    """Reads every file under root once (hard links once: they share their pages), so
    that the measured runs find the page cache warm without a scan to warm it."""
    seen = set()
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            st = os.stat(p)
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            with open(p, "rb", buffering=0) as f:
                while f.read(1 << 20):
                    pass


def db_size(db):
    return sum(os.path.getsize(db + s) for s in ("", "-wal") if os.path.exists(db + s))


def zoo_name(args, n):
    """The zoo of N entries' name under --work (its catalogue adds `.db`)."""
    return "zoo-%d" % n if args.layout == "compiler" else "zoo-%s-%d" % (args.layout, n)


def make(args, n):
    root = os.path.join(args.work, zoo_name(args, n))
    manifest = root + ".manifest.json"
    if os.path.exists(manifest):
        m = json.load(open(manifest))
        if m.get("budget_bytes") == args.budget_bytes:
            log("zoo_scale: reusing %s" % root)
            return root, m
        shutil.rmtree(root)
    elif os.path.exists(root):
        shutil.rmtree(root)
    subprocess.run(
        [
            sys.executable,
            os.path.join(HERE, "make_zoo.py"),
            root,
            "--entries",
            str(n),
            "--budget-bytes",
            str(args.budget_bytes),
            "--templates",
            args.work,
            "--layout",
            args.layout,
        ],
        check=True,
    )
    return root, json.load(open(manifest))


def measure_size(args, n):
    root, manifest = make(args, n)
    neff = args.neff
    neffs = manifest["neffs"]
    entries = manifest["entries"]
    db = os.path.join(args.work, zoo_name(args, n) + ".db")
    scan = [neff, "scan", "--json", "--no-progress", root]
    out = {"n": n, "manifest": manifest}
    warm_page_cache(root)
    s = [run(scan, first_line=True) for _ in range(args.runs)]
    sorted_ = [run(scan[:2] + ["--sorted"] + scan[2:]) for _ in range(args.runs)]
    cold, warm, floor = [], [], []
    for _ in range(args.runs):
        for sfx in ("", "-wal", "-shm"):
            if os.path.exists(db + sfx):
                os.remove(db + sfx)
        cold.append(run([neff, "scan", "--json", "--no-progress", "--index", db, root]))
    size = db_size(db)
    idx = [neff, "scan", "--json", "--no-progress", "--index", db, root]
    find = ["find", "-L", root, "-printf", "%s %T@ %p\\n"]
    run(idx)
    for _ in range(args.runs):
        warm.append(run(idx))
        floor.append(run(find))
    status = [run([neff, "cache", "status", root]) for _ in range(args.runs)]
    out["samples"] = {
        "scan": s,
        "sorted": sorted_,
        "index_cold": cold,
        "rescan": warm,
        "floor": floor,
        "status": status,
    }
    out.update(
        scan_wall=median_of(s, "wall"),
        scan_cpu=median_of(s, "cpu"),
        scan_rss=median_of(s, "rss"),
        scan_first=median_of(s, "first"),
        sorted_wall=median_of(sorted_, "wall"),
        sorted_rss=median_of(sorted_, "rss"),
        index_wall=median_of(cold, "wall"),
        index_cpu=median_of(cold, "cpu"),
        index_rss=median_of(cold, "rss"),
        db_bytes=size,
        rescan_wall=median_of(warm, "wall"),
        rescan_cpu=median_of(warm, "cpu"),
        rescan_rss=median_of(warm, "rss"),
        floor_wall=median_of(floor, "wall"),
        status_wall=median_of(status, "wall"),
        status_cpu=median_of(status, "cpu"),
        status_rss=median_of(status, "rss"),
        neffs=neffs,
        entries=entries,
    )
    if args.cold:
        if drop_caches():
            c = run(scan, first_line=True)
            drop_caches()
            r = run(idx)
            drop_caches()
            f = run(find)
            drop_caches()
            st = run([neff, "cache", "status", root])
            out.update(
                cold_scan_wall=c["wall"],
                cold_scan_first=c["first"],
                cold_rescan_wall=r["wall"],
                cold_floor_wall=f["wall"],
                cold_status_wall=st["wall"],
                dropped=True,
            )
        else:
            out["dropped"] = False
    log(
        "zoo_scale: N=%d done: %s"
        % (n, json.dumps({k: v for k, v in out.items() if k not in ("manifest", "samples")}))
    )
    return out


def shard_sql(k):
    """Re-keys a shard copy: row ids stay, every identifying text gets shard k's mark."""
    return (
        "DELETE FROM members; DELETE FROM tensors; DELETE FROM aliases;\n"
        "UPDATE neffs SET key = key || '#%(k)d', path = '/shard-%(k)d' || path,\n"
        "  uuid = substr(uuid, 1, 24) || printf('%%08x', %(k)d),\n"
        "  hash = substr(hash, 1, 24) || printf('%%08x', %(k)d),\n"
        "  cache_key = printf('%%04x', %(k)d) || substr(cache_key, 5);\n" % {"k": k}
    )


def build_rows(args, base_db, rows):
    """A catalogue of `rows` rows merged from re-keyed copies of base_db."""
    big = os.path.join(args.work, "rows-%d.db" % rows)
    if os.path.exists(big) and sqlite3.connect(big).execute("SELECT count(*) FROM neffs").fetchone()[0] >= rows:
        log("zoo_scale: reusing %s" % big)
        return big
    for sfx in ("", "-wal", "-shm"):
        if os.path.exists(big + sfx):
            os.remove(big + sfx)
    schema = subprocess.run([args.neff, "index", "schema"], capture_output=True, check=True).stdout
    subprocess.run(["sqlite3", big], input=schema, check=True)
    base_rows = sqlite3.connect(base_db).execute("SELECT count(*) FROM neffs").fetchone()[0]
    stripped = os.path.join(args.work, "shard-base.db")
    shutil.copy(base_db, stripped)
    for sfx in ("-wal", "-shm"):
        if os.path.exists(base_db + sfx):
            shutil.copy(base_db + sfx, stripped + sfx)
    c = sqlite3.connect(stripped)
    c.executescript("DELETE FROM members; DELETE FROM tensors; DELETE FROM aliases;")
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    c.close()
    subprocess.run(["sqlite3", stripped, "PRAGMA journal_mode=DELETE; VACUUM;"], check=True, capture_output=True)
    shard = os.path.join(args.work, "shard.db")
    t0 = time.monotonic()
    k = 0
    while k * base_rows < rows:
        shutil.copy(stripped, shard)
        subprocess.run(["sqlite3", shard], input=shard_sql(k).encode(), check=True)
        merge = subprocess.run(
            [args.neff, "index", "merge-sql", shard], capture_output=True, check=True
        ).stdout
        subprocess.run(["sqlite3", big], input=merge, check=True)
        k += 1
    log("zoo_scale: %s: %d shards of %d rows merged in %.0f s" % (big, k, base_rows, time.monotonic() - t0))
    return big


def params_for(db):
    c = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    n = c.execute("SELECT count(*) FROM neffs").fetchone()[0]
    row = c.execute(
        "SELECT path, uuid, hash FROM neffs WHERE ok = 1 AND id >= ? ORDER BY id LIMIT 1", (n // 2,)
    ).fetchone()
    arch, world, cores, count = c.execute(
        "SELECT arch, cc_world_size, num_cores, count(*) FROM neffs WHERE ok = 1 AND cc_world_size IS NOT NULL"
        " GROUP BY 1, 2, 3 ORDER BY 4 DESC LIMIT 1"
    ).fetchone()
    key = c.execute(
        "SELECT cache_key FROM neffs WHERE cache_key IS NOT NULL GROUP BY cache_key"
        " HAVING count(*) > 1 LIMIT 1"
    ).fetchone()[0]
    return n, {
        ":path": row[0],
        ":uuid": row[1],
        ":hash": row[2],
        ":arch": arch,
        ":world": world,
        ":cores": cores,
        ":key": key,
    }, count


def duckdb_attached(db):
    """A DuckDB connection attaching db (sqlite extension from duckdb-ext-sqlite or a
    download), or None: the DuckDB column is then left empty."""
    try:
        import importlib.util

        import duckdb
    except ImportError:
        log("zoo_scale: no duckdb module here: no DuckDB column")
        return None
    con = duckdb.connect()
    spec = importlib.util.find_spec("duckdb_ext")
    if spec is not None and spec.submodule_search_locations:
        ext = os.path.join(list(spec.submodule_search_locations)[0], "extensions")
        con.execute("SET extension_directory = '%s'" % ext)
    try:
        con.execute("LOAD sqlite")
    except duckdb.Error as e:
        log("zoo_scale: DuckDB's sqlite extension does not load (%s): no DuckDB column" % e)
        return None
    con.execute("ATTACH '%s' AS zoo (TYPE sqlite, READ_ONLY)" % db)
    con.execute("USE zoo")
    return con


def sql_literal(v):
    return str(v) if isinstance(v, int) else "'%s'" % str(v).replace("'", "''")


def time_queries(args, db):
    rows, params, target_rows = params_for(db)
    res = {"rows": rows, "target_rows": target_rows, "queries": {}}
    ro = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    duck = duckdb_attached(db)
    for name, sql in QUERIES:
        used = {k: v for k, v in params.items() if k in sql}
        bound = {k[1:]: v for k, v in used.items()}  # Python's sqlite3: names without ':'
        plan = [r[3] for r in ro.execute("EXPLAIN QUERY PLAN " + sql, bound)]
        script = [".timer on"]
        for k, v in used.items():
            script.append(".parameter set %s %s" % (k, sql_literal(v)))
        script.append(".output /dev/null")
        for _ in range(args.runs + 1):
            script.append(sql)
        p = subprocess.run(
            ["sqlite3", "-readonly", db], input="\n".join(script) + "\n", capture_output=True, text=True
        )
        times = [float(m) * 1000 for m in re.findall(r"Run Time: real ([0-9.]+)", p.stdout)]
        if len(times) != args.runs + 1:
            raise SystemExit("sqlite3 timer: %r %r" % (p.stdout, p.stderr))
        py = []
        for _ in range(max(5, args.runs)):
            t0 = time.perf_counter()
            answer = ro.execute(sql, bound).fetchall()
            py.append((time.perf_counter() - t0) * 1000)
        duck_ms = None
        if duck is not None:
            dt = []
            for _ in range(args.runs):
                t0 = time.perf_counter()
                duck.execute(re.sub(r":(\w+)", r"$\1", sql), bound).fetchall()
                dt.append((time.perf_counter() - t0) * 1000)
            duck_ms = statistics.median(dt)
        res["queries"][name] = {
            "duckdb_ms": duck_ms,
            "sqlite3_first_ms": times[0],
            "sqlite3_ms": statistics.median(times[1:]),
            "python_ms": statistics.median(py),
            "rows_returned": len(answer),
            "plan": plan,
            "full_scan": any(l.startswith("SCAN neffs") for l in plan),
        }
    return res


def fmt_ms(s):
    return "%.2f" % (s * 1000)


def tables(results, q):
    lines = []
    if results:
        lines += [
            "### scan (page cache warm)",
            "",
            "| N entries | NEFFs | wall | per NEFF | CPU per NEFF | peak RSS | --sorted peak RSS | first record |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in results:
            lines.append(
                "| %d | %d | %.2f s | %s ms | %s ms | %.1f MiB | %.1f MiB | %s ms |"
                % (
                    r["n"],
                    r["neffs"],
                    r["scan_wall"],
                    fmt_ms(r["scan_wall"] / r["neffs"]),
                    fmt_ms(r["scan_cpu"] / r["neffs"]),
                    r["scan_rss"] / 2**20,
                    r["sorted_rss"] / 2**20,
                    fmt_ms(r["scan_first"]),
                )
            )
        lines += [
            "",
            "### scan --index, cold (no DB) and warm rescan, beside the walk-and-stat floor",
            "",
            "| N entries | cold ingest | per NEFF | CPU per NEFF | peak RSS | DB size | warm rescan | floor (find -L) | rescan / floor | rescan peak RSS |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in results:
            lines.append(
                "| %d | %.2f s | %s ms | %s ms | %.1f MiB | %.1f MiB | %s ms | %s ms | %.2fx | %.1f MiB |"
                % (
                    r["n"],
                    r["index_wall"],
                    fmt_ms(r["index_wall"] / r["neffs"]),
                    fmt_ms(r["index_cpu"] / r["neffs"]),
                    r["index_rss"] / 2**20,
                    r["db_bytes"] / 2**20,
                    fmt_ms(r["rescan_wall"]),
                    fmt_ms(r["floor_wall"]),
                    r["rescan_wall"] / r["floor_wall"],
                    r["rescan_rss"] / 2**20,
                )
            )
        lines += [
            "",
            "### cache status of the whole cache",
            "",
            "| N entries | wall | per entry | CPU | peak RSS |",
            "|---|---|---|---|---|",
        ]
        for r in results:
            lines.append(
                "| %d | %.2f s | %s ms | %.2f s | %.1f MiB |"
                % (
                    r["n"],
                    r["status_wall"],
                    fmt_ms(r["status_wall"] / r["entries"]),
                    r["status_cpu"],
                    r["status_rss"] / 2**20,
                )
            )
        if any("dropped" in r for r in results):
            lines += [
                "",
                "### page cache cold (after echo 3 > /proc/sys/vm/drop_caches), one run",
                "",
                "| N entries | dropped | scan | first record | warm-DB rescan | floor (find -L) | cache status |",
                "|---|---|---|---|---|---|---|",
            ]
            for r in results:
                if r.get("dropped"):
                    lines.append(
                        "| %d | yes | %.2f s | %s ms | %s ms | %s ms | %.2f s |"
                        % (
                            r["n"],
                            r["cold_scan_wall"],
                            fmt_ms(r["cold_scan_first"]),
                            fmt_ms(r["cold_rescan_wall"]),
                            fmt_ms(r["cold_floor_wall"]),
                            r["cold_status_wall"],
                        )
                    )
                else:
                    lines.append("| %d | no (refused) | | | | | |" % r["n"])
    if q:
        lines += [
            "",
            "### queries (sqlite3 .timer, median; first run apart; Python sqlite3 for µs)",
            "",
            "| query | rows | answer rows | sqlite3 median | first run | Python median | full scan of neffs | DuckDB ATTACH median |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for res in q:
            for name, v in res["queries"].items():
                lines.append(
                    "| %s | %d | %d | %.1f ms | %.1f ms | %.3f ms | %s | %s |"
                    % (
                        name,
                        res["rows"],
                        v["rows_returned"],
                        v["sqlite3_ms"],
                        v["sqlite3_first_ms"],
                        v["python_ms"],
                        "yes" if v["full_scan"] else "no",
                        "" if v["duckdb_ms"] is None else "%.0f ms" % v["duckdb_ms"],
                    )
                )
    return "\n".join(lines)


def records(cmd):
    """The NDJSON records cmd prints, and its stderr."""
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode not in (0, 1):
        raise SystemExit("%s: exit %d: %s" % (" ".join(cmd), p.returncode, p.stderr[-2000:]))
    return [json.loads(l) for l in p.stdout.splitlines()], p.stderr


def check_size(args, n):
    """The answers at N entries (--check): see the module's doc."""
    root, manifest = make(args, n)
    scan = [args.neff, "scan", "--json", "--no-progress"]
    plain, _ = records(scan + [root])
    want = manifest["entries"]

    def fail(what):
        raise SystemExit("zoo_scale --check, N=%d: %s" % (n, what))

    paths = [r["path"] for r in plain]
    if len(paths) != want or len(set(paths)) != want:
        fail("%d records (%d distinct paths) for %d entries" % (len(paths), len(set(paths)), want))
    if sum(1 for r in plain if r["path"].endswith(".neff")) != manifest["neffs"]:
        fail("not one record per NEFF")
    key = lambda r: json.dumps(r, sort_keys=True)
    sorted_, _ = records(scan + ["--sorted", root])
    if [r["path"] for r in sorted_] != sorted(paths) or sorted(map(key, sorted_)) != sorted(map(key, plain)):
        fail("--sorted is not the plain scan's records in path order")
    db = os.path.join(args.work, zoo_name(args, n) + ".check.db")
    for sfx in ("", "-wal", "-shm"):
        if os.path.exists(db + sfx):
            os.remove(db + sfx)
    for i, what in enumerate(("cold", "warm")):
        got, err = records(scan + ["--index", db, root])
        if sorted(map(key, got)) != sorted(map(key, plain)):
            fail("the %s --index scan's records differ from the plain scan's" % what)
        if i == 1 and ", %d from the index" % want not in err:
            fail("the warm rescan was not answered from the catalogue: %s" % err.strip())
    log("zoo_scale --check: N=%d: %d records, sorted, indexed and rescanned alike" % (n, want))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1000,10000", help="entries per zoo, comma-separated")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--work", default="/tmp/neff-zoo-scale")
    ap.add_argument("--rows", default="100000,1000000", help="catalogue rows for the queries ('' for none)")
    ap.add_argument("--budget-bytes", type=int, default=4 << 30)
    ap.add_argument("--cold", action="store_true", help="also once with the page cache dropped")
    ap.add_argument("--neff", default=os.path.join(REPO, "target", "release", "neff"))
    ap.add_argument("--json", help="write every figure here")
    ap.add_argument("--check", action="store_true", help="also check the answers (CI)")
    ap.add_argument("--layout", choices=("compiler", "small", "flat"), default="compiler",
                    help="bench/make_zoo.py's layout (default: the compiler's)")
    a = ap.parse_args()
    if not os.access(a.neff, os.X_OK):
        sys.exit("zoo_scale: no %s: cargo build --release --features fuzzing --bin neff" % a.neff)
    os.makedirs(a.work, exist_ok=True)
    sizes = [int(x) for x in a.sizes.split(",") if x]
    if a.check:
        for n in sizes:
            check_size(a, n)
    results = [measure_size(a, n) for n in sizes]
    q = []
    # The base of the merged catalogues: the largest N's, or (--sizes '') the largest
    # catalogue an earlier run left in --work.
    made = [int(m.group(1)) for m in (re.match(r"zoo-(\d+)\.db$", f) for f in os.listdir(a.work)) if m]
    if a.rows and (sizes or made):
        base = os.path.join(a.work, "zoo-%d.db" % max(sizes or made))
        if sizes:
            base = os.path.join(a.work, zoo_name(a, max(sizes)) + ".db")
        for rows in (int(x) for x in a.rows.split(",")):
            q.append(time_queries(a, build_rows(a, base, rows)))
    text = tables(results, q)
    print(text)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"sizes": results, "queries": q, "argv": sys.argv}, f, indent=1)


if __name__ == "__main__":
    main()
