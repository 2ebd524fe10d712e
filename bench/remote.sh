#!/usr/bin/env bash
# Requests and bytes of remote reads (PERF.md, remote-ls-1g and bucket-index):
# `ls`/`get` of the bench corpus's 1 GiB raw NEFF and 256 MiB-of-tar gzip NEFF
# over HTTP (nginx) and S3 (moto_server), a zoo scan from S3 vs from disk, and
# a warm `scan --index` rescan. Counts come from the fault proxy's log (mode
# `ok`: passed through, one line per request with the bytes sent), in front of
# each server.
#
#   bench/remote.sh [NEFF_BIN] [ZOO_DIR]
#
# NEFF_BIN defaults to target/release/neff; ZOO_DIR to the corpus's
# small_subset200 (bench/make_corpus.py; pass /tmp/neff-bench/small for the
# 2,000-NEFF zoo). Servers run from a temp dir, stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-target/release/neff}")
corpus=${NEFF_BENCH_CORPUS:-/tmp/neff-bench}
zoo=$(realpath "${2:-$corpus/small_subset200}")
tmp=$(mktemp -d)
trap 'scripts/servers stop "$tmp/state"; rm -rf "$tmp"' EXIT

mkdir -p "$tmp/seed/large"
ln -s "$corpus/large/big_pkg1.neff" "$tmp/seed/large/big_pkg1.neff"
ln -s "$corpus/large/big_pkg2.neff" "$tmp/seed/large/big_pkg2.neff"
cp -rs "$zoo" "$tmp/seed/zoo"
info=$(scripts/servers start "$tmp/state" "$tmp/seed")
get() { python3 -c "import json,sys; print(json.loads(sys.argv[1])['$1'])" "$info"; }
proxy=$(get proxy)
log=$(get proxy_log)
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 AWS_ALLOW_HTTP=true

# requests and bytes the proxy logged while "$@" ran
count() {
  local before
  before=$(wc -l <"$log")
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null
  t1=$(date +%s.%N)
  tail -n +"$((before + 1))" "$log" | awk -v t="$(echo "$t1 - $t0" | bc)" \
    '{n++; b+=$NF} END {printf "%d requests, %.0f bytes, %.2f s\n", n, b, t}'
}

for f in big_pkg1 big_pkg2; do
  size=$(stat -Lc %s "$tmp/seed/large/$f.neff")
  echo "== $f.neff ($size bytes)"
  # moto_server answers a ranged GET of a large object in about a second
  # (it reads the whole object for each), so the large NEFFs go through
  # S3 only when asked: REMOTE_BENCH_S3_LARGE=1.
  vias=("http $proxy/http/ok/large/$f.neff")
  [ "${REMOTE_BENCH_S3_LARGE:-0}" = 1 ] && vias+=("s3 s3://zoo/large/$f.neff")
  for via in "${vias[@]}"; do
    set -- $via
    export AWS_ENDPOINT_URL=$proxy/s3/ok
    echo "  $1 ls:                $(count "$bin" ls "$2")"
    echo "  $1 get cc-world-size: $(count "$bin" get "$2" cc-world-size)"
    echo "  $1 get arch:          $(count "$bin" get "$2" arch)"
  done
done

export AWS_ENDPOINT_URL=$proxy/s3/ok
n=$(find -L "$tmp/seed/zoo" -name '*.neff' | wc -l)
echo "== zoo of $n NEFFs"
echo "  scan from disk:       $(count "$bin" scan --json --no-progress "$zoo")"
echo "  scan from s3:         $(count "$bin" scan --json --no-progress s3://zoo/zoo/)"
echo "  scan from s3, 8 jobs: $(count "$bin" scan --json --no-progress --jobs 8 s3://zoo/zoo/)"
# What a user does today: download the prefix with the AWS CLI (through the
# same proxy, so its requests are counted alike), then scan the copy.
if command -v aws >/dev/null; then
  dl() { rm -rf "$tmp/dl" && aws --endpoint-url "$AWS_ENDPOINT_URL" s3 cp --recursive --quiet s3://zoo/zoo/ "$tmp/dl" && "$bin" scan --json --no-progress "$tmp/dl"; }
  echo "  aws s3 cp + scan:     $(count dl)"
else
  echo "  aws s3 cp + scan:     (no aws CLI on the PATH: pip install awscli)"
fi
echo "  scan --index cold:    $(count "$bin" scan --json --no-progress --index "$tmp/zoo.db" s3://zoo/zoo/)"
echo "  scan --index warm:    $(count "$bin" scan --json --no-progress --index "$tmp/zoo.db" s3://zoo/zoo/)"
