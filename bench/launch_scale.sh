#!/usr/bin/env bash
# Launch wall time by rank count on this one host, oversubscribed: rlaunch
# starting hello_put and /bin/true at 64 to 2048 ranks, beside Open MPI's
# mpirun starting bench/launch_mpi.c (init, one reduce, finalize) where it
# finishes in reasonable time (MPI_SIZES: 64 and 128 here; 256 took 76 s).
# mpirun is not run on /bin/true: at 128 ranks it hung here without CPU.
#
# ROUNDS rounds alternate every launcher and size; each figure is the
# median over the rounds. Then the growth t(2N)/t(N) (the goal is at most
# 2.2, linear plus noise), and what rlaunch and one rank hold at the two
# largest sizes: resident memory and open descriptors, read from /proc
# while a job of `faults sleep` ranks waits.
#
# As root it also brings up 4 namespace hosts (all sharing this machine's 2
# cores) and starts hello_put on 4 hosts x PER_HOST ranks: rlaunch over
# ssh; and, where Slurm is installed (tests/slurm/), rlaunch inside an
# salloc (its agent is srun), `srun --mpi=pmi2` alone, and `srun /bin/true`
# (Slurm's own start-up cost), alternating in the same allocation rounds.
#
#   bench/launch_scale.sh    (ROUNDS=3, SIZES="64 128 256 512 1024 2048",
#                             MPI_SIZES="64 128", PER_HOST="16 64 256";
#                             figures in target/launch_scale/)
set -euo pipefail
# This harness runs more ranks than a small machine has CPUs, on purpose:
# allow it, as --oversubscribe would (without it rlaunch refuses).
export RLAUNCH_OVERSUBSCRIBE=1
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
SIZES=${SIZES:-64 128 256 512 1024 2048}
MPI_SIZES=${MPI_SIZES:-64 128}
PER_HOST=${PER_HOST:-16 64 256}
OUT=target/launch_scale
mkdir -p "$OUT"
rm -f "$OUT"/*.txt

if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
  echo "== installing Open MPI (Debian openmpi-bin, libopenmpi-dev)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openmpi-bin libopenmpi-dev >/dev/null
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "== building"
cargo build --release --bins --examples --quiet
mpicc -O2 -o "$OUT/launch_mpi" bench/launch_mpi.c
RLAUNCH=target/release/rlaunch
EX=target/release/examples

now() { date +%s%N; }
timed() { # timed NAME N COMMAND...: appends "launch N <seconds> s" to NAME's file
  local name=$1 n=$2 t0 t1
  shift 2
  t0=$(now)
  timeout 300 "$@" >/dev/null 2>"$OUT/last.err" || { echo "$name at $n failed:" >&2; tail -3 "$OUT/last.err" >&2; return 1; }
  t1=$(now)
  echo "launch $n $(awk -v d=$((t1 - t0)) 'BEGIN { printf "%.3f", d / 1e9 }') s" >>"$OUT/$name.txt"
}

for round in $(seq "$ROUNDS"); do
  echo "== round $round/$ROUNDS"
  for n in $SIZES; do
    timed hello_put "$n" "$RLAUNCH" -n "$n" --oversubscribe "$EX/hello_put"
    timed true "$n" "$RLAUNCH" -n "$n" --oversubscribe /bin/true
    if [[ " $MPI_SIZES " == *" $n "* ]]; then
      timed mpirun "$n" mpirun --oversubscribe --mca pml ob1 --mca btl self,vader -n "$n" "$OUT/launch_mpi"
    fi
  done
done

cluster="" slurm=""
if [ "$(id -u)" = 0 ]; then
  cluster=$(mktemp -d /tmp/oneside-scale.XXXXXX)
  if command -v slurmctld >/dev/null && command -v srun >/dev/null; then
    slurm=yes
    trap 'tests/slurm/slurm.sh down "$cluster" >/dev/null 2>&1 || true; rm -rf "$cluster"' EXIT
    tests/slurm/slurm.sh up 4 "$cluster" </dev/null >"$cluster/up.log" 2>&1 || { cat "$cluster/up.log"; exit 1; }
    export SLURM_CONF=$cluster/slurm.conf
  else
    trap 'tests/cluster/cluster.sh down "$cluster" >/dev/null 2>&1 || true; rm -rf "$cluster"' EXIT
    tests/cluster/cluster.sh up 4 "$cluster" </dev/null >"$cluster/up.log" 2>&1 || { cat "$cluster/up.log"; exit 1; }
  fi
  # salloc runs on the login host os-h1 (its names resolve only there).
  login=(nsenter -t "$(cat "$cluster/sshd.1.pid")" -n -u -m -- env SLURM_CONF="${SLURM_CONF:-}")
  for round in $(seq "$ROUNDS"); do
    echo "== 4 hosts, round $round/$ROUNDS"
    for per in $PER_HOST; do
      n=$((4 * per))
      timed hosts4 "$per" "$RLAUNCH" --ssh "$(cat "$cluster/ssh")" -f "$cluster/hostfile" \
        -n "$n" --oversubscribe "$PWD/$EX/hello_put"
      if [ -n "$slurm" ]; then
        timed salloc_rlaunch "$per" "${login[@]}" salloc -N4 -n "$n" -O "$PWD/$RLAUNCH" "$PWD/$EX/hello_put"
        timed srun_pmi2 "$per" srun -N4 -n "$n" -O --mpi=pmi2 "$PWD/$EX/hello_put"
        timed srun_true "$per" "${login[@]}" salloc -N4 -n "$n" -O srun /bin/true
      fi
    done
  done
fi

median() { # median NAME N
  awk -v n="$2" '$2 == n { v[++k] = $3 } END {
    if (!k) { print "-"; exit }
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
    printf "%.2f", (k % 2) ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2 }' "$OUT/$1.txt" 2>/dev/null || echo "-"
}

# What rlaunch and rank 0 hold while N ranks wait after init.
holdings() { # holdings N
  local n=$1 pid rank_pid rss fds
  "$RLAUNCH" -n "$n" --oversubscribe "$EX/faults" sleep >"$OUT/hold.out" 2>/dev/null &
  pid=$!
  for _ in $(seq 600); do
    [ "$(grep -c '^ready' "$OUT/hold.out" 2>/dev/null)" -ge "$n" ] && break
    sleep 0.1
  done
  rank_pid=$(grep -m1 '^ready' "$OUT/hold.out" | sed 's/.*pid=\([0-9]*\).*/\1/')
  for who in "rlaunch $pid" "rank $rank_pid"; do
    set -- $who
    rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$2/status")
    fds=$(ls "/proc/$2/fd" | wc -l)
    printf "%-8s %6d ranks: resident %7d KiB, %5d open descriptors\n" "$1" "$n" "$rss" "$fds"
  done
  kill -INT "$pid"
  wait "$pid" || true
}

