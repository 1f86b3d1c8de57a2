#!/usr/bin/env bash
# Launch wall time inside a Slurm allocation, ours against Open MPI's
# mpirun, in one run on the Slurm cluster of tests/slurm/ (needs root):
# the login host os-h1 submits, the job runs on os-h2 and os-h3, N/2 ranks
# each, N = 2, 4, 8 (every slot: 4 CPUs a node) and 16 (oversubscribed:
# salloc -n16 --overcommit). All hosts share this machine's 2 cores.
#
# In each allocation, ROUNDS rounds alternate four launches of the same
# program (bench/launch_shmem.c with our oshcc, bench/launch_mpi.c with
# mpicc: time init, reduce the slowest to rank 0, finalize):
#   rlaunch over srun (its default inside Slurm), rlaunch over ssh,
#   srun --mpi=pmi2 alone, and mpirun (btl self,vader,tcp: its fastest
#   set-up here; the default UCX pml starts 2x slower).
# Each launch yields "launch N <us> us" (wall time from the login host)
# and "wireup N <us> us" (the slowest rank's init). Prints ratios of the
# medians; the goal is <= 1.0x mpirun.
#
#   bench/compare_launch.sh        (ROUNDS=5, SIZES="2 4 8 16";
#                                   figures in target/compare_launch/)
set -euo pipefail
# This harness runs more ranks than a small machine has CPUs, on purpose:
# allow it, as --oversubscribe would (without it rlaunch refuses).
export RLAUNCH_OVERSUBSCRIBE=1
cd "$(dirname "$0")/.."
repo=$PWD
OUT=$repo/target/compare_launch
MPIRUN=(mpirun --mca pml ob1 --mca btl self,vader,tcp)

# One allocation's rounds: runs on the login host inside salloc.
if [ "${1:-}" = --inside ]; then
  n=$2 rounds=$3 ssh=$4
  now() { date +%s%N; }
  launch() { # launch NAME COMMAND...: one timed launch, appended to NAME's file
    local name=$1 t0 t1 out
    shift
    t0=$(now)
    out=$(timeout 120 "$@" 2>&1) || { echo "$name failed: $out" >&2; return 1; }
    t1=$(now)
    echo "launch $n $(((t1 - t0) / 1000)) us" >>"$OUT/$name.txt"
    grep -E "^wireup $n [0-9]+ us$" <<<"$out" >>"$OUT/$name.txt" || { echo "$name: no wireup line: $out" >&2; return 1; }
  }
  for round in $(seq "$rounds"); do
    echo "   round $round/$rounds"
    launch rlaunch-srun "$repo/target/release/rlaunch" "$OUT/launch_shmem"
    launch rlaunch-ssh "$repo/target/release/rlaunch" --launch-agent ssh --ssh "$ssh" "$OUT/launch_shmem"
    launch srun-pmi2 srun --mpi=pmi2 "$OUT/launch_shmem"
    launch mpirun "${MPIRUN[@]}" "$OUT/launch_mpi"
  done
  exit 0
fi

ROUNDS=${ROUNDS:-5}
SIZES=${SIZES:-2 4 8 16}
mkdir -p "$OUT"
rm -f "$OUT"/*.txt
need=()
command -v mpicc >/dev/null || need+=(openmpi-bin libopenmpi-dev)
command -v slurmctld >/dev/null || need+=(slurmctld slurmd slurm-client munge)
if [ ${#need[@]} -gt 0 ]; then
  echo "== installing ${need[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
echo "== building"
cargo build --release --quiet
target/release/oshcc -O2 -o "$OUT/launch_shmem" bench/launch_shmem.c
mpicc -O2 -o "$OUT/launch_mpi" bench/launch_mpi.c

dir=$(mktemp -d /tmp/oneside-launch.XXXXXX)
trap 'tests/slurm/slurm.sh down "$dir" >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
tests/slurm/slurm.sh up 3 "$dir" </dev/null >"$dir/up.log" 2>&1 || { cat "$dir/up.log"; exit 1; }
export SLURM_CONF=$dir/slurm.conf OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
login() { nsenter -t "$(cat "$dir/sshd.1.pid")" -n -u -m -- "$@"; }
for n in $SIZES; do
  # N/2 ranks a host; past the 4 CPUs a host, Slurm takes only -n with --overcommit.
  shape=(--ntasks-per-node=$((n / 2)))
  [ "$n" -gt 8 ] && shape=(-n"$n" --overcommit)
  echo "== $n ranks: salloc -N2 ${shape[*]}"
  login timeout 900 salloc --quiet -N2 -w os-h2,os-h3 "${shape[@]}" \
    bash "$repo/bench/compare_launch.sh" --inside "$n" "$ROUNDS" "$(cat "$dir/ssh")"
done

rows=""
for n in $SIZES; do rows="$rows|launch $n|wireup $n"; done
rows=${rows#|}
ratios() { # ratios OURS PEER TITLE
  echo
  echo "== $3 (median of $ROUNDS launches each)"
  awk -v peer="$2" -v rows="$rows" -f bench/ratios.awk "$OUT/$1.txt" "$OUT/$2.txt" | sed "1s/$(printf '%14s' oneside)/$(printf '%14s' "$1")/"
}
{
  ratios rlaunch-srun mpirun "rlaunch over srun / mpirun, same allocation"
  ratios srun-pmi2 mpirun "srun --mpi=pmi2 alone / mpirun, same allocation"
  ratios rlaunch-srun rlaunch-ssh "rlaunch over srun / rlaunch over ssh"
  echo
  echo "== wire-up growth: slowest rank's init (median us) by ranks, each launcher; ratio: rlaunch over srun / the best other"
  growth=""
  for n in $SIZES; do growth="$growth|wireup $n"; done
  awk -f bench/best_ratios.awk -v names="rlaunch-srun|rlaunch-ssh|srun-pmi2|mpirun" -v rows="${growth#|}" \
    "$OUT/rlaunch-srun.txt" "$OUT/rlaunch-ssh.txt" "$OUT/srun-pmi2.txt" "$OUT/mpirun.txt"
} | tee "$OUT/ratios.txt"
echo "goal: launch <= 1.0x mpirun; raw figures in $OUT/"
