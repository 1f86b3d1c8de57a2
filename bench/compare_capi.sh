#!/usr/bin/env bash
# What the C API costs over the Rust API: 8-byte put, get, fetch-add and
# compare-and-swap latency through shmem.h (bench/capi_lat.c, built with our
# oshcc) against the same loops through the Rust API (examples/bench), same
# method, alternating ROUNDS times in one run, 2 ranks, over each transport
# (shared memory, where shmem.h's inline direct paths skip the library, and
# tcp, where every call goes through it). Prints C/Rust ratios of the
# medians; the goal is <= 1.05.
#
#   bench/compare_capi.sh         (ROUNDS=5, TRANSPORTS="shm tcp";
#                                  figures in target/compare_capi/)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
TRANSPORTS=${TRANSPORTS:-shm tcp}
OUT=target/compare_capi
mkdir -p "$OUT"

echo "== building (release)"
cargo build --release --bins --examples --quiet
target/release/oshcc -O2 -Wall -o "$OUT/capi_lat" bench/capi_lat.c

: > "$OUT/ratios.txt"
for transport in $TRANSPORTS; do
  export ONESIDE_TRANSPORT=$transport
  : > "$OUT/c-$transport.txt"
  : > "$OUT/rust-$transport.txt"
  for round in $(seq "$ROUNDS"); do
    echo "== $transport: round $round/$ROUNDS"
    timeout 120 target/release/oshrun -np 2 "$OUT/capi_lat" >> "$OUT/c-$transport.txt"
    timeout 120 target/release/rlaunch -n 2 target/release/examples/bench --max 8 \
      | grep -E '^(put|get|fadd|cswap)_lat 8 [0-9.]+ us$' >> "$OUT/rust-$transport.txt"
  done
  {
    echo
    echo "== C API / Rust API, oneside $transport, 2 ranks (median of $ROUNDS rounds)"
    awk -v peer="Rust API" -v rows="put_lat 8|get_lat 8|fadd_lat 8|cswap_lat 8" -f bench/ratios.awk \
      "$OUT/c-$transport.txt" "$OUT/rust-$transport.txt" | sed 's/oneside/   C API/'
  } | tee -a "$OUT/ratios.txt"
done
echo "goal: <= 1.05"
