#!/usr/bin/env bash
# Side-by-side for team collectives on shared memory, at 2, 4 and 8 ranks on
# this 2-core machine (4 and 8 oversubscribed, alike for every side), in one
# run: oneside (examples/bench --only-coll) against Open MPI 4.1.4's OpenSHMEM
# (the OSU OpenSHMEM collective benchmarks, bench/oshmem_coll.sh) and Open
# MPI's MPI collectives (bench/mpi_coll.c), alternating ROUNDS times, the
# order of the three turning each round. Prints, per rank count, each figure
# of each side (medians over the rounds), the best peer and ours / best peer.
# All sides report OSU's convention: each call timed alone, an untimed
# barrier after each data collective, the mean over the ranks of each rank's
# mean time per call. Metric names (<metric> <bytes> <value> us):
#   coll_barrier_lat 0, bcast_lat N, reduce_{f64,i64,f32}_sum_lat N (N bytes
#   of array), fcollect_lat N, collect_lat N (N bytes from each rank),
#   alltoall_lat N (N bytes per destination). OSU's OpenSHMEM reduce is an
#   f32 sum (compared with our reduce_f32_sum_lat) and it has no alltoall:
#   for reduce_f64/i64 and alltoall, MPI is the only peer.
#
# LOAD=1 also runs oneside under one busy CPU-bound process (started before
# and killed after each loaded run) in every round, and prints oneside loaded
# / oneside quiet (goal <= 2). Both of those runs make OSU's counts of calls
# (examples/bench --osu-iters: 1000 up to 8 KiB, 100 above, as the peers),
# so a time slice of the busy process is as likely to land in one of our
# figures' windows as in a peer's; the quiet one is an extra run
# ("ours-osu"). LOAD_PEERS=1 runs the peers under load too and prints ours /
# best peer under load and each peer's own loaded / quiet count, the same
# measure for runtimes that spin; loaded, the OSU programs run
# LOAD_ITERS (100) calls per size after their warm-up instead of 1000 and
# mpi_coll caps each size at about a second (its --budget), else a loaded
# round at 4 ranks lasts many minutes.
#
#   bench/compare_coll.sh      (NPS="2 4 8" ROUNDS=3 LOAD=0 MAX=1048576;
#                               results in target/compare_coll/)
# OURS=0 runs the peers only; BUILD=0 skips `cargo build`; RLAUNCH and BENCH
# name our launcher and benchmark; RUN_TIMEOUT bounds each run (600 s).
# Each run's output is kept in target/compare_coll/raw/.
set -euo pipefail
# This harness runs more ranks than a small machine has CPUs, on purpose:
# allow it, as --oversubscribe would (without it rlaunch refuses).
export RLAUNCH_OVERSUBSCRIBE=1
cd "$(dirname "$0")/.."
NPS=${NPS:-"2 4 8"}
ROUNDS=${ROUNDS:-3}
LOAD=${LOAD:-0}
LOAD_PEERS=${LOAD_PEERS:-0}
LOAD_ITERS=${LOAD_ITERS:-100}
MAX=${MAX:-1048576}
OURS=${OURS:-1}
BUILD=${BUILD:-1}
RUN_TIMEOUT=${RUN_TIMEOUT:-600}
RLAUNCH=${RLAUNCH:-target/release/rlaunch}
BENCH=${BENCH:-target/release/examples/bench}
OUT=target/compare_coll
mkdir -p "$OUT/raw"

if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
  echo "== installing Open MPI (Debian openmpi-bin, libopenmpi-dev)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openmpi-bin libopenmpi-dev >/dev/null
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=(mpirun --oversubscribe --mca btl self,vader)

echo "== building"
if [ "$OURS" = 1 ] && [ "$BUILD" = 1 ]; then cargo build --release --bins --examples --quiet; fi
mpicc -O2 -o "$OUT/mpi_coll" bench/mpi_coll.c
BUILD_ONLY=1 bench/oshmem_coll.sh

load_pid=
stop_load() { if [ -n "$load_pid" ]; then kill "$load_pid" 2>/dev/null || true; wait "$load_pid" 2>/dev/null || true; load_pid=; fi; }
trap stop_load EXIT
start_load() { timeout "$((RUN_TIMEOUT + 60))" sh -c 'while :; do :; done' & load_pid=$!; }

