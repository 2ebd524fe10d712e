#!/usr/bin/env bash
# Side-by-side timings of neff against today's readers, in one hyperfine run
# per case, on the corpus of bench/make_corpus.py.
#
#   python3 bench/make_corpus.py /tmp/neff-bench   # once, a few minutes
#   bench/compare.sh [CORPUS] [OUT]                # CASES="ls get scan" to choose
#
# The Python readers: the reference re-creation (tests/helpers/neffinfo_ref.py,
# or $NEFFINFO_REF) and the whole-file tarfile one (bench/tarfile_ref.py, or
# $TARFILE_REF).
#
# Needs hyperfine, bsdtar (libarchive-tools) and GNU time. Medians are what
# PERF.md quotes; hyperfine's JSON for each case lands in OUT.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
C=${1:-/tmp/neff-bench}
OUT=${2:-/tmp/neff-compare}
CASES=${CASES:-ls rss get scan pack}
NEFFINFO_REF=${NEFFINFO_REF:-$root/tests/helpers/neffinfo_ref.py}
TARFILE_REF=${TARFILE_REF:-$root/bench/tarfile_ref.py}
PY=${PY:-$(python3 -c 'import sys; print(sys.executable)')}
RUNS=${RUNS:-10}
SLOW=${SLOW:-3}
mkdir -p "$OUT"
cargo build --release --quiet --manifest-path "$root/Cargo.toml"
N=$root/target/release/neff
L=$C/large
warm() { cat "$@" > /dev/null; }
hf() { local name=$1; shift; hyperfine -N --style basic --export-json "$OUT/$name.json" "$@"; }

for c in $CASES; do case $c in
ls)
  warm "$L/big_pkg1.neff"
  hf ls_raw -w 2 -r "$RUNS" \
    "$N ls $L/big_pkg1.neff" \
    "sh -c 'dd if=$L/big_pkg1.neff bs=1024 skip=1 status=none | tar tf - | sort'" \
    "sh -c '{ dd bs=1024 skip=1 count=0 status=none; bsdtar -tf -; } < $L/big_pkg1.neff'"
  warm "$L/big_pkg2.neff"
  hf ls_gzip -w 1 -r "$RUNS" \
    "$N ls $L/big_pkg2.neff" \
    "sh -c 'dd if=$L/big_pkg2.neff bs=1024 skip=1 status=none | tar tzf - | sort'" \
    "sh -c '{ dd bs=1024 skip=1 count=0 status=none; bsdtar -tf -; } < $L/big_pkg2.neff'"
  ;;
rss)
  warm "$L/big_pkg1.neff"
  for i in 1 2 3 4 5; do /usr/bin/time -f "%M" "$N" ls "$L/big_pkg1.neff" 2>&1 >/dev/null; done \
    | sort -n | awk '{a[NR]=$1} END {print "neff ls big_pkg1 peak RSS KiB (median of 5):", a[3]}' | tee "$OUT/rss.txt"
  ;;
get)
  small=$(find "$C/small" -name '*.neff' | sort | sed -n 1p)
  warm "$L/big_pkg1.neff" "$small"
  hf get_cc_raw -w 1 -r "$SLOW" \
    "$N get $L/big_pkg1.neff cc-world-size" \
    "$PY $NEFFINFO_REF $L/big_pkg1.neff cc-world-size" \
    "$PY $TARFILE_REF $L/big_pkg1.neff cc-world-size"
  hf get_def_raw -w 1 -r "$SLOW" \
    "$N get $L/big_pkg1.neff def" \
    "$PY $NEFFINFO_REF $L/big_pkg1.neff def" \
    "$PY $TARFILE_REF $L/big_pkg1.neff def"
  hf get_def_small_gz -w 2 -r "$RUNS" \
    "$N get $small def" \
    "$PY $NEFFINFO_REF $small def" \
    "$PY $TARFILE_REF $small def"
  ;;
scan)
  warm $(find "$C/small" -name '*.neff')
  hf scan_subset -w 1 -r 3 \
    "$N scan --json --no-progress $C/small_subset200" \
    "$PY $NEFFINFO_REF --scan $C/small_subset200"
  hf scan_zoo -w 1 -r 3 \
    "$N scan --json --no-progress --jobs 1 $C/small" \
    "$N scan --json --no-progress --jobs 2 $C/small" \
    "$PY $TARFILE_REF --scan $C/small"
  for j in 1 2; do /usr/bin/time -f "%M" "$N" scan --json --no-progress --jobs $j "$C/small" 2>&1 >/dev/null | tail -1; done \
    | awk '{print "neff scan zoo peak RSS KiB:", $1}' | tee "$OUT/scan_rss.txt"
  ;;
pack)
  # Pack and unpack the ~1 GiB NEFF's tree, against GNU tar (+ gzip) on the
  # same data. Throughput = 1 GiB / median.
  T=$OUT/tree; rm -rf "$T"; "$N" unpack "$L/big_pkg1.neff" -o "$T"
  dd if="$L/big_pkg1.neff" bs=1M iflag=skip_bytes skip=1024 status=none of="$OUT/big1.tar"
  hf pack_gzip -r "$SLOW" \
    "$N pack $T -o $OUT/p.neff" "tar czf $OUT/p.tgz -C $T ."
  hf pack_raw -r "$SLOW" \
    "$N pack --no-gzip $T -o $OUT/r.neff" "tar cf $OUT/r.tar -C $T ."
  hf unpack_gzip -r "$SLOW" --prepare "sh -c 'rm -rf $OUT/u; mkdir -p $OUT/u'" \
    "$N unpack $OUT/p.neff -o $OUT/u/n" "tar xzf $OUT/p.tgz -C $OUT/u"
  hf unpack_raw -r "$SLOW" --prepare "sh -c 'rm -rf $OUT/u; mkdir -p $OUT/u'" \
    "$N unpack $L/big_pkg1.neff -o $OUT/u/n" "tar xf $OUT/big1.tar -C $OUT/u"
  rm -rf "$T" "$OUT/u" "$OUT"/p.* "$OUT"/r.* "$OUT/big1.tar"
  ;;
esac; done
echo "results in $OUT"
