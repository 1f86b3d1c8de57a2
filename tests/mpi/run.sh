#!/usr/bin/env bash
# The launcher suite: oneside under other people's launchers, and inside
# MPI programs. On one host, every run bounded:
#  - Open MPI 4.1's mpirun (PMIx, libpmix opened at run time), MPICH 4.0's
#    mpiexec.hydra on PMI_FD (PMI-2) and with -pmi-port (PMI-2 on a TCP
#    port), each at 1, 2 and 4 ranks, with the program built by its MPI's
#    own wrapper (mpicc.openmpi for mpirun, mpicc.mpich for Hydra):
#    - a hybrid C program (tests/c/hybrid.c), both init orders and both
#      finalize orders: every rank prints "rank R of N (PE P of M) sum S"
#      (an MPI_Allreduce of the ranks), which must be right; PE number =
#      MPI_COMM_WORLD rank, a ring of puts, an MPI_Allreduce and a shmem
#      reduction that must agree;
#    - the same in Rust (examples/hybrid_mpi.rs, its MPI opened at run time);
#    - a plain OpenSHMEM C program (tests/c/ring.c) and a Rust one
#      (examples/hello_put.rs);
#  - the mismatched pairs, an Open MPI build under mpiexec.hydra (PMI_FD and
#    -pmi-port) and an MPICH build under mpirun, at 2 and 4 ranks, both init
#    orders, C and Rust: each stops in shmem_init (oneside::init) with a
#    non-zero status and a message naming the launcher, the MPI and what to
#    type, and prints no answer; at 1 rank the pair runs (MPI's singleton
#    is the whole job); an MPI opened only after oneside::init is caught at
#    finalize, naming the launcher and server the rank joined through;
#  - rlaunch at 1, 2 and 4 ranks of the hybrid MPICH programs: MPICH wires
#    up through rlaunch's PMI-1 port (launcher/src/job/simple_pmi.rs);
#  - what must stop with a message, never run as silent singletons: an Open
#    MPI program under rlaunch (no PMIx server there; the message says
#    mpirun), MPI initialized first under -pmi-port, and a rank that
#    carries a launcher's size but no PMI (OMPI_COMM_WORLD_SIZE=4,
#    PALS_RANKID);
#  - the guide's example (docs/src/mpi.md) with each family's wrapper and
#    launcher, and the mismatch message the guide quotes, as printed;
#  - the tests-sos subset of tests/sos/verbs-subset.txt under mpirun and
#    mpiexec.hydra at 2 ranks;
#  - beside Open MPI's OpenSHMEM: oshrun warns about a program linked
#    against liboshmem, and both wrappers' --version say oneside.
# srun --mpi=pmix and --mpi=pmi2 run in tests/slurm/run.sh; PMI-1 as Flux
# speaks it, in the unit tests (src/bootstrap/pmi/wire/tests.rs); which MPI
# can join which launcher (srun, Flux, PALS too), in the unit tests of
# src/bootstrap/mpi_advice.rs and mpi_agree.rs.
# Needs openmpi-bin, libopenmpi-dev, mpich, libmpich-dev, libpmix2.
set -uo pipefail
# This harness runs more ranks than a small machine has CPUs, on purpose:
# allow it, as --oversubscribe would (without it rlaunch refuses).
export RLAUNCH_OVERSUBSCRIBE=1
cd "$(dirname "$0")/../.."
root=$PWD
for tool in mpicc.openmpi mpirun.openmpi mpicc.mpich mpiexec.hydra; do
  command -v $tool >/dev/null || { echo "mpi suite: $tool is missing (openmpi-bin, libopenmpi-dev, mpich, libmpich-dev)"; exit 1; }
done

echo "== building"
cargo build --workspace --bins --examples --quiet || exit 1
cargo build -p oneside-shmem -p rlaunch --quiet || exit 1  # -p rlaunch: the same oneside build (Cargo.toml)
bin=$root/target/debug
ex=$bin/examples
dir=$(mktemp -d /tmp/oneside-mpi.XXXXXX)
trap 'rm -rf "$dir"' EXIT
for mpi in openmpi mpich; do
  ONESIDE_CC=mpicc.$mpi "$bin/oshcc" -o "$dir/hybrid-$mpi" tests/c/hybrid.c || exit 1
done
"$bin/oshcc" -o "$dir/ring" tests/c/ring.c || exit 1

