#!/usr/bin/env bash
# A/B of this tree against an earlier checkout: examples/bench at 2 ranks
# over shared memory and over TCP, the two builds alternating ROUNDS times
# in one run, so drift hits both alike. Prints this/base ratios (medians
# over the rounds) for every figure: a refactoring that moves code must
# leave them at 1.00 within noise.
#
#   git worktree add /tmp/base <rev> && (cd /tmp/base && cargo build --release --bins --examples)
#   BASE_DIR=/tmp/base ROUNDS=5 bench/compare_base.sh   (results in target/compare_base/)
set -euo pipefail
# This harness runs more ranks than a small machine has CPUs, on purpose:
# allow it, as --oversubscribe would (without it rlaunch refuses).
export RLAUNCH_OVERSUBSCRIBE=1
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
BASE_TARGET=${BASE_TARGET:-${BASE_DIR:?BASE_DIR names an earlier checkout}/target}
OUT=target/compare_base
mkdir -p "$OUT"
cargo build --release --bins --examples --quiet
ROWS="put_lat 8|get_lat 8|fadd_lat 8|add_lat 8|cswap_lat 8|put_signal_lat 8|msg_rate 8|add_rate 8|put_bw 65536|put_bw 1048576|get_bw 1048576|barrier_n2 0"
figures() { grep -E '^[a-z_0-9]+ [0-9]+ [0-9.]+ [a-zA-Z/]+$'; }
for transport in shm tcp; do
  : > "$OUT/this-$transport.txt"; : > "$OUT/base-$transport.txt"
done
for round in $(seq "$ROUNDS"); do
  echo "== round $round/$ROUNDS"
  for transport in shm tcp; do
    # Alternate which build goes first, so neither always runs on a warm machine.
    for side in $( ((round % 2)) && echo "this base" || echo "base this"); do
      case $side in
        this) dir=target ;;
        base) dir=$BASE_TARGET ;;
      esac
      timeout 300 "$dir/release/rlaunch" -n 2 --transport "$transport" "$dir/release/examples/bench" --smoke |
        figures >> "$OUT/$side-$transport.txt"
    done
  done
done
for transport in shm tcp; do
  echo "== $transport: this tree / base, median of $ROUNDS alternating rounds"
  awk -v rows="$ROWS" -v peer="base" -f bench/ratios.awk "$OUT/this-$transport.txt" "$OUT/base-$transport.txt" | sed 's/oneside/this/'
done
