#!/usr/bin/env bash
# Runs every file of tests/hostile/ through the command its MANIFEST.tsv row
# names (release build), and records exit code, wall time and peak RSS of
# each, then the worst of each. The bar: exit 1, a one-line reason, under
# 2 s and under 1 GiB per file.
#
#   bench/hostile.sh [OUT.tsv]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-/tmp/neff-hostile.tsv}
cargo build --release --quiet --manifest-path "$root/Cargo.toml"
bin=$root/target/release/neff
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'file\tcommand\texit\tseconds\tpeak_rss_kib\tstderr_lines\treason\n' > "$out"
while IFS=$'\t' read -r file cmd want; do
  [[ "$file" == \#* || -z "$file" ]] && continue
  read -r -a words <<< "$cmd"
  args=("${words[0]}" "$root/tests/hostile/$file" "${words[@]:1}")
  [[ "${words[0]}" == unpack ]] && args+=(-o "$tmp/out-$file")
  set +e
  /usr/bin/time -f '%e %M' -o "$tmp/time" "$bin" "${args[@]}" > "$tmp/stdout" 2> "$tmp/stderr"
  code=$?
  set -e
  read -r secs rss < <(tail -n 1 "$tmp/time")
  reason=$(cat "$tmp/stderr" "$tmp/stdout" | head -1 | tr '\t' ' ')
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$file" "$cmd" "$code" "$secs" "$rss" \
    "$(wc -l < "$tmp/stderr")" "$reason" >> "$out"
done < "$root/tests/hostile/MANIFEST.tsv"
echo "per file: $out"
awk -F'\t' 'NR > 1 {
  n++; if ($3 != 1) bad++;
  if ($4 > t) { t = $4; tf = $1 } if ($5 > r) { r = $5; rf = $1 }
} END {
  printf "%d files, %d not exit 1; slowest %.2f s (%s); largest peak RSS %.1f MiB (%s)\n", n, bad, t, tf, r / 1024, rf
}' "$out"
