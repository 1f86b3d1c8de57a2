#!/usr/bin/env bash
# Peer figures for oneside's team collectives from Open MPI 4.1.4's OpenSHMEM
# (Debian's oshmem, UCX over shared memory), NP PEs on this machine: the OSU
# Micro-Benchmarks 6.1 collective programs, built from
# ../shared/suites/osu-micro-benchmarks (not copied, not edited) by
# bench/oshmem_common.sh, run ROUNDS times, one line per figure:
#     <metric> <bytes> <value> us
#   coll_barrier_lat 0   osu_oshm_barrier: shmem_barrier over all PEs, back to
#                        back (100 timed after 10 warm-up, OSU's counts)
#   bcast_lat N          osu_oshm_broadcast: shmem_broadcast32 of N/4 32-bit
#                        elements from PE 0 to all PEs
#   reduce_f32_sum_lat N osu_oshm_reduce: shmem_float_sum_to_all over N/4
#                        floats (f32 sum, all-reduce; not f64)
#   fcollect_lat N       osu_oshm_fcollect: shmem_fcollect32, N bytes (N/4
#                        32-bit elements) from each PE, N x NP gathered
#   collect_lat N        osu_oshm_collect: shmem_collect32, same N from each PE
# N runs over the powers of two from 4 to MAX bytes (1 MiB by default). OSU
# times each call with gettimeofday, follows every data collective with an
# untimed shmem_barrier_all, and reports the mean over the PEs of each PE's
# mean time per call ("Avg Latency"); 1000 calls after 200 warm-up up to
# 8192 elements (32 KiB), 100 after 10 above. Built with -DFLOAT_PRECISION=4
# so the table keeps 4 decimals instead of 2.
# Figures go to stdout (or FILE), diagnostics to stderr; programs in
# target/oshmem_coll/, raw tables in RAW (target/oshmem_coll/np$NP/) as
# NAME-ROUND.{out,err}. Every oshrun runs under `timeout`.
#
#   NP=4 bench/oshmem_coll.sh [FILE] > peer.txt
#       (NP=2, ROUNDS=1, MAX=1048576, ITERS=OSU's, OSHRUN_TIMEOUT=300 s)
# ITERS=N passes `-i N` (all sizes and the barrier), for a quick run;
# SKIP_BUILD=1 reuses the programs if they are there, BUILD_ONLY=1 only
# builds them; rounds are numbered from FIRST_ROUND (1).
set -euo pipefail
# This harness runs more ranks than a small machine has CPUs, on purpose:
# allow it, as --oversubscribe would (without it rlaunch refuses).
export RLAUNCH_OVERSUBSCRIBE=1
if [ $# -gt 1 ]; then echo "usage: $0 [FILE]" >&2; exit 2; fi
if [ $# -eq 1 ]; then exec >"$1"; fi
cd "$(dirname "$0")/.."
NP=${NP:-2}
ROUNDS=${ROUNDS:-1}
MAX=${MAX:-1048576}
ITERS=${ITERS:-}
OSHRUN_TIMEOUT=${OSHRUN_TIMEOUT:-300}
FIRST_ROUND=${FIRST_ROUND:-1}
BIN=target/oshmem_coll
RAW=${RAW:-$BIN/np$NP}
OUT=$BIN
. bench/oshmem_common.sh
oshm_setup
# As in oshmem_peer.sh: spml ucx over shared memory. --oversubscribe lets 8
# PEs share the 2 cores (then Open MPI binds no PE to a core).
OSHRUN=(timeout -k 5 "$OSHRUN_TIMEOUT" oshrun -np "$NP" --oversubscribe --mca spml ucx -x UCX_TLS=sm,self)
ARGS=(-m "$MAX")
[ -n "$ITERS" ] && ARGS+=(-i "$ITERS")

PROGS=(barrier broadcast reduce fcollect collect)
built=1
for p in "${PROGS[@]}"; do [ -x "$BIN/osu_oshm_$p" ] || built=0; done
if [ "${SKIP_BUILD:-0}" != 1 ] || [ "$built" = 0 ]; then
  log "building into $BIN"
  OSU_CFLAGS=(-DFLOAT_PRECISION=4)
  for p in "${PROGS[@]}"; do osu_build "$p"; done
fi
[ "${BUILD_ONLY:-0}" = 1 ] && exit 0
OUT=$RAW
mkdir -p "$OUT"

# Sizes 4, 8, ..., MAX bytes.
sizes=0
for ((s = 4; s <= MAX; s *= 2)); do sizes=$((sizes + 1)); done
table() { echo '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9.]+$/ && NF == 2 { printf "'"$1"' %d %.4f us\n", $1, $2 }'; }

status=0
start=$(date +%s)
for round in $(seq "$FIRST_ROUND" $((FIRST_ROUND + ROUNDS - 1))); do
  log "round $round, $NP PEs"
  oshm_run barrier 1 '$1 ~ /^[0-9.]+$/ && NF == 1 { printf "coll_barrier_lat 0 %.4f us\n", $1 }' \
    "$BIN/osu_oshm_barrier" "${ARGS[@]}"
  oshm_run broadcast "$sizes" "$(table bcast_lat)" "$BIN/osu_oshm_broadcast" "${ARGS[@]}"
  oshm_run reduce "$sizes" "$(table reduce_f32_sum_lat)" "$BIN/osu_oshm_reduce" "${ARGS[@]}"
  oshm_run fcollect "$sizes" "$(table fcollect_lat)" "$BIN/osu_oshm_fcollect" "${ARGS[@]}"
  oshm_run collect "$sizes" "$(table collect_lat)" "$BIN/osu_oshm_collect" "${ARGS[@]}"
done
log "done: $ROUNDS round(s) at $NP PEs in $(( $(date +%s) - start )) s"
exit "$status"
