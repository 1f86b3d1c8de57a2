#!/usr/bin/env bash
# C against C: the OSU Micro-Benchmarks 6.1 OpenSHMEM programs
# (../shared/suites/osu-micro-benchmarks, not copied, not edited), built once
# with oneside's oshcc and once with Open MPI 4.1.4's, run alternately in one
# run on this machine's shared memory at 2 and 4 PEs. Prints oneside/oshmem
# ratios of the medians over ROUNDS rounds, and every figure to
# target/compare_osu/{oneside,oshmem}.txt as "<metric> <bytes> <value> <unit>":
#   put_lat N, get_lat N      osu_oshm_put/get (2 PEs): blocking putmem/getmem
#   put_rate N                osu_oshm_put_mr: putmem windows, messages/s
#   get_nbi_rate N            osu_oshm_get_mr_nb: getmem_nbi windows, messages/s
#   <op>_lat 8                osu_oshm_atomics (2 PEs), the 64-bit rows
#                             (fadd finc add inc cswap swap set fetch)
#   barrier_lat 0             osu_oshm_barrier: shmem_barrier over all PEs
#   bcast_lat N               osu_oshm_broadcast: shmem_broadcast32
#   reduce_lat N              osu_oshm_reduce: shmem_float_sum_to_all
#   fcollect_lat N            osu_oshm_fcollect: shmem_fcollect32
# Each metric is suffixed with _np2 or _np4 in the ratio table. Both sides are
# built -O2 with -DFLOAT_PRECISION=4, so the tables keep 4 decimals.
#
#   bench/compare_osu.sh          (ROUNDS=3, NPS="2 4", OSHRUN_TIMEOUT=300 s)
#   BASE=DIR bench/compare_osu.sh also builds the programs with another
#                                 build's oshcc (DIR/oshcc, e.g. an older
#                                 commit's target/release), runs them in the
#                                 same rounds, and prints this build / that
#                                 one: an A/B for regressions, in one run.
#
# The peer: Debian's oshmem, spml ucx over shared memory (UCX_TLS=sm,self),
# --oversubscribe for 4 PEs on 2 cores. Every one of its programs SIGSEGVs in
# shmem_finalize after printing its table here, so its exit status is ignored
# and its table is read (bench/oshmem_common.sh). Its 32-bit cswap smashes
# the stack (open-mpi/ompi#11257): osu_oshm_atomics links
# bench/omb_int_cswap.c on that side only. oneside runs under its own oshrun
# (rlaunch) with its default transport, shared memory.
set -euo pipefail
# This harness runs more ranks than a small machine has CPUs, on purpose:
# allow it, as --oversubscribe would (without it rlaunch refuses).
export RLAUNCH_OVERSUBSCRIBE=1
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
NPS=${NPS:-2 4}
OSHRUN_TIMEOUT=${OSHRUN_TIMEOUT:-300}
OUT=target/compare_osu
LOG_NAME=compare_osu
. bench/oshmem_common.sh
oshm_setup
export SHMEM_SYMMETRIC_SIZE=256M

log "building oneside (release)"
cargo build --release -p oneside-shmem -p rlaunch --quiet
PAIR_PROGS=(put get atomics)
ALL_PROGS=(put_mr get_mr_nb barrier broadcast reduce fcollect)
OSU_CFLAGS=(-DFLOAT_PRECISION=4)
SIDES=(oneside oshmem)
if [ -n "${BASE:-}" ]; then
  BASE=$(cd "$BASE" && pwd)
  [ -x "$BASE/oshcc" ] && [ -x "$BASE/oshrun" ] || { echo "BASE=$BASE has no oshcc and oshrun" >&2; exit 1; }
  SIDES+=(base)
fi
for side in "${SIDES[@]}"; do
  mkdir -p "$OUT/$side"
  case $side in
    oneside) OSHCC=target/release/oshcc ;;
    base) OSHCC=$BASE/oshcc ;;
    *) OSHCC=oshcc ;;
  esac
  for p in "${PAIR_PROGS[@]}" "${ALL_PROGS[@]}"; do
    extra=()
    [ "$side/$p" = oshmem/atomics ] && extra=(bench/omb_int_cswap.c)
    BUILD_DIR=$OUT/$side osu_build "$p" ${extra[@]+"${extra[@]}"}
  done
done
unset OSHCC

