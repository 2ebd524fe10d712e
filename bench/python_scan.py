#!/usr/bin/env python3
"""Zoo scan timings for PERF.md, python-threads-scan: `neff scan --json` (the
CLI, a subprocess) vs neff.scan (in-process) vs neff.ray.scan on a local
Ray instance, side by side in one run, medians of N rounds.

    python bench/python_scan.py NEFF_BIN ZOO_DIR [--rounds 3] [--cpus 2]

Ray's start-up (ray.init) is timed apart; each Ray round is one
neff.ray.scan(...).materialize(). Not run in CI.
"""

import argparse
import statistics
import subprocess
import time



def median_of(fn, rounds):
    ts = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        n = fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("neff_bin")
    ap.add_argument("zoo")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cpus", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=100)
    args = ap.parse_args()

    def cli():
        p = subprocess.run(
            [args.neff_bin, "scan", "--json", "--no-progress", args.zoo],
            capture_output=True,
            check=True,
        )
        return len(p.stdout.splitlines())

    def inproc():
        return sum(1 for _ in neff.scan([args.zoo]))

    import ray

    import neff.ray

    t0 = time.perf_counter()
    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    ray_start = time.perf_counter() - t0

    def on_ray():
        return neff.ray.scan([args.zoo], batch_size=args.batch_size).materialize().count()

    cli()
    on_ray()  # warm: page cache, Ray workers started
    rows = []
    for name, fn in (
        ("neff scan --json (CLI)", cli),
        ("neff.scan (in-process)", inproc),
        ("neff.ray.scan, local Ray, %d CPUs" % args.cpus, on_ray),
    ):
        rows.append((name,) + median_of(fn, args.rounds))
    base = rows[0][1]
    print("| how | records | median s | NEFFs/s | vs CLI |")
    print("|---|---:|---:|---:|---:|")
    for name, s, n in rows:
        print("| %s | %d | %.3f | %.0f | %.2f× |" % (name, n, s, n / s, s / base))
    print("ray.init: %.2f s (not included)" % ray_start)
    ray.shutdown()


if __name__ == "__main__":
    main()
