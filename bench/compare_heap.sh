#!/usr/bin/env bash
# What the growing heap costs (bench/heap_cost.c), this tree against an
# earlier checkout with a fixed heap (SHMEM_SYMMETRIC_SIZE=1G, which it
# needs for the 256 MiB allocations) and, when SOS_DIR names a Sandia
# OpenSHMEM installation, against it (same size, libfabric's sockets
# provider on lo); 2 PEs, the sides alternating ROUNDS times in one run.
# Prints this/base and this/SOS ratios of the medians: alloc_free (an
# allocation that does not grow; goal <= 1.0x base), grow (this tree's
# growth step; goal <= its page faults + 100 us per peer) and faults.
#
#   BASE_DIR=/tmp/base [SOS_DIR=/work/peers/sos] ROUNDS=5 bench/compare_heap.sh
set -euo pipefail
export RLAUNCH_OVERSUBSCRIBE=1
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
BASE_TARGET=${BASE_TARGET:-${BASE_DIR:?BASE_DIR names an earlier checkout}/target}
OUT=target/compare_heap
mkdir -p "$OUT"
cargo build --release -p oneside-shmem -p rlaunch --quiet
target/release/oshcc -O2 -o "$OUT/heap_cost-this" bench/heap_cost.c
"$BASE_TARGET/release/oshcc" -O2 -o "$OUT/heap_cost-base" bench/heap_cost.c
sides="this base"
if [ -n "${SOS_DIR:-}" ]; then
  "$SOS_DIR/bin/oshcc" -O2 -o "$OUT/heap_cost-sos" bench/heap_cost.c
  sides="$sides sos"
fi
for side in $sides; do : > "$OUT/$side.txt"; done
figures() { grep -E '^[a-z_]+ [0-9]+ [0-9.]+ us$'; }
for round in $(seq "$ROUNDS"); do
  echo "== round $round/$ROUNDS"
  order=$sides; ((round % 2)) || order=$(echo "$sides" | tr ' ' '\n' | tac | tr '\n' ' ')
  for side in $order; do
    case $side in
      this) timeout 300 target/release/oshrun -np 2 "$OUT/heap_cost-this" ;;
      base) SHMEM_SYMMETRIC_SIZE=1G timeout 300 "$BASE_TARGET/release/oshrun" -np 2 "$OUT/heap_cost-base" ;;
      sos) OSHRUN_LAUNCHER=mpiexec.hydra SHMEM_OFI_PROVIDER=sockets SHMEM_OFI_DOMAIN=lo SHMEM_SYMMETRIC_SIZE=1G \
        timeout 300 "$SOS_DIR/bin/oshrun" -np 2 "$OUT/heap_cost-sos" ;;
    esac | figures >> "$OUT/$side.txt"
  done
done
rows="alloc_free 8|alloc_free 64|alloc_free 512|alloc_free 4096|alloc_free 32768|alloc_free 262144|grow 8388608|grow 67108864|grow 268435456|faults 8388608|faults 67108864|faults 268435456"
echo "== this tree / base (a fixed 1 GiB heap), median of $ROUNDS alternating rounds"
awk -v rows="$rows" -v peer="base" -f bench/ratios.awk "$OUT/this.txt" "$OUT/base.txt" | sed 's/oneside/this/'
if [ -n "${SOS_DIR:-}" ]; then
  echo "== this tree / Sandia OpenSHMEM (a fixed 1 GiB heap)"
  awk -v rows="$rows" -v peer="SOS" -f bench/ratios.awk "$OUT/this.txt" "$OUT/sos.txt" | sed 's/oneside/this/'
fi
echo "== this tree: a growth step against the page faults of as much fresh memory (+100 us for the one peer)"
for b in 8388608 67108864 268435456; do
  g=$(awk -v b=$b '$1 == "grow" && $2 == b { print $3 }' "$OUT/this.txt" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
  f=$(awk -v b=$b '$1 == "faults" && $2 == b { print $3 }' "$OUT/this.txt" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
  awk -v b=$b -v g="$g" -v f="$f" 'BEGIN { printf "grow %d: %.0f us, faults + 100 us: %.0f us, ratio %.2f\n", b, g, f + 100, g / (f + 100) }'
done
