#!/usr/bin/env bash
# Side-by-side for the rest of the one-sided model on shared memory:
# oneside's atomics, add rate, put-with-signal and non-blocking puts
# (examples/bench --only-ops) against Open MPI 4.1.4's OpenSHMEM measured by
# the OSU OpenSHMEM benchmarks and bench/oshm_signal.c (bench/oshmem_peer.sh),
# alternating ROUNDS times in one run. Prints oneside/oshmem ratios (medians
# over the rounds), and our fetch-add against one cross-core cache-line
# round trip measured in the same run. Open MPI's oshmem crashes in
# shmem_finalize after printing its table on this machine: oshmem_peer.sh
# reads the table and ignores that exit status.
#
#   bench/compare_ops.sh        (ROUNDS=3 by default; results in target/compare_ops/)
set -euo pipefail
# This harness runs more ranks than a small machine has CPUs, on purpose:
# allow it, as --oversubscribe would (without it rlaunch refuses).
export RLAUNCH_OVERSUBSCRIBE=1
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
OUT=target/compare_ops
mkdir -p "$OUT"

echo "== building"
cargo build --release --bins --examples --quiet
RLAUNCH=target/release/rlaunch
BENCH=target/release/examples/bench

: > "$OUT/ours.txt"
: > "$OUT/peer.txt"
for round in $(seq "$ROUNDS"); do
  echo "== round $round/$ROUNDS"
  ROUNDS=1 bench/oshmem_peer.sh >> "$OUT/peer.txt"
  "$RLAUNCH" -n 2 "$BENCH" --only-ops | grep -E '^[a-z_0-9]+ [0-9]+ [0-9.]+ [a-zA-Z/]+$' >> "$OUT/ours.txt"
done

echo
echo "== oneside shm / Open MPI oshmem (UCX sm), 2 ranks (median of $ROUNDS rounds)"
awk -v peer="oshmem" -f bench/ratios.awk \
  -v rows="fadd_lat 8|cswap_lat 8|add_lat 8|put_signal_lat 8|put_signal_lat 4096|put_signal_lat 65536|put_nbi_bw 65536|put_nbi_bw 1048576" \
  "$OUT/ours.txt" "$OUT/peer.txt" | tee "$OUT/ratios.txt"
echo "goal: fetch-add latency <= 1.0x oshmem's"
echo
echo "== fetch-add latency against one cache-line round trip between the two ranks, same run"
awk -v peer="line round trip" -f bench/ratios.awk -v rows="fadd_lat 8" \
  <(grep '^fadd_lat' "$OUT/ours.txt") <(grep '^line_lat' "$OUT/ours.txt" | sed 's/^line_lat/fadd_lat/') \
  | tee -a "$OUT/ratios.txt"
echo "goal: <= 2"
echo
echo "== non-blocking against blocking puts in the same windows (oneside), same run"
awk -v peer="blocking" -f bench/ratios.awk -v rows="put_nbi_bw 65536|put_nbi_bw 1048576" \
  <(grep '^put_nbi_bw' "$OUT/ours.txt") <(grep '^put_win_bw' "$OUT/ours.txt" | sed 's/^put_win_bw/put_nbi_bw/') | tee -a "$OUT/ratios.txt"
