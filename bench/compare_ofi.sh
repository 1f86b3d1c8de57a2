#!/usr/bin/env bash
# oneside's ofi transport next to its two peers over the same libfabric and
# provider, two ranks on this host, in alternating rounds of one run:
#
# * oneside: bench/capi_lat.c (put, get, fetch-add and compare-and-swap
#   latency of 8 B through shmem.h, calibrated batches while the target
#   waits in a barrier) and tests-sos's shmem_bw_put_perf at 64 KiB, built
#   with our oshcc;
# * the floor: bench/ofi_floor.c, the same operations on raw libfabric
#   with the same endpoint (put, get and fetch-add latency of 8 B, put
#   bandwidth of 64 KiB windows), its target a process that only polls;
# * Sandia OpenSHMEM over the same libfabric (SOS=PREFIX, an install built
#   from its public sources outside this tree, with --enable-pmi-mpi and
#   launched by Open MPI's mpirun): the same two C programs built with its
#   oshcc.
#
# (examples/bench --smoke is not the measure: it times a few operations
# right after the target entered its barrier, before a long wait naps.)
#
# Needs libfabric-dev (the floor is compiled against it). Medians over
# ROUNDS (default 5) rounds; only the ratios mean anything here. BOUND
# (default 120) bounds each run in seconds.
#
# SOS_NOINJ=PREFIX adds a second Sandia OpenSHMEM build, configured the
# same way plus --disable-ofi-inject: its small puts then wait for
# delivery as oneside's and the floor's do, where the injecting build's
# quiet over tcp;ofi_rxm does not (the guide, performance.md).
#
# Bandwidth is tests-sos's shmem_bw_put_perf at 64 KiB twice: with
# blocking puts (put_bw, each put may reuse its source on return) and
# built with -DUSE_NONBLOCKING_API (put_bw_nbi: a window of put_nbi, then
# quiet). The floor's windows (64 writes, waited for once) are the second
# pattern, so its one figure stands for both rows.
#
# oneside's latencies are measured twice a round: as it runs by default,
# and with ONESIDE_OFI_CQ_WAIT=none (no wait descriptor on the CQ: the
# target's own wait serves, as the floor's does, and a target that
# computes is served only every 500 µs; docs/src/networks.md).
#
#   bench/compare_ofi.sh                               (floor only)
#   SOS=/tmp/sos/install SOS_NOINJ=/tmp/sos/install-noinj bench/compare_ofi.sh
set -euo pipefail
# This harness runs more ranks than a small machine has CPUs, on purpose:
# allow it, as --oversubscribe would (without it rlaunch refuses).
export RLAUNCH_OVERSUBSCRIBE=1
cd "$(dirname "$0")/.."
OUT=target/compare-ofi
rm -rf "$OUT" && mkdir -p "$OUT"
ROUNDS=${ROUNDS:-5}
BOUND=${BOUND:-120}
read -r -a providers <<< "${PROVIDERS:-tcp;ofi_rxm shm}"
suites=${SUITES:-../shared/suites}

