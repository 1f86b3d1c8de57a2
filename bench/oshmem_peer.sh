#!/usr/bin/env bash
# Peer figures for oneside's remote atomics, put-with-signal and non-blocking
# put, from Open MPI 4.1.4's OpenSHMEM (Debian's oshmem, UCX over shared
# memory, 2 PEs on this machine). Builds the OSU Micro-Benchmarks 6.1 programs
# osu_oshm_atomics, osu_oshm_put_nb and osu_oshm_put_mr_nb from
# ../shared/suites/osu-micro-benchmarks (not copied, not edited) plus our own
# bench/oshm_signal.c, runs them ROUNDS times and prints one line per figure:
#     <metric> <bytes> <value> <unit>
#   fadd_lat finc_lat add_lat inc_lat cswap_lat swap_lat set_lat fetch_lat 8
#                      64-bit (long long) atomics, osu_oshm_atomics; us per op
#   put_nbi_lat N      shmem_putmem_nbi + shmem_quiet, osu_oshm_put_nb; us
#   put_nbi_bw N       osu_oshm_put_mr_nb's messages/s x N bytes / 1e6; MB/s
#                      (a burst of nbi puts to distinct offsets, one quiet)
#   put_signal_lat N   put + fence + atomic set, ping-pong, oshm_signal; half
#                      round trip in us (OpenSHMEM 1.4 has no put_signal)
# Figures go to stdout (or FILE), diagnostics to stderr; raw tables in
# target/oshmem_peer/. Every oshrun runs under `timeout`.
#
#   bench/oshmem_peer.sh [FILE] > peer.txt     (ROUNDS=1, OSHRUN_TIMEOUT=60 s)
#
# Quirks of Open MPI 4.1.4 here, handled below:
# - every oshmem program SIGSEGVs inside shmem_finalize after printing its
#   table: exit statuses are ignored and the tables are checked instead;
# - a 32-bit shmem_int_cswap smashes its own stack (open-mpi/ompi#11257, fixed
#   in 4.1.5) and aborts osu_oshm_atomics before its 64-bit rows: we link in
#   bench/omb_int_cswap.c, a shmem_int_cswap built on the 64-bit cswap. The
#   int rows are not reported.
set -euo pipefail
# This harness runs more ranks than a small machine has CPUs, on purpose:
# allow it, as --oversubscribe would (without it rlaunch refuses).
export RLAUNCH_OVERSUBSCRIBE=1
if [ $# -gt 1 ]; then echo "usage: $0 [FILE]" >&2; exit 2; fi
if [ $# -eq 1 ]; then exec >"$1"; fi
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-1}
OSHRUN_TIMEOUT=${OSHRUN_TIMEOUT:-60}
OUT=target/oshmem_peer
. bench/oshmem_common.sh
oshm_setup
# The only spml here is ucx; UCX_TLS=sm,self keeps it on shared memory (the
# default picks the same; tcp,self would be 50x slower). PEs bind to a core each.
OSHRUN=(timeout -k 5 "$OSHRUN_TIMEOUT" oshrun -np 2 --oversubscribe --mca spml ucx -x UCX_TLS=sm,self)

log "building into $OUT"
osu_build atomics bench/omb_int_cswap.c
osu_build put_nb
osu_build put_mr_nb
oshcc -O2 -Wall -o "$OUT/oshm_signal" bench/oshm_signal.c >&2

log "note: Open MPI 4.1.4's oshmem programs SIGSEGV in shmem_finalize after printing;" \
    "their exit status is ignored and their tables are parsed"
status=0
start=$(date +%s)
for round in $(seq "$ROUNDS"); do
  log "round $round/$ROUNDS"
  # Latency: OSU prints it with 2 decimals (0.02 us); 1 / (million ops/s),
  # from the same timing, keeps more digits, so use it below 1 us.
  oshm_run atomics 8 '$1 ~ /^shmem_longlong_(fadd|finc|add|inc|cswap|swap|set|fetch)$/ && NF == 3 {
      lat = ($3 < 1 && $2 > 0) ? 1 / $2 : $3
      printf "%s_lat 8 %.4f us\n", substr($1, 16), lat }' "$OUT/osu_oshm_atomics" heap
  oshm_run put_nb 4 '$1 ~ /^(8|4096|65536|1048576)$/ && NF == 2 { printf "put_nbi_lat %d %.4f us\n", $1, $2 }' \
    "$OUT/osu_oshm_put_nb" heap
  oshm_run put_mr_nb 2 '$1 ~ /^(65536|1048576)$/ && NF == 2 { printf "put_nbi_bw %d %.4f MB/s\n", $1, $2 * $1 / 1e6 }' \
    "$OUT/osu_oshm_put_mr_nb" heap
  oshm_run oshm_signal 3 '/^put_signal_lat [0-9]+ [0-9.]+ us$/' "$OUT/oshm_signal"
done
log "done: $ROUNDS round(s) in $(( $(date +%s) - start )) s"
exit "$status"