# runner SIDE NP: sets OSHRUN for one side at NP PEs.
runner() {
  case $1 in
    oneside) OSHRUN=(timeout -k 5 "$OSHRUN_TIMEOUT" target/release/oshrun -np "$2") ;;
    base) OSHRUN=(timeout -k 5 "$OSHRUN_TIMEOUT" "$BASE/oshrun" -np "$2") ;;
    oshmem) OSHRUN=(timeout -k 5 "$OSHRUN_TIMEOUT" oshrun -np "$2" --oversubscribe --mca spml ucx -x UCX_TLS=sm,self) ;;
  esac
}
# rows METRIC NP SIZE...: an awk program turning "<size> <value>" rows into
# figures, for the listed sizes.
rows() {
  local metric=$1 np=$2; shift 2
  local pattern
  pattern=$(IFS='|'; echo "$*")
  echo '$1 ~ /^('"$pattern"')$/ && NF == 2 { printf "'"$metric"'_np'"$np"' %d %.4f '"${UNIT:-us}"'\n", $1, $2 }'
}
LAT_SIZES=(8 4096 65536 1048576)
COLL_SIZES=(8 4096 65536 1048576)
ATOMICS='$1 ~ /^shmem_longlong_(fadd|finc|add|inc|cswap|swap|set|fetch)$/ && NF == 3 {
  printf "%s_lat_np2 8 %.4f us\n", substr($1, 16), $3 }'

for side in "${SIDES[@]}"; do : > "$OUT/$side.txt"; done
status=0
start=$(date +%s)
for round in $(seq "$ROUNDS"); do
  for np in $NPS; do
    log "round $round/$ROUNDS, $np PEs"
    for side in "${SIDES[@]}"; do
      runner "$side" "$np"
      bin=$OUT/$side/osu_oshm
      {
        if [ "$np" = 2 ]; then
          oshm_run "$side-np2-put" 4 "$(rows put_lat 2 "${LAT_SIZES[@]}")" "${bin}_put" heap
          oshm_run "$side-np2-get" 4 "$(rows get_lat 2 "${LAT_SIZES[@]}")" "${bin}_get" heap
          oshm_run "$side-np2-atomics" 8 "$ATOMICS" "${bin}_atomics" heap
        fi
        oshm_run "$side-np$np-put_mr" 2 "$(UNIT=msg/s rows put_rate "$np" 8 4096)" "${bin}_put_mr" heap
        oshm_run "$side-np$np-get_mr_nb" 2 "$(UNIT=msg/s rows get_nbi_rate "$np" 8 4096)" "${bin}_get_mr_nb" heap
        oshm_run "$side-np$np-barrier" 1 \
          '$1 ~ /^[0-9.]+$/ && NF == 1 { printf "barrier_lat_np'"$np"' 0 %.4f us\n", $1 }' "${bin}_barrier"
        oshm_run "$side-np$np-broadcast" 4 "$(rows bcast_lat "$np" "${COLL_SIZES[@]}")" "${bin}_broadcast"
        oshm_run "$side-np$np-reduce" 4 "$(rows reduce_lat "$np" "${COLL_SIZES[@]}")" "${bin}_reduce"
        oshm_run "$side-np$np-fcollect" 4 "$(rows fcollect_lat "$np" "${COLL_SIZES[@]}")" "${bin}_fcollect"
      } >> "$OUT/$side.txt"
    done
  done
done
log "done: $ROUNDS round(s) in $(( $(date +%s) - start )) s"

table_rows=()
for np in $NPS; do
  if [ "$np" = 2 ]; then
    for s in "${LAT_SIZES[@]}"; do table_rows+=("put_lat_np2 $s" "get_lat_np2 $s"); done
    for op in fadd finc add inc cswap swap set fetch; do table_rows+=("${op}_lat_np2 8"); done
  fi
  table_rows+=("put_rate_np$np 8" "put_rate_np$np 4096" "get_nbi_rate_np$np 8" "get_nbi_rate_np$np 4096")
  table_rows+=("barrier_lat_np$np 0")
  for m in bcast_lat reduce_lat fcollect_lat; do
    for s in "${COLL_SIZES[@]}"; do table_rows+=("${m}_np$np $s"); done
  done
done
echo
echo "== OSU OpenSHMEM 6.1, oneside (shm) / Open MPI 4.1.4 oshmem (UCX sm), median of $ROUNDS rounds"
awk -v peer=oshmem -v rows="$(IFS='|'; echo "${table_rows[*]}")" -f bench/ratios.awk \
  "$OUT/oneside.txt" "$OUT/oshmem.txt" | tee "$OUT/ratios.txt"
echo "goal: <= 1.00 where lower is better (latency), >= 1.00 where higher is better (rates)"
if [ -n "${BASE:-}" ]; then
  echo
  echo "== this build / BASE ($BASE), same rounds, median of $ROUNDS"
  awk -v peer=base -v rows="$(IFS='|'; echo "${table_rows[*]}")" -f bench/ratios.awk \
    "$OUT/oneside.txt" "$OUT/base.txt" | tee "$OUT/ratios_base.txt"
fi
exit "$status"
