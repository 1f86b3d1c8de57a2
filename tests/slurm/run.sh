#!/usr/bin/env bash
# The Slurm suite: brings up a real Slurm cluster on namespace hosts
# (tests/slurm/slurm.sh: os-h1 is where users log in and submit, as on a
# cluster's login node; the jobs run on os-h2 and os-h3), runs each case,
# and tears everything down whatever happens. Needs root. Every case is
# bounded by `timeout`. Prints one line per case and `N passed, M failed`.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
dir=$(mktemp -d /tmp/oneside-slurm.XXXXXX)
trap 'tests/slurm/slurm.sh down "$dir" >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
cargo build --release --quiet
cargo build --release --examples --quiet
tests/slurm/slurm.sh up 3 "$dir" </dev/null >"$dir/up.log" 2>&1 || { cat "$dir/up.log"; exit 1; }
export SLURM_CONF=$dir/slurm.conf
# The namespace hosts share this machine's cores: waits must not poll as if
# each rank had one (srun exports this to every task).
export ONESIDE_YIELD_WHEN_IDLE=1
bin=$repo/target/release
ex=$bin/examples
jobs=(-N2 -w os-h2,os-h3 --ntasks-per-node=2)

# Runs a command on the login host os-h1 (its hostname, address, /etc/hosts).
login() { nsenter -t "$(cat "$dir/sshd.1.pid")" -n -u -m -- env SLURM_CONF="$SLURM_CONF" "$@"; }
# The processes left in the compute hosts' namespaces, beyond the daemons.
leftovers() {
  for i in 2 3; do
    ip netns pids "os-h$i" | xargs -r ps -o comm= -p | grep -vxE 'sshd|slurmd|timeout' || true
  done
}
passed=0 failed=0
# A step's output without srun's own scheduling lines ("srun: job 7 queued
# and waiting for resources", "... has been allocated resources"), which
# it prints when the previous step's nodes are not free yet.
output() { grep -vE '^srun: job [0-9]+ (queued and waiting for resources|has been allocated resources)$' "$dir/out"; }
check() { # check NAME: reads the verdict (0 = pass) from $?
  if [ "$1" = 0 ]; then passed=$((passed + 1)); echo "ok   $2"; else
    failed=$((failed + 1)); echo "FAIL $2"; sed 's/^/     | /' "$dir/out" | tail -15; fi
}

