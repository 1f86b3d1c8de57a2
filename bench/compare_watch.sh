#!/usr/bin/env bash
# What hang reports and the checking mode's hooks cost when not asked for
# (issue "See inside a job"): examples/bench --smoke at 2 ranks on shared
# memory, alternating ROUNDS times in one run between
#   base:  rlaunch and bench built from BASE_DIR (an earlier checkout, built
#          there with cargo build --release --bins --examples),
#   watch: this tree as rlaunch runs it by default (watchdog on: ranks
#          record each blocking call and wait, for hang reports),
#   off:   this tree with -x ONESIDE_WATCH=0 (nothing recorded).
# Prints watch/base and off/base, medians over the rounds.
#
#   BASE_DIR=/tmp/base ROUNDS=9 bench/compare_watch.sh   (results in target/compare_watch/)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
BASE_TARGET=${BASE_TARGET:-${BASE_DIR:?BASE_DIR names an earlier checkout}/target}
OUT=target/compare_watch
mkdir -p "$OUT"
cargo build --release --bins --examples --quiet
ROWS="put_lat 8|get_lat 8|fadd_lat 8|add_lat 8|put_signal_lat 8|msg_rate 8|add_rate 8|put_bw 65536|barrier_n2 0"
figures() { grep -E '^[a-z_0-9]+ [0-9]+ [0-9.]+ [a-zA-Z/]+$'; }
: > "$OUT/base.txt"; : > "$OUT/watch.txt"; : > "$OUT/off.txt"
for round in $(seq "$ROUNDS"); do
  echo "== round $round/$ROUNDS"
  "$BASE_TARGET/release/rlaunch" -n 2 "$BASE_TARGET/release/examples/bench" --smoke | figures >> "$OUT/base.txt"
  target/release/rlaunch -n 2 target/release/examples/bench --smoke | figures >> "$OUT/watch.txt"
  target/release/rlaunch -n 2 -x ONESIDE_WATCH=0 target/release/examples/bench --smoke | figures >> "$OUT/off.txt"
done
echo
echo "== hang reports on (the default) / base, 2 ranks over shm (median of $ROUNDS rounds)"
awk -v peer="base" -v rows="$ROWS" -f bench/ratios.awk "$OUT/watch.txt" "$OUT/base.txt" | tee "$OUT/watch_vs_base.txt"
echo
echo "== ONESIDE_WATCH=0 / base"
awk -v peer="base" -v rows="$ROWS" -f bench/ratios.awk "$OUT/off.txt" "$OUT/base.txt" | tee "$OUT/off_vs_base.txt"
