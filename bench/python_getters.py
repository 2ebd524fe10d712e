#!/usr/bin/env python3
"""In-process timings for PERF.md, python-getters and python-threads-scan:
the reference NeffInfo class vs neff.NeffInfo, side by side in one run,
medians of N rounds.

    python bench/python_getters.py [--corpus /tmp/neff-bench] [--rounds 5]
                                   [--ref tests/helpers/neffinfo_ref.py] [--neff-bin NEFF]

* first call: a new object per round, then one getter (what a script calling
  the reference once per question pays);
* repeated call: one object, the getter called once to warm it, then timed
  (the reference's lru_cache vs neff.NeffInfo's memo);
* threads: neff.open + get_json("def") + cc_world_size() over a zoo, on 1 and
  2 Python threads.
Needs the corpus of bench/make_corpus.py; not run in CI.
"""

import argparse
import glob
import importlib.util
import os
import statistics
import subprocess
import threading
import time

import neff

GETTERS = [
    "getInfoJson",
    "getNeffJson",
    "getDefJson",
    "getKelf",
    "getTensorMapJson",
    "getAliasInfo",
    "hasMustAlias",
    "getArchType",
    "hasCC",
    "getCCRankWorldSize",
    "getNumNeuronCores",
]


def load_ref(path):
    spec = importlib.util.spec_from_file_location("neffinfo_ref", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def first_call(cls, path, getter, rounds):
    ts = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        try:
            getattr(cls(path), getter)()
        except Exception:  # noqa: BLE001 - a refusal is an answer too
            pass
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def repeated_call(cls, path, getter, rounds, inner):
    obj = cls(path)
    try:
        getattr(obj, getter)()
    except Exception:  # noqa: BLE001
        return float("nan")
    ts = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(inner):
            getattr(obj, getter)()
        ts.append((time.perf_counter() - t0) / inner)
    return statistics.median(ts)


def fmt(s):
    if s != s:
        return "refused"
    if s >= 1:
        return "%.3f s" % s
    if s >= 1e-3:
        return "%.2f ms" % (s * 1e3)
    if s >= 1e-6:
        return "%.2f µs" % (s * 1e6)
    return "%.0f ns" % (s * 1e9)


ACC = {
    "getInfoJson": "info",
    "getNeffJson": "neff",
    "getDefJson": "def",
    "getKelf": "kelf",
    "getTensorMapJson": "tensor-map",
    "getAliasInfo": "alias",
    "hasMustAlias": "must-alias",
    "getArchType": "arch",
    "hasCC": "has-cc",
    "getCCRankWorldSize": "cc-world-size",
    "getNumNeuronCores": "num-cores",
}


def cli_call(neff_bin, path, getter, rounds):
    """`neff get` as a process, for scale (same machine, same moment)."""
    if not neff_bin:
        return float("nan")
    ts = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        subprocess.run([neff_bin, "get", path, ACC[getter]], capture_output=True)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def row(what, getter, ref_s, ours_s, cli_s=float("nan")):
    ratio = ref_s / ours_s if ours_s == ours_s and ref_s == ref_s else float("nan")
    print(
        "| %s | `%s` | %s | %s | %s | %s |"
        % (
            what,
            getter,
            fmt(ref_s),
            fmt(ours_s),
            "—" if ratio != ratio else "%.0f×" % ratio,
            "—" if cli_s != cli_s else fmt(cli_s),
        )
    )


def threads(paths, rounds):
    def work(part):
        for p in part:
            try:
                with neff.open(p) as n:
                    n.get_json("def")
                    n.cc_world_size() if n.has_cc() else None
            except neff.NeffError:
                pass  # a refused question (an MPMD world size) is work done too

    def timed(k):
        ts = [threading.Thread(target=work, args=(paths[i::k],)) for i in range(k)]
        t0 = time.perf_counter()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        return time.perf_counter() - t0

    work(paths)
    one, two = [], []
    for _ in range(rounds):
        one.append(timed(1))
        two.append(timed(2))
    return statistics.median(one), statistics.median(two)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default="/tmp/neff-bench")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument(
        "--ref", default=os.path.join(here, "..", "tests", "helpers", "neffinfo_ref.py")
    )
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--neff-bin", help="also time `neff get` (a release build) for scale")
    args = ap.parse_args()
    ref = load_ref(args.ref)
    big = os.path.join(args.corpus, "large", "big_pkg1.neff")
    small = sorted(glob.glob(os.path.join(args.corpus, "small", "**", "*.neff"), recursive=True))[0]
    print("neff module:", neff.__file__)
    print("small:", small, "(gzip)" if neff.open(small).compressed else "(raw)")
    print()
    print("| file | getter | reference | neff.NeffInfo | ratio | `neff get` (process) |")
    print("|---|---|---:|---:|---:|---:|")
    for g in ["getCCRankWorldSize", "getDefJson"]:
        row(
            "1 GiB raw, first call",
            g,
            first_call(ref.NeffInfo, big, g, max(3, args.rounds // 2)),
            first_call(neff.NeffInfo, big, g, args.rounds * 2),
            cli_call(args.neff_bin, big, g, args.rounds * 2),
        )
    for g in GETTERS:
        row(
            "small gzip, first call",
            g,
            first_call(ref.NeffInfo, small, g, args.rounds),
            first_call(neff.NeffInfo, small, g, args.rounds * 4),
            cli_call(args.neff_bin, small, g, args.rounds * 4),
        )
    for path, label in ((small, "small gzip"), (big, "1 GiB raw")):
        for g in GETTERS:
            row(
                label + ", repeated",
                g,
                repeated_call(ref.NeffInfo, path, g, args.rounds, 200),
                repeated_call(neff.NeffInfo, path, g, args.rounds, 20000),
            )
    zoo = sorted(
        glob.glob(os.path.join(args.corpus, "small_subset200", "**", "*.neff"), recursive=True)
    )
    one, two = threads(zoo, args.rounds * 2)
    print()
    print(
        "threads over small_subset200 (%d NEFFs), medians of %d: 1 thread %s, 2 threads %s: %.2f×"
        % (len(zoo), args.rounds * 2, fmt(one), fmt(two), one / two)
    )


if __name__ == "__main__":
    main()
