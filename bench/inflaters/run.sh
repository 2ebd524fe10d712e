#!/usr/bin/env bash
# The inflater comparison of PERF.md, inflaters-in-process: each inflater
# over big_pkg2.neff, the 2 MiB -> 2 GiB bomb's payload (inflated to its
# end), the 3.25 GiB huge.neff and the zoo (2,000 small NEFFs, one process),
# interleaved.
#   bench/inflaters/run.sh [CORPUS] [LARGE]   (defaults /tmp/neff-bench /tmp/neff-large)
set -euo pipefail
cd "$(dirname "$0")"
CORPUS=${1:-/tmp/neff-bench}
LARGE=${2:-/tmp/neff-large}
cargo build --release -q
B=target/release/neff-inflaters
ZOO=$(mktemp -d); trap 'rm -rf "$ZOO"' EXIT
i=0; for f in $(find "$CORPUS/small" -name '*.neff'); do i=$((i+1)); ln -sf "$f" "$ZOO/$i.neff"; done
for input in "$CORPUS/large/big_pkg2.neff" "$LARGE/bomb.neff" "$LARGE/huge.neff" "$ZOO"; do
  for mode in libdeflate split zlib-rs neff-stream rapidgzip; do
    for r in 1 2 3; do
      /usr/bin/time -f "$(basename "$input") $mode %e s %M KiB" "$B" "$mode" "$input" >/dev/null
    done
  done 2>&1
done | python3 -c '
import sys, statistics, collections
d = collections.defaultdict(list)
for line in sys.stdin:
    p = line.split()
    if len(p) == 6 and p[3] == "s":
        d[(p[0], p[1])].append((float(p[2]), int(p[4]) / 1024))
print("| input | inflater | median s | median peak RSS MiB |")
print("|---|---|---:|---:|")
for (i, m), v in d.items():
    print(f"| {i} | {m} | {statistics.median(t for t, _ in v):.3f} | {statistics.median(r for _, r in v):.0f} |")
'
