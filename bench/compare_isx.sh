#!/usr/bin/env bash
# ISx (github ParRes/ISx, fetched and built outside the project) under
# oneside with no heap setting and under Sandia OpenSHMEM with the
# SHMEM_SYMMETRIC_SIZE=1G it needs (ISx asks for 1 GiB at once), at its
# default settings (isx.strong 134217728: 2^27 keys, one timed
# iteration), at 1, 2 and 4 PEs over shared memory (SOS: libfabric's
# sockets provider on lo), the two alternating ROUNDS times. ISx verifies
# its sort and prints "Failed Verification" otherwise; a run counts only
# when it exits 0 without that. Prints ISx's "Average total time" for
# each, medians, and oneside/SOS.
#
#   ONESIDE_ISX=/work/peers/isx-oneside SOS_ISX=/work/peers/isx-sos SOS_DIR=/work/peers/sos ROUNDS=3 bench/compare_isx.sh
#   (each built with ISx's SHMEM Makefile: make CC=<oshcc> optimized)
set -euo pipefail
export RLAUNCH_OVERSUBSCRIBE=1
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
: "${ONESIDE_ISX:?names ISx built with the oshcc of this tree}" "${SOS_ISX:?names ISx built with SOS}" "${SOS_DIR:?names SOS}"
OUT=target/compare_isx
mkdir -p "$OUT" && rm -f "$OUT"/*.txt
cd "$OUT"
run() { # SIDE PES: one run; appends "<pes> <seconds>" to SIDE.txt, or fails
  local side=$1 pes=$2
  local log=$side-$pes.log
  case $side in
    oneside) ONESIDE_TRANSPORT=shm timeout 600 ../release/oshrun -np "$pes" "$ONESIDE_ISX/bin/isx.strong" 134217728 "out-$side-$pes" ;;
    sos) OSHRUN_LAUNCHER=mpiexec.hydra SHMEM_OFI_PROVIDER=sockets SHMEM_OFI_DOMAIN=lo SHMEM_SYMMETRIC_SIZE=1G \
      timeout 600 "$SOS_DIR/bin/oshrun" -np "$pes" "$SOS_ISX/bin/isx.strong" 134217728 "out-$side-$pes" ;;
  esac >"$log" 2>&1 || { echo "$side at $pes PEs failed:"; tail -5 "$log"; return 1; }
  ! grep -qi "failed verification\|verification failed" "$log" "out-$side-$pes" || { echo "$side at $pes PEs did not verify"; return 1; }
  echo "$pes $(awk '/Average total time/ { print $6 }' "$log")" >> "$side.txt"
}
for round in $(seq "$ROUNDS"); do
  echo "== round $round/$ROUNDS"
  for pes in 1 2 4; do
    for side in $( ((round % 2)) && echo "oneside sos" || echo "sos oneside"); do
      run "$side" "$pes"
    done
  done
done
med() { awk -v p="$2" '$1 == p { print $2 }' "$1" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
# The machine's slow and fast states last seconds: each round's pair is
# taken in the same state more often than medians taken apart are.
paired() { paste oneside.txt sos.txt | awk -v p="$1" '$1 == p { print $2 / $4 }' | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
printf '| PEs | oneside (no heap setting) s | SOS (SHMEM_SYMMETRIC_SIZE=1G) s | oneside/SOS | median of the rounds oneside/SOS |\n|---|---|---|---|---|\n'
for pes in 1 2 4; do
  o=$(med oneside.txt "$pes") s=$(med sos.txt "$pes") r=$(paired "$pes")
  awk -v p="$pes" -v o="$o" -v s="$s" -v r="$r" 'BEGIN { printf "| %d | %.3f | %.3f | %.2f | %.2f |\n", p, o, s, o / s, r }'
done
