#!/usr/bin/env bash
# What the C API costs over the Rust API: 8-byte put, get, fetch-add and
# compare-and-swap latency through shmem.h (bench/capi_lat.c, built with our
# oshcc) against the same loops through the Rust API (examples/bench), same
# method, alternating ROUNDS times in one run, 2 ranks, over each transport
# (shared memory, where shmem.h's inline direct paths skip the library, and
# tcp, where every call goes through it; and verbs, in one Soft-RoCE guest
# boot, see tests/vm/vm.sh, with the same release build). Prints C/Rust ratios of the medians; the goal is <= 1.05.
#
#   bench/compare_capi.sh         (ROUNDS=5, TRANSPORTS="shm tcp";
#                                  figures in target/compare_capi/)
#   TRANSPORTS=verbs bench/compare_capi.sh   (root and QEMU, as tests/vm)
set -euo pipefail
# This harness runs more ranks than a small machine has CPUs, on purpose:
# allow it, as --oversubscribe would (without it rlaunch refuses).
export RLAUNCH_OVERSUBSCRIBE=1
cd "$(dirname "$0")/.."
repo=$(pwd)
ROUNDS=${ROUNDS:-5}
TRANSPORTS=${TRANSPORTS:-shm tcp}
OUT=target/compare_capi
mkdir -p "$OUT"

echo "== building (release)"
cargo build --release --bins --examples --quiet
target/release/oshcc -O2 -Wall -o "$OUT/capi_lat" bench/capi_lat.c

RUST_ROWS='^(put|get|fadd|cswap)_lat 8 [0-9.]+ us$'
ratios() { # TRANSPORT: the C/Rust table of one transport's figures
  {
    echo
    echo "== C API / Rust API, oneside $1, 2 ranks (median of $ROUNDS rounds)"
    awk -v peer="Rust API" -v rows="put_lat 8|get_lat 8|fadd_lat 8|cswap_lat 8" -f bench/ratios.awk \
      "$OUT/c-$1.txt" "$OUT/rust-$1.txt" | sed 's/oneside/   C API/'
  } | tee -a "$OUT/ratios.txt"
}

: > "$OUT/ratios.txt"
for transport in $TRANSPORTS; do
  if [ "$transport" = verbs ]; then
    cargo build --release -p oneside-shmem -p rlaunch -p oneside --examples --quiet
    vb=$repo/target/release
    "$vb/oshcc" -O2 -Wall -o "$OUT/capi_lat_verbs" bench/capi_lat.c
    script="cd $repo
export ONESIDE_TRANSPORT=verbs ONESIDE_HEAP_SIZE=16M SHMEM_SYMMETRIC_SIZE=16M
for round in \$(seq $ROUNDS); do
  echo '--- c'; timeout 300 $vb/oshrun -np 2 $repo/$OUT/capi_lat_verbs
  echo '--- rust'; timeout 300 $vb/rlaunch -n 2 $vb/examples/bench --max 8
done"
    echo "== verbs: $ROUNDS rounds in one Soft-RoCE guest"
    VM_TIMEOUT=${VM_TIMEOUT:-1800} tests/vm/vm.sh "$script" > "$OUT/raw-verbs.txt"
    awk '/^--- c$/ { side = "c" } /^--- rust$/ { side = "rust" } side == "c" && /_lat 8 / { print }' \
      "$OUT/raw-verbs.txt" | grep -E "$RUST_ROWS" > "$OUT/c-verbs.txt"
    awk '/^--- c$/ { side = "c" } /^--- rust$/ { side = "rust" } side == "rust" { print }' \
      "$OUT/raw-verbs.txt" | grep -E "$RUST_ROWS" > "$OUT/rust-verbs.txt"
    ratios verbs
    continue
  fi
  export ONESIDE_TRANSPORT=$transport
  : > "$OUT/c-$transport.txt"
  : > "$OUT/rust-$transport.txt"
  for round in $(seq "$ROUNDS"); do
    echo "== $transport: round $round/$ROUNDS"
    timeout 120 target/release/oshrun -np 2 "$OUT/capi_lat" >> "$OUT/c-$transport.txt"
    timeout 120 target/release/rlaunch -n 2 target/release/examples/bench --max 8 \
      | grep -E "$RUST_ROWS" >> "$OUT/rust-$transport.txt"
  done
  ratios "$transport"
done
echo "goal: <= 1.05"
