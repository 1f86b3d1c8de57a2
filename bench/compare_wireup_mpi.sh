#!/usr/bin/env bash
# Wire-up inside MPI programs, oneside against MPI itself in the same run:
# bench/wireup_hybrid.c times MPI_Init and then shmem_init in every rank
# (the slowest of each), under Open MPI's mpirun (oneside over PMIx) and
# MPICH's mpiexec.hydra (oneside over PMI-2 on the PMI_FD MPICH shares),
# ROUNDS rounds alternating the two launchers. Prints the medians and the
# ratio shmem_init / MPI_Init per launcher; the goal is <= 1.0x.
#
#   bench/compare_wireup_mpi.sh        (RANKS=64 ROUNDS=5)
set -euo pipefail
cd "$(dirname "$0")/.."
RANKS=${RANKS:-64}
ROUNDS=${ROUNDS:-5}
cargo build --release -p oneside-shmem -p rlaunch --quiet
out=$(mktemp -d /tmp/oneside-wireup.XXXXXX)
trap 'rm -rf "$out"' EXIT
for mpi in openmpi mpich; do
  ONESIDE_CC=mpicc.$mpi target/release/oshcc -O2 -o "$out/wireup-$mpi" bench/wireup_hybrid.c
done
declare -A cmd=(
  [mpirun]="mpirun.openmpi --allow-run-as-root --oversubscribe --mca pml ob1 --mca btl self,vader,tcp -np $RANKS $out/wireup-openmpi"
  [hydra]="mpiexec.hydra -n $RANKS $out/wireup-mpich"
)
for round in $(seq "$ROUNDS"); do
  for l in mpirun hydra; do
    line=$(timeout 300 ${cmd[$l]} | grep '^wireup')
    echo "round $round $l: $line"
    echo "$line" >>"$out/$l"
  done
done
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
echo
echo "| launcher | ranks | MPI_Init (median us) | shmem_init after it (median us) | shmem_init / MPI_Init |"
echo "|---|---|---|---|---|"
for l in mpirun hydra; do
  mpi=$(awk '{print $4}' "$out/$l" | median)
  shm=$(awk '{print $6}' "$out/$l" | median)
  echo "| $l | $RANKS | $mpi | $shm | $(awk -v a="$shm" -v b="$mpi" 'BEGIN {printf "%.2fx", a / b}') |"
done
