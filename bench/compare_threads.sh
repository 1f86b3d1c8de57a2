#!/usr/bin/env bash
# Threads and contexts, measured two ways in one run:
#
# 1. What sharing the world between threads costs a program with one
#    thread: 8-byte put (+ quiet), get, fetch-add and compare-and-swap
#    latency through examples/bench at HEAD against the same program built
#    from BASE, the last commit before World became Send + Sync (its cells
#    and RefCells), alternating ROUNDS times, over shm and tcp. The goal is
#    a ratio <= 1.05.
# 2. How the message rate scales with threads: examples/ctx_rate, 8-byte
#    puts (windows of 64 put_nbi + quiet) and fetch-adds from 1 and 2
#    threads of rank 0, each on its own context, to rank 1; over shm and
#    tcp. The goal is 2 threads >= 1.7x one thread over tcp (verbs: in the
#    Soft-RoCE guest), and no slower over shm.
#
#   bench/compare_threads.sh      (ROUNDS=5, BASE=acdfbe6; target/compare_threads/)
set -euo pipefail
# This harness runs more ranks than a small machine has CPUs, on purpose:
# allow it, as --oversubscribe would (without it rlaunch refuses).
export RLAUNCH_OVERSUBSCRIBE=1
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
BASE=${BASE:-acdfbe6}
OUT=target/compare_threads
mkdir -p "$OUT"

echo "== building HEAD and $BASE (release)"
cargo build --release --bins --examples --quiet
rm -rf "$OUT/base"
git worktree prune
git worktree add --detach "$OUT/base" "$BASE" >/dev/null
(cd "$OUT/base" && CARGO_TARGET_DIR="$PWD/../base-target" cargo build --release -p oneside --examples --quiet)
base_bench=$OUT/base-target/release/examples/bench

: > "$OUT/ratios.txt"
for transport in shm tcp; do
  export ONESIDE_TRANSPORT=$transport
  : > "$OUT/head-$transport.txt"
  : > "$OUT/base-$transport.txt"
  for round in $(seq "$ROUNDS"); do
    echo "== $transport: round $round/$ROUNDS"
    for side in head base; do
      exe=target/release/examples/bench
      [ "$side" = base ] && exe=$base_bench
      timeout 120 target/release/rlaunch -n 2 "$exe" --max 8 \
        | grep -E '^(put|get|fadd|cswap)_lat 8 [0-9.]+ us$' >> "$OUT/$side-$transport.txt"
    done
  done
  {
    echo
    echo "== one thread: HEAD / $BASE (World without threads), $transport, 2 ranks, median of $ROUNDS rounds"
    awk -v peer="$BASE" -v rows="put_lat 8|get_lat 8|fadd_lat 8|cswap_lat 8" -f bench/ratios.awk \
      "$OUT/head-$transport.txt" "$OUT/base-$transport.txt" | sed 's/ oneside/    HEAD/'
  } | tee -a "$OUT/ratios.txt"
done
git worktree remove --force "$OUT/base"
unset ONESIDE_TRANSPORT

for transport in shm tcp; do
  {
    echo
    echo "== message rate with threads on private contexts, $transport (examples/ctx_rate, median of $ROUNDS)"
    timeout 300 target/release/rlaunch -n 2 --bind-to none --transport "$transport" \
      target/release/examples/ctx_rate "$ROUNDS"
  } | tee -a "$OUT/ratios.txt"
done
echo
echo "goals: one-thread ratio <= 1.05; 2 threads / 1 thread >= 1.7 (tcp, verbs), >= 1.0 (shm)"