status=0
warn() { echo "compare_coll: WARNING: $*" >&2; status=1; }
# side NAME NP ROUND SUFFIX: one run of one side, figures appended to
# $OUT/NAME$SUFFIX-npNP.txt.
side() {
  local name=$1 np=$2 round=$3 sfx=$4 rc=0 t0=$SECONDS iters=
  local file="$OUT/$name$sfx-np$np.txt" raw="$OUT/raw/$name$sfx-np$np-$round"
  [ -n "$sfx" ] && { start_load; iters=$LOAD_ITERS; }
  case $name in
    ours|ours-osu)
      local counts=()
      [ "$name" = ours-osu ] || [ -n "$sfx" ] && counts=(--osu-iters)
      timeout -k 5 "$RUN_TIMEOUT" "$RLAUNCH" -n "$np" "$BENCH" --only-coll ${counts[@]+"${counts[@]}"} --max "$MAX" >"$raw.out" 2>"$raw.err" || rc=$?
      grep -E '^(coll_barrier_lat|bcast_lat|reduce_[a-z0-9]+_[a-z]+_lat|fcollect_lat|collect_lat|alltoall_lat) [0-9]+ [0-9.]+ us$' \
        "$raw.out" >> "$file" || true ;;
    oshmem)
      NP=$np ROUNDS=1 FIRST_ROUND=$round MAX=$MAX ITERS=$iters SKIP_BUILD=1 OSHRUN_TIMEOUT=$RUN_TIMEOUT RAW="$raw" \
        bench/oshmem_coll.sh >>"$file" 2>"$raw.err" || rc=$? ;;
    mpi)
      timeout -k 5 "$RUN_TIMEOUT" "${MPIRUN[@]}" -n "$np" "$OUT/mpi_coll" --max "$MAX" >"$raw.out" 2>"$raw.err" || rc=$?
      cat "$raw.out" >> "$file" ;;
  esac
  stop_load
  echo "   $name$sfx: $((SECONDS - t0)) s"
  [ "$rc" -eq 0 ] || warn "$name at $np ranks, round $round$sfx: exit status $rc; see $raw.*"
}

sides=(oshmem mpi)
[ "$OURS" = 1 ] && sides=(ours oshmem mpi)
loaded=()
if [ "$LOAD" = 1 ]; then
  [ "$OURS" = 1 ] && { loaded=(ours); sides+=(ours-osu); }
  [ "$LOAD_PEERS" = 1 ] && loaded+=(oshmem mpi)
fi
rm -f "$OUT"/*-np*.txt "$OUT"/*.svg
for np in $NPS; do
  for s in ours ours-osu oshmem mpi; do : > "$OUT/$s-np$np.txt"; done
  for s in ${loaded[@]+"${loaded[@]}"}; do : > "$OUT/$s-loaded-np$np.txt"; done
done
# turn K ELEMENT...: the elements, starting at the Kth (rotating each round).
turn() { local k=$1; shift; local a=("$@") i; for i in "${!a[@]}"; do echo "${a[$(( (i + k) % ${#a[@]} ))]}"; done; }

start=$(date +%s)
for round in $(seq "$ROUNDS"); do
  for np in $NPS; do
    echo "== round $round/$ROUNDS, $np ranks"
    for s in $(turn "$((round - 1))" "${sides[@]}"); do side "$s" "$np" "$round" ""; done
    if [ ${#loaded[@]} -gt 0 ]; then
      for s in $(turn "$((round - 1))" "${loaded[@]}"); do side "$s" "$np" "$round" -loaded; done
    fi
  done
done
echo "== $ROUNDS round(s) in $(( $(date +%s) - start )) s"

: > "$OUT/ratios.txt"
for np in $NPS; do
  {
    echo
    echo "== oneside / best of Open MPI oshmem (UCX sm) and MPI (btl vader), $np ranks, median of $ROUNDS rounds"
    awk -f bench/best_ratios.awk -v names="oneside|oshmem|mpi" -v goal=1.0 \
      "$OUT/ours-np$np.txt" "$OUT/oshmem-np$np.txt" "$OUT/mpi-np$np.txt"
    echo "goal: <= 1.0 (latency)"
    if [ "$LOAD" = 1 ] && [ "$OURS" = 1 ] && [ "$LOAD_PEERS" = 1 ]; then
      echo
      echo "== under one busy process: oneside / best peer, $np ranks (oshmem: OSU with -i $LOAD_ITERS)"
      awk -f bench/best_ratios.awk -v names="oneside|oshmem|mpi" -v goal=1.0 \
        "$OUT/ours-loaded-np$np.txt" "$OUT/oshmem-loaded-np$np.txt" "$OUT/mpi-loaded-np$np.txt"
    fi
    if [ "$LOAD" = 1 ] && [ "$OURS" = 1 ]; then
      echo
      echo "== oneside loaded / oneside quiet, $np ranks, same run, both with OSU's counts of calls"
      awk -f bench/best_ratios.awk -v names="loaded|quiet" -v goal=2 \
        "$OUT/ours-loaded-np$np.txt" "$OUT/ours-osu-np$np.txt"
      echo "goal: <= 2"
    fi
    if [ "$LOAD" = 1 ] && [ "$LOAD_PEERS" = 1 ]; then
      echo
      echo "== each peer loaded / that peer quiet, $np ranks, same run (the same measure for the spinning peers)"
      for s in oshmem mpi; do
        printf '%-8s' "$s:"
        awk -f bench/best_ratios.awk -v names="loaded|quiet" -v goal=2 \
          "$OUT/$s-loaded-np$np.txt" "$OUT/$s-np$np.txt" | tail -n 1
      done
      echo "(oshmem loaded runs $LOAD_ITERS calls per size, quiet 1000: its loaded windows are shorter)"
    fi
  } | tee -a "$OUT/ratios.txt"
done

echo
bench/plot_coll.sh "$OUT" || warn "plotting failed"
echo "raw figures: $OUT/{ours,oshmem,mpi}[-loaded]-npN.txt; tables: $OUT/ratios.txt; plots: $OUT/*.svg"
exit "$status"