passed=0
failed=0
check() { # status, description
  if [ "$1" = 0 ]; then
    passed=$((passed + 1)); echo "PASS  $2"
  else
    failed=$((failed + 1)); echo "FAIL  $2"; sed 's/^/      /' "$dir/out" | tail -15
  fi
}
# Runs a launcher line, bounded; its output lands in $dir/out.
run() { timeout 60 "$@" >"$dir/out" 2>&1; }

declare -A launch=(
  [mpirun]="mpirun.openmpi --allow-run-as-root --oversubscribe -np"
  [hydra]="mpiexec.hydra -n"
  [hydra-pmi-port]="mpiexec.hydra -pmi-port -n"
)
declare -A flavour=([mpirun]=openmpi [hydra]=mpich [hydra-pmi-port]=mpich)
declare -A libmpi=([openmpi]=libmpi.so.40 [mpich]=libmpich.so.12)

# What hybrid.c's print mode writes in a job of $1 ranks that agree: every
# rank's line with the right sum, and "hybrid ok", nothing else.
sums_ok() {
  local n=$1 sum=$(($1 * ($1 - 1) / 2))
  [ "$(grep -c "^rank \([0-9]*\) of $n (PE \1 of $n) sum $sum\$" "$dir/out")" = "$n" ] &&
    grep -qx "hybrid ok" "$dir/out" && [ "$(wc -l <"$dir/out")" = $((n + 1)) ]
}
# A run that stopped: non-zero status $1, the message matching $2 (grep
# -E), and no answer printed.
stopped() {
  [ "$1" != 0 ] && grep -qE -- "$2" "$dir/out" && ! grep -qE "sum [0-9]+$|hybrid ok" "$dir/out"
}

echo "== matching pairs: each family's build under its own launcher"
for l in mpirun hydra hydra-pmi-port; do
  for n in 1 2 4; do
    for init in mpi-first shmem-first; do
      for fin in mpi-last shmem-last; do
        if [ $l = hydra-pmi-port ] && [ $init = mpi-first ]; then continue; fi
        run ${launch[$l]} $n "$dir/hybrid-${flavour[$l]}" $init $fin print
        [ $? = 0 ] && sums_ok $n
        check $? "$l -n $n hybrid C (${flavour[$l]}), $init, $fin: right sums, PE = MPI rank, puts, MPI and shmem reductions agree"
        run env ONESIDE_TEST_LIBMPI=${libmpi[${flavour[$l]}]} ${launch[$l]} $n "$ex/hybrid_mpi" $init $fin
        [ $? = 0 ] && [ "$(cat "$dir/out")" = "hybrid ok" ]
        check $? "$l -n $n hybrid Rust (examples/hybrid_mpi.rs), $init, $fin"
      done
    done
    run ${launch[$l]} $n "$dir/ring"
    [ $? = 0 ] && [ "$(cat "$dir/out")" = "ring ok" ]
    check $? "$l -n $n plain OpenSHMEM C (ring.c)"
    run ${launch[$l]} $n "$ex/hello_put"
    [ $? = 0 ] && [ "$(grep -c "^rank [0-9]*/$n received" "$dir/out")" = $n ]
    check $? "$l -n $n plain Rust (hello_put)"
  done
done

echo "== mismatched pairs: stop in init, say what to type, print no answer"
declare -A other=([openmpi]=mpich [mpich]=openmpi)
declare -A names=([mpirun]="Open MPI's mpirun" [hydra]="mpiexec.hydra" [hydra-pmi-port]="mpiexec.hydra -pmi-port")
declare -A advice=(
  [openmpi]='build with `mpicc.mpich` for `mpiexec.hydra`, or run with `mpirun.openmpi`'
  [mpich]='build with `mpicc.openmpi` for `mpirun.openmpi`, or run with `mpiexec.hydra`'
)
declare -A version=([openmpi]="Open MPI v4" [mpich]="MPICH 4")
declare -A build=([openmpi]="an Open MPI build" [mpich]="an MPICH build")
for l in mpirun hydra hydra-pmi-port; do
  mpi=${other[${flavour[$l]}]}
  for n in 2 4; do
    for init in mpi-first shmem-first; do
      said="(started by ${names[$l]}, which set .*) (is|runs) .*${version[$mpi]}.*${advice[$mpi]}"
      run ${launch[$l]} $n "$dir/hybrid-$mpi" $init mpi-last print
      stopped $? "^oneside: shmem_init .*: PE [0-9]+ .*$said"
      check $? "$l -n $n of ${build[$mpi]} (C), $init: stops in shmem_init, names ${names[$l]}, ${version[$mpi]}, what to type"
      run env ONESIDE_TEST_LIBMPI=${libmpi[$mpi]} ${launch[$l]} $n "$ex/hybrid_mpi" $init mpi-last
      stopped $? "^hybrid_mpi: .*rank [0-9]+ .*$said"
      check $? "$l -n $n of the Rust program on $mpi, $init: stops in oneside::init"
    done
  done
