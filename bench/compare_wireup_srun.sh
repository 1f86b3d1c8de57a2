#!/usr/bin/env bash
# Wire-up under srun, PMIx against PMI-2, in one run on the Slurm cluster of
# tests/slurm/ (needs root): HOSTS compute hosts (os-h2 ...) x PER_HOST
# ranks of bench/launch_shmem.c (every rank times its shmem_init; the
# slowest is printed), ROUNDS rounds alternating `srun --mpi=pmix` (oneside
# over libpmix, opened at run time) and `srun --mpi=pmi2` (oneside's wire
# client). Every host shares this machine's 2 cores, so ranks are
# oversubscribed (-O). Prints the medians and the ratio pmix / pmi2 of
# three times: the wire-up after the last rank entered shmem_init (oneside's
# own cost; hosts share one clock), the slowest rank's shmem_init (which
# also holds srun's spread in starting 256 processes, with slurmstepd's
# per-task PMIx set-up), and srun's wall time. The goal is <= 1.0x.
#
#   bench/compare_wireup_srun.sh        (HOSTS=4 PER_HOST=64 ROUNDS=3)
set -euo pipefail
# This harness runs more ranks than a small machine has CPUs, on purpose:
# allow it, as --oversubscribe would (without it rlaunch refuses).
export RLAUNCH_OVERSUBSCRIBE=1
cd "$(dirname "$0")/.."
repo=$PWD
HOSTS=${HOSTS:-4}
PER_HOST=${PER_HOST:-64}
ROUNDS=${ROUNDS:-3}
n=$((HOSTS * PER_HOST))
dir=$(mktemp -d /tmp/oneside-wireup-srun.XXXXXX)
trap 'tests/slurm/slurm.sh down "$dir" >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
cargo build --release -p oneside-shmem -p rlaunch --quiet
target/release/oshcc -O2 -o "$dir/launch_shmem" bench/launch_shmem.c
tests/slurm/slurm.sh up $((HOSTS + 1)) "$dir" </dev/null >"$dir/up.log" 2>&1 || { cat "$dir/up.log"; exit 1; }
export SLURM_CONF=$dir/slurm.conf
nodes="os-h[2-$((HOSTS + 1))]"
now() { date +%s%N; }
for round in $(seq "$ROUNDS"); do
  for pmi in pmix pmi2; do
    t0=$(now)
    out=$(timeout 600 srun -N"$HOSTS" -w "$nodes" -n "$n" -O --mpi=$pmi "$dir/launch_shmem")
    t1=$(now)
    slowest=$(awk '/^wireup/ {print $3}' <<<"$out")
    after=$(awk '/^after-last/ {print $3}' <<<"$out")
    echo "round $round $pmi: slowest shmem_init $slowest us, after the last start $after us, wall $(((t1 - t0) / 1000)) us"
    echo "$after $slowest $(((t1 - t0) / 1000))" >>"$dir/$pmi"
  done
done
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
echo
echo "| ranks | | srun --mpi=pmix (median us) | srun --mpi=pmi2 (median us) | pmix / pmi2 |"
echo "|---|---|---|---|---|"
for col in 1 2 3; do
  what=$(case $col in 1) echo "wire-up after the last rank started" ;; 2) echo "slowest shmem_init" ;; 3) echo "srun wall time" ;; esac)
  x=$(awk -v c=$col '{print $c}' "$dir/pmix" | median)
  y=$(awk -v c=$col '{print $c}' "$dir/pmi2" | median)
  echo "| $HOSTS x $PER_HOST | $what | $x | $y | $(awk -v a="$x" -v b="$y" 'BEGIN {printf "%.2fx", a / b}') |"
done
