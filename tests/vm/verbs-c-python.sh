#!/usr/bin/env bash
# Over verbs, in one Soft-RoCE guest: the OpenSHMEM 1.6 C test
# (tests/c/spec16.c), progress at the origin (tests/c/progress.c, within
# 500 ms here, as everything is emulated), the
# profiling interface (tests/c/profiler.c preloaded around
# tests/c/profiled.c, counts checked exactly), floods of non-blocking
# operations (tests/c/flood.c: gets, puts, signals and a mix, each result
# checked), and shmem4py's own test
# suite and examples/python at 2 PEs. The C programs are built on the host
# against the release library (target/release, as
# tests/vm/sos-verbs.sh builds it); the Python venv is tests/python/run.sh's,
# whose binding loads that library in the guest through LD_LIBRARY_PATH
# (oshcc's rpath is a RUNPATH, which LD_LIBRARY_PATH overrides). Exits
# non-zero when a run fails or the guest does not finish.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
bin=$root/target/release
out=$root/target/verbs-c-python

echo "== building against the release library (host)"
cargo build --release --quiet -p oneside-shmem -p rlaunch
rm -rf "$out" && mkdir -p "$out"
for prog in spec16 progress profiled flood; do
  "$bin/oshcc" -std=c11 -Wall -Werror -g -o "$out/$prog" "tests/c/$prog.c"
done
"$bin/oshcc" -std=c11 -Wall -Werror -shared -fPIC -o "$out/libprofiler.so" tests/c/profiler.c
BUILD_ONLY=1 tests/python/run.sh >/dev/null
venv=$root/target/python/venv/bin
suite=$(echo "$root"/target/python/sdist/shmem4py-*/test)

script="cd $out
export ONESIDE_TRANSPORT=verbs PYTHONDONTWRITEBYTECODE=1
failed=0
# check NAME WANT COMMAND...: passes when COMMAND exits 0 and prints WANT lines matching it.
check() {
  name=\$1; want=\$2; shift 2
  if timeout -k 5 ${PER_RUN_TIMEOUT:-900} \"\$@\" > \$TMPDIR/out 2>&1 && [ \"\$(grep -c -- \"\$want\" \$TMPDIR/out)\" = 2 -o \"\$want\" = '' ]; then
    echo \"| \$name | verbs | PASS |\"
  else
    echo \"| \$name | verbs | FAIL |\"; sed 's/^/    /' \$TMPDIR/out | tail -15; failed=\$((failed + 1))
  fi
}
check spec16 '' $bin/oshrun -np 2 ./spec16
check progress '' $bin/oshrun -np 2 ./progress 500
check flood-get '' $bin/oshrun -np 2 ./flood get one 200000
check flood-put '' $bin/oshrun -np 2 ./flood put both 200000
check flood-signal '' $bin/oshrun -np 2 ./flood signal both 50000
check flood-mixed '' $bin/oshrun -np 2 ./flood mixed both 50000
check profiler 'putmem 3, long_p 5, long_atomic_fetch_add 7, barrier_all 4, pcontrol 2 (level 1)' \\
  env LD_PRELOAD=$out/libprofiler.so $bin/oshrun -np 2 ./profiled
check shmem4py-suite '^OK' sh -c 'cd $suite && LD_LIBRARY_PATH=$bin $bin/oshrun -np 2 $venv/python -m unittest discover -s .'
check pi.py '' env LD_LIBRARY_PATH=$bin $bin/oshrun -np 2 $venv/python $root/examples/python/pi.py
check heat.py '' env LD_LIBRARY_PATH=$bin $bin/oshrun -np 2 $venv/python $root/examples/python/heat.py
exit \$failed"

# tests/vm/one-guest.sh boots one guest for this and the other guest suites:
# it asks for the guest's script (VM_SCRIPT_OUT) instead of a boot of its own.
if [ -n "${VM_SCRIPT_OUT:-}" ]; then printf '%s\n' "$script" > "$VM_SCRIPT_OUT"; exit 0; fi
echo "== running in the Soft-RoCE guest"
status=0
VM_TIMEOUT=${VM_TIMEOUT:-1800} tests/vm/vm.sh "$script" | tee "$out/guest.log" || status=$?
echo "verbs C and Python: $(grep -c '| PASS |' "$out/guest.log") passed, $(grep -c '| FAIL |' "$out/guest.log") failed"
exit "$status"
