#!/usr/bin/env bash
# What Python costs through shmem4py: 8-byte put+quiet and fetch-add latency
# from Python (bench/python_lat.py) next to the same loops in C
# (bench/capi_lat.c) built twice with our oshcc: as a program would be, with
# shmem.h's inline direct paths, and with -DONESIDE_NO_DIRECT, so that every
# call enters the library as shmem4py's calls do. Alternating ROUNDS times in
# one run, 2 PEs, over each transport; prints the medians and Python / C
# (library) ratios, and the binding's floor (shmem.my_pe() from Python). What
# Python adds over C (library) is shmem4py's own (cffi and NumPy argument
# handling): the library does the same work for both.
#
#   bench/compare_python.sh        (ROUNDS=5, TRANSPORTS="shm tcp"; needs
#                                   tests/python/run.sh's venv, which it makes)
set -euo pipefail
# This harness runs more ranks than a small machine has CPUs, on purpose:
# allow it, as --oversubscribe would (without it rlaunch refuses).
export RLAUNCH_OVERSUBSCRIBE=1
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
TRANSPORTS=${TRANSPORTS:-shm tcp}
OUT=target/compare_python
mkdir -p "$OUT"

echo "== building (release) and the shmem4py venv"
cargo build --release --quiet -p oneside-shmem -p rlaunch
PROFILE=release BUILD_ONLY=1 tests/python/run.sh >/dev/null
target/release/oshcc -O2 -Wall -o "$OUT/capi_lat" bench/capi_lat.c
target/release/oshcc -O2 -Wall -DONESIDE_NO_DIRECT -o "$OUT/capi_lat_lib" bench/capi_lat.c
PY=target/python/venv/bin/python

for transport in $TRANSPORTS; do
  : > "$OUT/$transport.txt"
  for round in $(seq "$ROUNDS"); do
    for side in inline library python; do
      case $side in
        inline) cmd=("$OUT/capi_lat") ;;
        library) cmd=("$OUT/capi_lat_lib") ;;
        python) cmd=("$PY" bench/python_lat.py) ;;
      esac
      ONESIDE_TRANSPORT=$transport target/release/oshrun -np 2 "${cmd[@]}" |
        awk -v side="$side" '/^(put|fadd|call)_lat 8 [0-9.]+ us$/ { print side, $1, $3 }' >> "$OUT/$transport.txt"
    done
  done
  echo
  echo "== $transport, 2 PEs, median of $ROUNDS alternating rounds (us)"
  python3 - "$OUT/$transport.txt" <<'PY'
import statistics, sys, collections
v = collections.defaultdict(list)
for line in open(sys.argv[1]):
    side, metric, us = line.split()
    v[(side, metric)].append(float(us))
m = {k: statistics.median(x) for k, x in v.items()}
print(f"{'metric':10s} {'C inline':>9s} {'C library':>10s} {'Python':>8s} {'Py/C lib':>9s} {'Py - C lib':>11s}")
for metric in ["put_lat", "fadd_lat"]:
    c, lib, py = m.get(("inline", metric)), m.get(("library", metric)), m.get(("python", metric))
    print(f"{metric:10s} {c:9.3f} {lib:10.3f} {py:8.3f} {py / lib:9.2f} {py - lib:11.3f}")
print(f"Python's floor, shmem.my_pe(): {m[('python', 'call_lat')]:.3f} us per call")
PY
done