done
for l in mpirun hydra; do
  mpi=${other[${flavour[$l]}]}
  run ${launch[$l]} 1 "$dir/hybrid-$mpi" shmem-first mpi-last print
  [ $? = 0 ] && sums_ok 1
  check $? "$l -n 1 of ${build[$mpi]}: runs (MPI's singleton is the whole job)"
done
run env ONESIDE_TEST_LIBMPI=libmpi.so.40 mpiexec.hydra -n 2 "$ex/hybrid_mpi" shmem-first mpi-last open-mpi-late
stopped $? "^hybrid_mpi: .*rank [0-9] of 2 \(joined through the PMI-2 server on PMI_FD=[0-9]+, started by mpiexec.hydra\) is MPI_COMM_WORLD rank 0 of 1 in Open MPI v4"
check $? "mpiexec.hydra -n 2, Open MPI opened after oneside::init: caught at finalize, naming mpiexec.hydra and its PMI-2 server"
run env ONESIDE_TEST_LIBMPI=libmpich.so.12 ${launch[mpirun]} 2 "$ex/hybrid_mpi" shmem-first mpi-last open-mpi-late
stopped $? "^hybrid_mpi: .*rank [0-9] of 2 \(joined through the PMIx server .*, started by Open MPI's mpirun\) is MPI_COMM_WORLD rank 0 of 1 in MPICH 4"
check $? "mpirun -np 2, MPICH opened after oneside::init: caught at finalize, naming mpirun and its PMIx server"

for n in 1 2 4; do
  for init in mpi-first shmem-first; do
    for fin in mpi-last shmem-last; do
      run "$bin/rlaunch" -n $n "$dir/hybrid-mpich" $init $fin
      [ $? = 0 ] && [ "$(cat "$dir/out")" = "hybrid ok" ]
      check $? "rlaunch -n $n hybrid MPICH program, $init, $fin: MPI wires up through rlaunch's PMI-1 port"
      run env ONESIDE_TEST_LIBMPI=libmpich.so.12 "$bin/rlaunch" -n $n "$ex/hybrid_mpi" $init $fin
      [ $? = 0 ] && [ "$(cat "$dir/out")" = "hybrid ok" ]
      check $? "rlaunch -n $n hybrid Rust program on MPICH, $init, $fin"
    done
  done
done

echo "== the guide's hybrid C example (docs/src/mpi.md), built with each family's wrapper under oshcc"
awk '/^```c,mpi$/{on=1; next} /^```$/{on=0} on' docs/src/mpi.md >"$dir/guide.c"
for mpi in mpich openmpi; do
  ONESIDE_CC=mpicc.$mpi "$bin/oshcc" -o "$dir/guide-$mpi" "$dir/guide.c" >"$dir/out" 2>&1 || echo "      guide.c does not build with mpicc.$mpi"
done
run mpiexec.hydra -n 4 "$dir/guide-mpich" && [ "$(cat "$dir/out")" = "sum 6 of 4 ranks" ]
check $? "docs/src/mpi.md's example, built with mpicc.mpich, prints what the guide says under mpiexec.hydra -n 4"
run ${launch[mpirun]} 4 "$dir/guide-openmpi" && [ "$(cat "$dir/out")" = "sum 6 of 4 ranks" ]
check $? "docs/src/mpi.md's example, built with mpicc.openmpi, prints what the guide says under mpirun.openmpi -np 4"
# The guide quotes PE 0's message for the Open MPI build under Hydra: it
# must be what the program prints (the descriptor number aside).
quoted=$(awk '/^```text,mismatch$/{on=1; next} /^```$/{on=0} on' docs/src/mpi.md | sed 's/PMI_FD=[0-9]*/PMI_FD=N/')
run mpiexec.hydra -n 4 "$dir/guide-openmpi"
status=$?
[ $status != 0 ] && [ -n "$quoted" ] && sed 's/PMI_FD=[0-9]*/PMI_FD=N/' "$dir/out" | grep -qxF -- "$quoted" && ! grep -q "^sum" "$dir/out"
check $? "docs/src/mpi.md quotes the message an mpicc.openmpi build prints under mpiexec.hydra -n 4, word for word"

