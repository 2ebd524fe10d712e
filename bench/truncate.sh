#!/usr/bin/env bash
# How often `neff verify` dies of a signal when its NEFF is truncated while
# it reads it (a compile cache rewriting a file). Compares builds side by side:
#   bench/truncate.sh /tmp/neff-before target/release/neff
set -euo pipefail
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
mkdir -p "$T/tree/sg00"
head -c $((24 << 20)) /dev/urandom > "$T/tree/sg00/big.bin"
echo '{"target":"trn1"}' > "$T/tree/kelf-0.json"
"${@: -1}" pack --no-gzip "$T/tree" -o "$T/orig.neff"
for bin in "$@"; do
  sig=0; ok=0
  for i in $(seq 1 40); do
    cp "$T/orig.neff" "$T/m.neff"
    "$bin" verify "$T/m.neff" >/dev/null 2>&1 & pid=$!
    sleep "0.0$((i % 9 + 1))"
    truncate -s $((4096 * (i * 37 % 3000) + 1024)) "$T/m.neff"
    rc=0; wait "$pid" 2>/dev/null || rc=$?
    if [ "$rc" -gt 128 ]; then sig=$((sig + 1)); else ok=$((ok + 1)); fi
  done
  echo "$bin: $sig signal deaths, $ok normal exits (0, 1 or 3) of 40"
done
