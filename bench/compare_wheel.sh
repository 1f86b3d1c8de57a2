#!/usr/bin/env bash
# The wheel against a `make install` prefix of the same tree: 8-byte put,
# get, fetch-add and compare-and-swap latency (bench/capi_lat.c) built by
# each installation's own oshcc and run by its own oshrun, alternating
# ROUNDS times in one run, 2 ranks, over shared memory and tcp. Prints
# wheel/prefix ratios of the medians; the goal is the same figures (1.00,
# within this machine's noise). The wheel is linked by zig against glibc
# 2.28 and built without debug information; the prefix by the host's
# linker with the release profile's.
#
#   bench/compare_wheel.sh        (ROUNDS=7, TRANSPORTS="shm tcp";
#                                  figures in target/compare_wheel/)
set -euo pipefail
# This harness runs more ranks than a small machine has CPUs, on purpose:
# allow it, as --oversubscribe would (without it rlaunch refuses).
export RLAUNCH_OVERSUBSCRIBE=1
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-7}
TRANSPORTS=${TRANSPORTS:-shm tcp}
OUT=$PWD/target/compare_wheel
rm -rf "$OUT" && mkdir -p "$OUT"

echo "== building the wheel and a make install prefix"
make wheel > "$OUT/wheel.log" 2>&1 || { tail -20 "$OUT/wheel.log"; exit 1; }
make install PREFIX="$OUT/prefix" > "$OUT/install.log" 2>&1 || { tail -20 "$OUT/install.log"; exit 1; }
python3 -m venv "$OUT/venv"
"$OUT/venv/bin/pip" install --quiet --disable-pip-version-check target/wheels/oneside-*-manylinux_2_28_x86_64.whl
"$OUT/venv/bin/oshcc" -O2 -Wall -o "$OUT/capi_lat_wheel" bench/capi_lat.c
"$OUT/prefix/bin/oshcc" -O2 -Wall -o "$OUT/capi_lat_prefix" bench/capi_lat.c

ROWS="put_lat 8|get_lat 8|fadd_lat 8|cswap_lat 8"
: > "$OUT/ratios.txt"
for transport in $TRANSPORTS; do
  export ONESIDE_TRANSPORT=$transport
  : > "$OUT/wheel-$transport.txt"
  : > "$OUT/prefix-$transport.txt"
  for round in $(seq "$ROUNDS"); do
    echo "== $transport: round $round/$ROUNDS"
    # Alternate which goes first, so a slow or fast phase of the vCPUs
    # falls on both alike.
    for side in $( ((round % 2)) && echo wheel prefix || echo prefix wheel); do
      bin=$OUT/venv/bin; [ "$side" = prefix ] && bin=$OUT/prefix/bin
      timeout 120 "$bin/oshrun" -np 2 "$OUT/capi_lat_$side" | grep -E '_lat 8 ' >> "$OUT/$side-$transport.txt"
    done
  done
  {
    echo
    echo "== wheel / make install, oneside $transport, 2 ranks (median of $ROUNDS rounds)"
    awk -v peer="make install" -v rows="$ROWS" -f bench/ratios.awk \
      "$OUT/wheel-$transport.txt" "$OUT/prefix-$transport.txt" | sed 's/oneside/  wheel/'
  } | tee -a "$OUT/ratios.txt"
done
echo "goal: 1.00 (the same performance)"