echo "== what must stop with a message"
for init in mpi-first shmem-first; do
  run "$bin/rlaunch" -n 2 "$dir/hybrid-openmpi" $init mpi-last print
  stopped $? "^oneside: shmem_init .*PE [01] of 2 \(started by rlaunch, .*Open MPI v4.*rlaunch serves none.*run with .mpirun.openmpi."
  check $? "rlaunch -n 2 of an Open MPI program, $init: stops in shmem_init, says to use mpirun (rlaunch serves no PMIx)"
done
run mpiexec.hydra -pmi-port -n 2 "$dir/hybrid-mpich" mpi-first mpi-last
[ $? != 0 ] && grep -q "start without -pmi-port" "$dir/out"
check $? "mpiexec.hydra -pmi-port, MPI first: stops with what to do"
run env OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_RANK=1 "$ex/hello_put"
[ $? != 0 ] && grep -q "OMPI_COMM_WORLD_SIZE=4 says this process is one of 4 ranks" "$dir/out"
check $? "a rank with Open MPI's size but no PMIx server: stops, no singleton"
run env PALS_RANKID=3 PALS_NODEID=0 "$dir/ring"
[ $? != 0 ] && grep -q "HPE PALS" "$dir/out" && ! grep -q "ring ok" "$dir/out"
check $? "a PALS rank without PMIx: stops, no singleton"
run env PMIX_RANK=0 PMIX_NAMESPACE=x PMIX_SERVER_URI41="x.0;tcp4://127.0.0.1:9" ONESIDE_PMIX_LIBRARY=libpmix-missing.so "$ex/hello_put"
[ $? != 0 ] && grep -q "ONESIDE_PMIX_LIBRARY" "$dir/out"
check $? "a PMIx launch where libpmix cannot be opened: names the library and the variable"

echo "== a subset of Sandia OpenSHMEM's tests (tests/sos/verbs-subset.txt) under mpirun and mpiexec.hydra, 2 ranks"
# CI's tests/sos/run.sh has built them against the debug C API; alone,
# this builds them once (a few minutes).
sos=$root/target/sos/build/test
if [ ! -x "$sos/unit/hello" ]; then
  BUILD_ONLY=1 DIRS="test/unit test/apps test/spec-example" tests/sos/run.sh >/dev/null 2>&1 || true
fi
for l in mpirun hydra; do
  sos_passed=0 sos_failed=0
  for t in $(grep -v '^#' tests/sos/verbs-subset.txt); do
    if (cd "$sos/${t%/*}" && run ${launch[$l]} 2 "./${t#*/}"); then
      sos_passed=$((sos_passed + 1))
    else
      sos_failed=$((sos_failed + 1)); echo "      $t under $l:"; tail -5 "$dir/out" | sed 's/^/        /'
    fi
  done
  [ $sos_failed = 0 ] && [ $sos_passed -gt 40 ]
  check $? "tests-sos subset under $l -n 2: $sos_passed passed, $sos_failed failed"
done

echo "== living beside Open MPI's OpenSHMEM"
mpicc.openmpi -o "$dir/ompi-ring" tests/c/ring.c -loshmem >"$dir/out" 2>&1 &&
  run "$bin/oshrun" -np 1 "$dir/ompi-ring"
grep -q "linked against Open MPI's OpenSHMEM (liboshmem.so)" "$dir/out"
check $? "oshrun of a program built by Open MPI's wrappers: warns, naming the library and the launcher it needs"
run "$bin/oshrun" -np 2 "$dir/ring"
[ $? = 0 ] && ! grep -q warning "$dir/out"
check $? "oshrun of a program built by oneside's oshcc: no warning"
"$bin/oshrun" --version | grep "(oneside; " >/dev/null && "$bin/oshcc" --version | grep "^oshcc (oneside)" >/dev/null
check $? "oshrun --version and oshcc --version say oneside"

echo "mpi suite: $passed passed, $failed failed"
[ $failed = 0 ]