set +e
timeout 120 srun "${jobs[@]}" --mpi=pmi2 "$ex/hello_put" >"$dir/out" 2>&1
[ $? = 0 ] && [ "$(grep -c 'received "Hello' "$dir/out")" = 4 ] && grep -q 'via shm' "$dir/out" && grep -q 'via tcp' "$dir/out"
check $? "srun -N2 -n4 --mpi=pmi2 hello_put, no rlaunch: 4 ranks wire up over PMI-2 (shm and tcp)"

timeout 120 srun -N2 -w os-h2,os-h3 -n 128 -O --mpi=pmi2 "$ex/wireup_check" >"$dir/out" 2>&1
[ $? = 0 ] && grep -q '^wireup_check: 128 ranks, every card, put and rank in place' "$dir/out" &&
  ! ls /dev/shm | grep -q -- '-cards-'
check $? "srun -N2 -n128 --mpi=pmi2 wireup_check: nodes from PMI_process_mapping, cards read once per node, every card in place, no table file left"

"$bin/oshcc" -o "$dir/ring" tests/c/ring.c
timeout 120 srun "${jobs[@]}" --mpi=pmi2 "$dir/ring" >"$dir/out" 2>&1
[ $? = 0 ] && [ "$(output)" = "ring ok" ]
check $? "srun --mpi=pmi2 of a C program built with oshcc: the C API wires up over PMI-2 as well"

timeout 120 srun "${jobs[@]}" --mpi=pmix "$ex/hello_put" >"$dir/out" 2>&1
[ $? = 0 ] && [ "$(grep -c '^rank [0-3]/4 received' "$dir/out")" = 4 ]
check $? "srun -N2 -n4 --mpi=pmix hello_put: 4 ranks wire up over PMIx (libpmix opened at run time)"

timeout 120 srun "${jobs[@]}" --mpi=pmix "$dir/ring" >"$dir/out" 2>&1
[ $? = 0 ] && [ "$(output)" = "ring ok" ]
check $? "srun --mpi=pmix of a C program built with oshcc"

if command -v mpicc.openmpi >/dev/null; then
  ONESIDE_CC=mpicc.openmpi "$bin/oshcc" -o "$dir/hybrid" tests/c/hybrid.c
  for order in "mpi-first shmem-last" "shmem-first mpi-last"; do
    timeout 120 srun "${jobs[@]}" --mpi=pmix "$dir/hybrid" $order >"$dir/out" 2>&1
    [ $? = 0 ] && [ "$(output)" = "hybrid ok" ]
    check $? "srun --mpi=pmix of a hybrid Open MPI + OpenSHMEM program ($order): PE = MPI rank, PMIx shared"
    timeout 120 srun "${jobs[@]}" --mpi=pmix --export=ALL,ONESIDE_TEST_LIBMPI=libmpi.so.40 "$ex/hybrid_mpi" $order >"$dir/out" 2>&1
    [ $? = 0 ] && [ "$(output)" = "hybrid ok" ]
    check $? "srun --mpi=pmix of the hybrid Rust program on Open MPI ($order)"
  done
fi
if command -v mpicc.mpich >/dev/null; then
  ONESIDE_CC=mpicc.mpich "$bin/oshcc" -o "$dir/hybrid-mpich" tests/c/hybrid.c
  # srun's agent takes one PMI init per task: MPI's goes first.
  for order in "mpi-first shmem-last" "mpi-first mpi-last"; do
    timeout 120 srun "${jobs[@]}" --mpi=pmi2 "$dir/hybrid-mpich" $order >"$dir/out" 2>&1
    [ $? = 0 ] && [ "$(output)" = "hybrid ok" ]
    check $? "srun --mpi=pmi2 of a hybrid MPICH + OpenSHMEM program ($order): PE = MPI rank, PMI_FD shared"
    timeout 120 srun "${jobs[@]}" --mpi=pmi2 --export=ALL,ONESIDE_TEST_LIBMPI=libmpich.so.12 "$ex/hybrid_mpi" $order >"$dir/out" 2>&1
    [ $? = 0 ] && [ "$(output)" = "hybrid ok" ]
    check $? "srun --mpi=pmi2 of the hybrid Rust program on MPICH ($order)"
  done
  timeout 120 srun "${jobs[@]}" --mpi=pmi2 "$dir/hybrid-mpich" shmem-first mpi-last >"$dir/out" 2>&1
  [ $? != 0 ] && [ "$(grep -c 'call MPI_Init before shmem_init, or run with .srun --mpi=pmix.' "$dir/out")" = 4 ]
  check $? "srun --mpi=pmi2, MPICH linked, shmem_init first: every task stops with what to do (the one init is MPI's)"
fi
# Each family under the other's PMI: its MPI would run every task alone, so
# every task stops in shmem_init, in both orders, and prints no answer
# (Open MPI's own MPI_Init refuses srun's PMI-2 when it comes first).
if command -v mpicc.openmpi >/dev/null && command -v mpicc.mpich >/dev/null; then
  for pair in "hybrid pmi2 Open.MPI.v4 pmix" "hybrid-mpich pmix MPICH.4 pmi2"; do
    read -r prog pmi mpi fix <<<"$pair"
    for order in "mpi-first mpi-last" "shmem-first mpi-last"; do
      said="^oneside: shmem_init .*\(started by srun --mpi=$pmi, which set SLURM_PROCID=[0-3], SLURM_STEP_NUM_TASKS=4.*$mpi.*run with .srun --mpi=$fix.$"
      who="shmem_init, saying srun --mpi=$fix"
      if [ $pmi = pmi2 ] && [ "${order%% *}" = mpi-first ]; then
        said="An error occurred in MPI_Init" who="Open MPI's own MPI_Init"
      fi
      timeout 120 srun "${jobs[@]}" --mpi=$pmi "$dir/$prog" $order print >"$dir/out" 2>&1
      [ $? != 0 ] && ! grep -qE 'sum [0-9]+$|hybrid ok' "$dir/out" && grep -qE "$said" "$dir/out"
      check $? "srun --mpi=$pmi of ${mpi//./ } hybrid ($order): stopped by $who, prints no answer"
    done
  done
fi

timeout 120 srun "${jobs[@]}" --mpi=none "$ex/hello_put" >"$dir/out" 2>&1
[ $? != 0 ] && [ "$(grep -c 'task [0-3] of 4 in Slurm step .*srun --mpi=pmi2' "$dir/out")" = 4 ] && ! grep -q received "$dir/out"
check $? "srun without PMI (--mpi=none): every task says what is missing instead of running alone"

login timeout 120 salloc "${jobs[@]}" bash -c "$bin/rlaunch --dry-run $ex/hello_put && $bin/rlaunch $ex/hello_put" >"$dir/out" 2>&1
[ $? = 0 ] && grep -q 'hosts from the Slurm allocation' "$dir/out" && grep -q 'started with srun' "$dir/out" &&
  [ "$(grep -c 'rank . -> os-h[23]' "$dir/out")" = 4 ] && [ "$(grep -c 'received "Hello' "$dir/out")" = 4 ]
check $? "salloc -N2 + rlaunch with no hostfile: 2 hosts x 2 ranks from the allocation, proxies started by srun"

printf '#!/bin/sh\n%s %s\n' "$bin/rlaunch" "$ex/pi" >"$dir/job.sh"
login timeout 120 sbatch --wait "${jobs[@]}" --output="$dir/job.out" "$dir/job.sh" >"$dir/out" 2>&1
status=$?
cat "$dir/job.out" >>"$dir/out" 2>/dev/null
[ $status = 0 ] && grep -qi 'pi' "$dir/job.out"
check $? "sbatch of a script running rlaunch: the job succeeds and its output file has the result"

timeout 120 srun "${jobs[@]}" --mpi=pmi2 "$ex/faults" exit 3 7 >"$dir/out" 2>&1
status=$?
[ $status != 0 ] && grep -qE 'exited with exit code 7|error code 7|code 7' "$dir/out"
check $? "a rank exits 7 under srun: the step fails and names it"

login timeout 120 salloc "${jobs[@]}" bash -c "$bin/rlaunch $ex/faults exit 3 7; echo rlaunch=\$?" >"$dir/out" 2>&1
grep -q 'rank 3 on host os-h3 (pid [0-9]*) exited with code 7' "$dir/out" && grep -qx 'rlaunch=7' "$dir/out" &&
  ! grep -q 'srun' "$dir/out"
check $? "a rank exits 7 under rlaunch in an allocation: rlaunch names rank and host, exits 7, srun stays quiet"

printf '#!/bin/sh\n%s %s sleep\n' "$bin/rlaunch" "$ex/faults" >"$dir/sleep.sh"
job=$(login sbatch --parsable "${jobs[@]}" --output="$dir/sleep.out" "$dir/sleep.sh")
for _ in $(seq 100); do [ "$(grep -c ready "$dir/sleep.out" 2>/dev/null)" = 4 ] && break; sleep 0.2; done
before=$(leftovers | wc -l)
login scancel "$job"
for _ in $(seq 100); do [ -z "$(leftovers)" ] && break; sleep 0.1; done
{ echo "before scancel: $before processes"; leftovers; cat "$dir/sleep.out"; } >"$dir/out"
[ "$before" -ge 4 ] && [ -z "$(leftovers)" ]
check $? "scancel during a run: no process is left on any host"

login timeout 120 salloc "${jobs[@]}" bash -c "$bin/rlaunch $ex/faults sleep & sleep 5; kill -INT \$!; wait \$!; echo rlaunch=\$?" >"$dir/out" 2>&1
for _ in $(seq 100); do [ -z "$(leftovers)" ] && break; sleep 0.1; done
leftovers >>"$dir/out"
[ -z "$(leftovers)" ] && [ "$(grep -c ready "$dir/out")" = 4 ] && grep -qx 'rlaunch=130' "$dir/out" && grep -q 'interrupted; stopping all ranks' "$dir/out"
check $? "SIGINT to rlaunch using srun: it stops every rank, exits 130, and leaves nothing behind"

steps='squeue --steps -h -o "step %i on %N" -j $SLURM_JOB_ID'
login timeout 120 salloc "${jobs[@]}" bash -c "$bin/rlaunch $ex/faults sleep & sleep 5; $steps; kill -9 \$!; sleep 3" >"$dir/out" 2>&1
for _ in $(seq 100); do [ -z "$(leftovers)" ] && break; sleep 0.1; done
leftovers >>"$dir/out"
[ -z "$(leftovers)" ] && [ "$(grep -c ready "$dir/out")" = 4 ] && [ "$(grep -c '^step [0-9.]* on os-h\[2-3\]$' "$dir/out")" = 1 ]
check $? "rlaunch SIGKILLed while its one srun step runs proxies on both hosts: no orphan on any host"
set -e

echo "slurm: $passed passed, $failed failed"
[ "$failed" = 0 ]
