#!/usr/bin/env bash
# Runs every fuzz target for SECS seconds (default 900), two at a time (one
# per core), logging to LOGDIR. Needs cargo-fuzz (`cargo install cargo-fuzz`);
# on stable Rust, RUSTC_BOOTSTRAP=1 lets it use the sanitizer flags it needs.
set -u
cd "$(dirname "$0")"
SECS=${SECS:-900}
LOGDIR=${LOGDIR:-/tmp/neff-fuzz-logs}
mkdir -p "$LOGDIR"
export RUSTC_BOOTSTRAP=1
RUSTC_BOOTSTRAP=1 cargo fuzz build -O >/dev/null 2>&1
run() {
  cargo fuzz run -O "$1" -- -max_total_time="$SECS" -dict=neff.dict -rss_limit_mb=2048 \
    -timeout=10 -print_final_stats=1 > "$LOGDIR/$1.log" 2>&1
  echo "$1 exit $?" >> "$LOGDIR/status"
}
run whole_neff & run tar_payload & wait
run json_members & run roundtrip & wait
run unpack_contained & run json_skim & wait
run vs_libarchive & run vs_tar_crate & wait
echo done >> "$LOGDIR/status"
