#!/usr/bin/env bash
# `neff mem`, `neff diff`, `neff optimize`, measured: `neff mem` over the zoo against a scan,
# `neff diff` (1 GiB raw NEFF against a copy with one member changed; two zoo
# NEFFs), `neff optimize` of big_pkg2.neff and the `get`/`cat` gain it buys.
#   bench/mem_diff_optimize.sh [CORPUS] [WORK]     (defaults /tmp/neff-bench /tmp/neff-mdo)
# Needs hyperfine and a release build (target/release/neff). WORK gets ~1.3 GiB.
set -euo pipefail
CORPUS=${1:-/tmp/neff-bench}
WORK=${2:-/tmp/neff-mdo}
RUNS=${RUNS:-10}
SLOW=${SLOW:-5}
mkdir -p "$WORK"
N="$WORK/neff"
cp "$(dirname "$0")/../target/release/neff" "$N"

# The zoo's file list, for `neff mem` in one process.
find "$CORPUS/small" -name '*.neff' | sort > "$WORK/zoo.list"
cat > "$WORK/mem_zoo.sh" <<EOS
#!/usr/bin/env bash
mapfile -t F < "$WORK/zoo.list"
exec "$N" mem --json "\${F[@]}" > /dev/null
EOS
chmod +x "$WORK/mem_zoo.sh"

# big_pkg1.neff with 16 bytes of sg01/DVE.bin flipped and the SHA-256 redone.
if [ ! -f "$WORK/big_pkg1_mod.neff" ]; then
  python3 - "$CORPUS/large/big_pkg1.neff" "$WORK/big_pkg1_mod.neff" "$N" <<'EOS'
import hashlib, json, mmap, shutil, subprocess, sys
src, dst, neff = sys.argv[1:4]
members = json.loads(subprocess.check_output([neff, "ls", "--json", src]))
dve = next(m for m in members if m["name"] == "sg01/DVE.bin")
shutil.copyfile(src, dst)
with open(dst, "r+b") as f:
    m = mmap.mmap(f.fileno(), 0)
    off = 1024 + dve["offset"] + 4096
    m[off:off + 16] = bytes(b ^ 0xFF for b in m[off:off + 16])
    ds = int.from_bytes(m[16:24], "little")
    m[0xAC:0xCC] = hashlib.sha256(m[1024:1024 + ds]).digest()
    m.flush()
EOS
fi
Z1=$(sed -n 1p "$WORK/zoo.list"); Z2=$(sed -n 2p "$WORK/zoo.list")
B1="$CORPUS/large/big_pkg1.neff"; B2="$CORPUS/large/big_pkg2.neff"
"$N" optimize "$B2" -o "$WORK/big_pkg2_opt.neff"

cat "$CORPUS/small"/*/*/*.neff > /dev/null
hyperfine -N -w 1 -r "$SLOW" --export-json "$WORK/mem.json" \
  "$WORK/mem_zoo.sh" "$N scan --json --no-progress $CORPUS/small"
cat "$B1" "$WORK/big_pkg1_mod.neff" > /dev/null
hyperfine -N -i -w 1 -r "$SLOW" --export-json "$WORK/diff_big.json" \
  "$N diff --json $B1 $WORK/big_pkg1_mod.neff" "cmp -s -i 1024 $B1 $WORK/big_pkg1_mod.neff" "$N diff --json $B1 $B1"
hyperfine -N -i -w 3 -r "$RUNS" --export-json "$WORK/diff_zoo.json" \
  "$N diff --json $Z1 $Z2" "$N diff --json $Z1 $Z1"
hyperfine -w 1 -r "$SLOW" --export-json "$WORK/optimize.json" \
  "$N optimize $B2 -o $WORK/o.neff" "$N verify $WORK/o.neff"
cat "$B2" "$WORK/big_pkg2_opt.neff" > /dev/null
hyperfine -N -w 3 -r "$RUNS" --export-json "$WORK/load.json" \
  "$N get $B2 def" "$N get $WORK/big_pkg2_opt.neff def" \
  "$N get $B2 cc-world-size" "$N get $WORK/big_pkg2_opt.neff cc-world-size" \
  "$N cat $B2 sg00/def\\.json" "$N cat $WORK/big_pkg2_opt.neff sg00/def\\.json"