{
  echo
  echo "== wall time (s), median of $ROUNDS alternating rounds, one host, oversubscribed"
  printf "%6s %10s %10s %10s %12s\n" ranks hello_put /bin/true mpirun "mpirun/hello"
  for n in $SIZES; do
    h=$(median hello_put "$n") t=$(median true "$n") m=$(median mpirun "$n")
    r=$(awk -v h="$h" -v m="$m" 'BEGIN { if (m == "-" || h == "-") print "-"; else printf "%.1f", m / h }')
    printf "%6s %10s %10s %10s %12s\n" "$n" "$h" "$t" "$m" "$r"
  done
  echo
  echo "== growth t(2N)/t(N) (goal <= 2.2)"
  printf "%12s %10s %10s\n" "N -> 2N" hello_put /bin/true
  prev=""
  for n in $SIZES; do
    if [ -n "$prev" ]; then
      printf "%12s %10s %10s\n" "$prev -> $n" \
        "$(awk -v a="$(median hello_put "$prev")" -v b="$(median hello_put "$n")" 'BEGIN { printf "%.2f", b / a }')" \
        "$(awk -v a="$(median true "$prev")" -v b="$(median true "$n")" 'BEGIN { printf "%.2f", b / a }')"
    fi
    prev=$n
  done
  if [ -n "$cluster" ]; then
    echo
    echo "== 4 namespace hosts, hello_put (s), median of $ROUNDS; srun /bin/true is Slurm's own start-up"
    printf "%10s %6s %10s %16s %14s %14s\n" "ranks/host" ranks "rlaunch ssh" "salloc+rlaunch" "srun --mpi=pmi2" "srun /bin/true"
    for per in $PER_HOST; do
      printf "%10s %6s %10s %16s %14s %14s\n" "$per" $((4 * per)) "$(median hosts4 "$per")" \
        "$(median salloc_rlaunch "$per")" "$(median srun_pmi2 "$per")" "$(median srun_true "$per")"
    done
  fi
  echo
  echo "== what a job holds (faults sleep, after init)"
  for n in $(echo "$SIZES" | tr ' ' '\n' | tail -2); do holdings "$n"; done
} | tee "$OUT/table.txt"