echo "== building"
cargo build --release --workspace --lib --bins --examples --quiet
cc -O2 -Wall -o "$OUT/ofi_floor" bench/ofi_floor.c -lfabric
target/release/oshcc -O2 -Wall -o "$OUT/capi_lat" bench/capi_lat.c
perf=$suites/tests-sos/test/performance/shmem_perf_suite
target/release/oshcc -O2 -I"$perf" -o "$OUT/bw_put" "$perf/shmem_bw_put_perf.c" -lm
target/release/oshcc -O2 -DUSE_NONBLOCKING_API -I"$perf" -o "$OUT/bw_put_nbi" "$perf/shmem_bw_put_perf.c" -lm
# Each Sandia OpenSHMEM build named: "sos" (SOS), "sosni" (SOS_NOINJ).
peers=()
for peer in sos:${SOS:-} sosni:${SOS_NOINJ:-}; do
  name=${peer%%:*} prefix=${peer#*:}
  [ -n "$prefix" ] || continue
  peers+=("$name:$prefix")
  "$prefix/bin/oshcc" -O2 -o "$OUT/capi_lat_$name" bench/capi_lat.c
  "$prefix/bin/oshcc" -O2 -I"$perf" -o "$OUT/bw_put_$name" "$perf/shmem_bw_put_perf.c" -lm
  "$prefix/bin/oshcc" -O2 -DUSE_NONBLOCKING_API -I"$perf" -o "$OUT/bw_put_nbi_$name" "$perf/shmem_bw_put_perf.c" -lm
done

# A run that fails or times out is noted (and printed at the end), and the
# rounds go on: Sandia OpenSHMEM's bandwidth test hung in 9 runs of 10 here.
note() { echo "failed or timed out: $*" | tee -a "$OUT/notes.txt" >&2; }

figures() { grep -E '^[a-z_0-9]+ [0-9]+ [0-9.]+ ' || true; }
# tests-sos's bandwidth table ("  65536  <MB/s> ...") as one of our lines.
bw_line() { awk -v name="${1:-put_bw}" '$1 == 65536 && $2 ~ /^[0-9.]+$/ { print name, 65536, $2, "MB/s"; exit }'; }

for provider in "${providers[@]}"; do
  tag=${provider//;/_}
  for round in $(seq "$ROUNDS"); do
    echo "-- $provider, round $round"
    timeout "$BOUND" "$OUT/ofi_floor" "$provider" 2000 < /dev/null | figures \
      | awk '{ print } $1 == "put_bw" { $1 = "put_bw_nbi"; print }' >> "$OUT/floor-$tag.txt" \
      || note "raw floor, $provider, round $round"
    ONESIDE_TRANSPORT=ofi ONESIDE_OFI_PROVIDER=$provider timeout "$BOUND" target/release/oshrun -np 2 \
      "$OUT/capi_lat" | figures >> "$OUT/c-$tag.txt" || note "oneside capi_lat, $provider, round $round"
    ONESIDE_OFI_CQ_WAIT=none ONESIDE_TRANSPORT=ofi ONESIDE_OFI_PROVIDER=$provider timeout "$BOUND" \
      target/release/oshrun -np 2 "$OUT/capi_lat" | figures >> "$OUT/cnone-$tag.txt" \
      || note "oneside capi_lat without a CQ wait descriptor, $provider, round $round"
    ONESIDE_TRANSPORT=ofi ONESIDE_OFI_PROVIDER=$provider timeout "$BOUND" target/release/oshrun -np 2 \
      "$OUT/bw_put" -s 65536 -e 65536 | bw_line >> "$OUT/c-$tag.txt" \
      || note "oneside shmem_bw_put_perf, $provider, round $round"
    ONESIDE_TRANSPORT=ofi ONESIDE_OFI_PROVIDER=$provider timeout "$BOUND" target/release/oshrun -np 2 \
      "$OUT/bw_put_nbi" -s 65536 -e 65536 | bw_line put_bw_nbi >> "$OUT/c-$tag.txt" \
      || note "oneside shmem_bw_put_perf (nbi), $provider, round $round"
    for peer in "${peers[@]}"; do
      name=${peer%%:*}
      run() { SHMEM_OFI_PROVIDER=$provider timeout "$BOUND" mpirun --allow-run-as-root --oversubscribe -np 2 "$@"; }
      run "$OUT/capi_lat_$name" | figures >> "$OUT/$name-$tag.txt" || note "$name capi_lat, $provider, round $round"
      run "$OUT/bw_put_$name" -s 65536 -e 65536 | bw_line >> "$OUT/$name-$tag.txt" \
        || note "$name shmem_bw_put_perf, $provider, round $round"
      run "$OUT/bw_put_nbi_$name" -s 65536 -e 65536 | bw_line put_bw_nbi >> "$OUT/$name-$tag.txt" \
        || note "$name shmem_bw_put_perf (nbi), $provider, round $round"
    done
  done
done

for provider in "${providers[@]}"; do
  tag=${provider//;/_}
  echo
  echo "== oneside ofi / raw libfabric ($provider), $ROUNDS alternating rounds (medians)"
  awk -v peer="raw libfabric" -v rows="put_lat 8|get_lat 8|fadd_lat 8|put_bw 65536|put_bw_nbi 65536" \
    -f bench/ratios.awk "$OUT/c-$tag.txt" "$OUT/floor-$tag.txt" | tee -a "$OUT/ratios.txt"
  echo "== oneside ofi without a CQ wait descriptor (ONESIDE_OFI_CQ_WAIT=none) / raw libfabric ($provider)"
  awk -v peer="raw libfabric" -v rows="put_lat 8|get_lat 8|fadd_lat 8" \
    -f bench/ratios.awk "$OUT/cnone-$tag.txt" "$OUT/floor-$tag.txt" | tee -a "$OUT/ratios.txt"
  echo "== oneside ofi without a CQ wait descriptor / with one, the default ($provider)"
  awk -v peer="default" -v rows="put_lat 8|get_lat 8|fadd_lat 8|cswap_lat 8" \
    -f bench/ratios.awk "$OUT/cnone-$tag.txt" "$OUT/c-$tag.txt" | tee -a "$OUT/ratios.txt"
  for peer in "${peers[@]}"; do
    name=${peer%%:*}
    label=$([ "$name" = sos ] && echo "SOS" || echo "SOS no-inject")
    echo "== oneside ofi / Sandia OpenSHMEM, $label build ($provider, same C programs), $ROUNDS alternating rounds (medians)"
    awk -v peer="$label" -v rows="put_lat 8|get_lat 8|fadd_lat 8|cswap_lat 8|put_bw 65536|put_bw_nbi 65536" \
      -f bench/ratios.awk "$OUT/c-$tag.txt" "$OUT/$name-$tag.txt" | tee -a "$OUT/ratios.txt"
  done
done
if [ -s "$OUT/notes.txt" ]; then echo; echo "== runs that failed or timed out"; cat "$OUT/notes.txt"; fi
