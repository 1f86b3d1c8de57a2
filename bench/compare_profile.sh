#!/usr/bin/env bash
# What profiling costs (issue "See inside a job"): examples/bench --smoke at
# 2 ranks on shared memory, alternating ROUNDS times in one run between
#   base: rlaunch and bench built from BASE_DIR (an earlier checkout, built
#         there with cargo build --release --bins --examples),
#   off:  this tree, profiling off (hang reports on, as rlaunch's default),
#   quiet: this tree with -x ONESIDE_WATCH=0 (no hang reports either),
#   on:   this tree under rlaunch --profile.
# Prints off/base and quiet/base (the cost of the hooks with the tools off,
# with and without hang reports) and on/off (the cost of profiling),
# medians over the rounds.
#
#   BASE_DIR=/tmp/base ROUNDS=7 bench/compare_profile.sh   (results in target/compare_profile/)
set -euo pipefail
# This harness runs more ranks than a small machine has CPUs, on purpose:
# allow it, as --oversubscribe would (without it rlaunch refuses).
export RLAUNCH_OVERSUBSCRIBE=1
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
BASE_TARGET=${BASE_TARGET:-${BASE_DIR:?BASE_DIR names an earlier checkout}/target}
OUT=target/compare_profile
mkdir -p "$OUT"
cargo build --release --bins --examples --quiet
ROWS="put_lat 8|get_lat 8|fadd_lat 8|add_lat 8|put_signal_lat 8|msg_rate 8|add_rate 8|put_bw 65536|barrier_n2 0"
figures() { grep -E '^[a-z_0-9]+ [0-9]+ [0-9.]+ [a-zA-Z/]+$'; }
: > "$OUT/base.txt"; : > "$OUT/off.txt"; : > "$OUT/quiet.txt"; : > "$OUT/on.txt"
for round in $(seq "$ROUNDS"); do
  echo "== round $round/$ROUNDS"
  "$BASE_TARGET/release/rlaunch" -n 2 "$BASE_TARGET/release/examples/bench" --smoke | figures >> "$OUT/base.txt"
  target/release/rlaunch -n 2 target/release/examples/bench --smoke | figures >> "$OUT/off.txt"
  target/release/rlaunch -n 2 -x ONESIDE_WATCH=0 target/release/examples/bench --smoke | figures >> "$OUT/quiet.txt"
  target/release/rlaunch -n 2 --profile="$OUT/profile" target/release/examples/bench --smoke 2>/dev/null | figures >> "$OUT/on.txt"
done
echo
echo "== profiling off / base, 2 ranks over shm (median of $ROUNDS rounds)"
awk -v peer="base" -v rows="$ROWS" -f bench/ratios.awk "$OUT/off.txt" "$OUT/base.txt" | tee "$OUT/off_vs_base.txt"
echo
echo "== hang reports off too (ONESIDE_WATCH=0) / base"
awk -v peer="base" -v rows="$ROWS" -f bench/ratios.awk "$OUT/quiet.txt" "$OUT/base.txt" | tee "$OUT/quiet_vs_base.txt"
echo
echo "== profiling on / off (goal: put+quiet, put_lat 8, at most 1.15)"
awk -v peer="off" -v rows="$ROWS" -f bench/ratios.awk "$OUT/on.txt" "$OUT/off.txt" | tee "$OUT/on_vs_off.txt"
