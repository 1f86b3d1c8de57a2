#!/usr/bin/env bash
# Python programs on oneside through shmem4py, the OpenSHMEM binding by
# mpi4py's authors, from PyPI and unmodified: builds it against our oshcc
# in a venv (target/python/venv), then runs its own test suite (`python -m
# unittest discover` on the test/ folder of the sdist pip downloads) alone
# (1 PE) and under oshrun at 2 and 4 PEs over shared memory and TCP, and
# the course programs in examples/python/ the same way, and checks that a
# mistake in a Python program (tests/python/bad_put.py) names its line, and
# that a PE failing while the others compute ends the job at once
# (tests/python/fail_early.py), and that a failed allocation says why once
# (tests/python/big_alloc.py). Every run is
# bounded in time. Prints one line per run and a closing count; exits
# non-zero when any run failed.
#
#   tests/python/run.sh                 # debug build, shm and tcp
#   TRANSPORTS=shm SIZES="2" tests/python/run.sh
#   BUILD_ONLY=1 tests/python/run.sh    # only the venv (for tests/vm/verbs-c-python.sh)
set -euo pipefail
# This harness runs more ranks than a small machine has CPUs, on purpose:
# allow it, as --oversubscribe would (without it rlaunch refuses).
export RLAUNCH_OVERSUBSCRIBE=1
cd "$(dirname "$0")/../.."
root=$PWD
profile=${PROFILE:-debug}
transports=${TRANSPORTS:-shm tcp}
sizes=${SIZES:-2 4}
per_run=${PER_RUN_TIMEOUT:-600}
out=$root/target/python
# The binding and its suite, pinned so a new release cannot change the test
# under us; NumPy 2 changed copy and overflow rules that shmem4py 1.0.0's
# own code and tests predate, so its NumPy is the last 1.x.
shmem4py=shmem4py==1.0.0
numpy='numpy<2'
python=${PYTHON:-/usr/bin/python3}

build=(-p oneside-shmem -p rlaunch)
[ "$profile" = release ] && build+=(--release)
cargo build --quiet "${build[@]}"
bin=$(realpath -m "${CARGO_TARGET_DIR:-$root/target}")/$profile

mkdir -p "$out"
venv=$out/venv/bin
# What the binding was built against: oshcc, the headers it points at and the
# pinned release. BUILD_ONLY keeps a venv built against the same (the
# python stage's, for the guest); a full run always builds it again.
stamp="$shmem4py $(cat "$bin/oshcc" $(find capi/include -type f | sort) | sha256sum | cut -d' ' -f1)"
if [ "${BUILD_ONLY:-0}" = 1 ] && [ "$(cat "$out/built-with" 2>/dev/null)" = "$stamp" ] \
  && [ -x "$venv/python" ] && compgen -G "$out/sdist/shmem4py-*/test" > /dev/null; then
  echo "== shmem4py in $out/venv is built with this $bin/oshcc already"
  exit 0
fi
echo "== shmem4py into $out/venv, built with $bin/oshcc"
rm -f "$out/built-with"
[ -x "$out/venv/bin/python" ] || "$python" -m venv "$out/venv"
"$venv/pip" install --quiet --disable-pip-version-check "$numpy" cffi
# The documented command (the guide, docs/src/python.md): no cached wheel, so
# the binding is compiled against this build's shmem.h.
OSHCC=$bin/oshcc "$venv/pip" install --quiet --disable-pip-version-check --no-cache-dir \
  --force-reinstall --no-deps --no-binary shmem4py "$shmem4py" >"$out/install.log" 2>&1 || {
  tail -40 "$out/install.log"; exit 1; }
rm -rf "$out/sdist" && mkdir -p "$out/sdist"
"$venv/pip" download --quiet --disable-pip-version-check --no-deps --no-binary :all: -d "$out/sdist" "$shmem4py"
tar -xzf "$out"/sdist/shmem4py-*.tar.gz -C "$out/sdist"
suite=$(echo "$out"/sdist/shmem4py-*/test)
echo "$stamp" > "$out/built-with"
[ "${BUILD_ONLY:-0}" = 1 ] && exit 0

passed=0 failed=0
# run NAME PES TRANSPORT DIR COMMAND...: one bounded run in DIR; PES 1 runs
# the program alone, as a singleton.
run() {
  local name=$1 pes=$2 transport=$3 dir=$4 log
  shift 4
  log=$out/$name-$pes-$transport.log
  local launch=(timeout -k 5 "$per_run")
  [ "$pes" -gt 1 ] && launch+=("$bin/oshrun" -np "$pes" --timeout "$per_run")
  if (cd "$dir" && ONESIDE_TRANSPORT=$transport PYTHONDONTWRITEBYTECODE=1 "${launch[@]}" "$@") >"$log" 2>&1; then
    passed=$((passed + 1))
    echo "| $name | $pes | $transport | PASS | $(grep -E '^(Ran |pi: |heat: )' "$log" | sort -u | head -1) |"
  else
    failed=$((failed + 1))
    echo "| $name | $pes | $transport | FAIL |"
    tail -20 "$log" | sed 's/^/    /'
  fi
}

first=${transports%% *}
echo "| run | PEs | transport | result | |"
for transport in $transports; do
  for pes in 1 $sizes; do
    # One PE runs alone, on no transport: once is enough.
    [ "$pes" = 1 ] && [ "$transport" != "$first" ] && continue
    run shmem4py-suite "$pes" "$transport" "$suite" "$venv/python" -m unittest discover -s .
    run pi.py "$pes" "$transport" "$root" "$venv/python" examples/python/pi.py
    run heat.py "$pes" "$transport" "$root" "$venv/python" examples/python/heat.py
  done
done
# An error from a Python program names its own file, line and function,
# not the binding's generated C (one shape with C's errors).
log=$out/bad_put.log
expected="oneside: shmem_int_put at $root/tests/python/bad_put.py:11 in send (Python): PE 1: put targets PE 99, but the job has 2 PEs (0 to 1)"
if (cd "$root" && timeout -k 5 120 "$bin/oshrun" -np 2 "$venv/python" tests/python/bad_put.py) >"$log" 2>&1; then
  failed=$((failed + 1)); echo "| bad_put.py | 2 | shm | FAIL: exited 0 |"
elif grep -qF "$expected" "$log" && ! grep -q "returned" "$log"; then
  passed=$((passed + 1)); echo "| bad_put.py | 2 | shm | PASS | the error names bad_put.py:11 in send |"
else
  failed=$((failed + 1)); echo "| bad_put.py | 2 | shm | FAIL: expected '$expected' |"; sed 's/^/    /' "$log"
fi
# A PE that fails while the others compute for 10 s ends the job at once,
# with its status and its own message first (sys.exit and an uncaught
# exception reach shmem4py's exit hook before the status exists; the
# library leaves the farewell to glibc's on_exit, which knows it). A PE
# that exits 0 early is legal: the job succeeds once the others finish.
for case in "exit 3" "raise 1" "ok 0"; do
  set -- $case
  log=$out/fail_early-$1.log start=$(date +%s%N)
  status=0
  (cd "$root" && timeout -k 5 120 "$bin/oshrun" -np 4 --oversubscribe "$venv/python" tests/python/fail_early.py "$1" 10) >"$log" 2>&1 || status=$?
  took=$(( ($(date +%s%N) - start) / 1000000 ))
  bound=4000; [ "$1" = ok ] && bound=60000
  if [ "$status" = "$2" ] && [ "$took" -lt "$bound" ] && { [ "$1" != raise ] || grep -q "RuntimeError: PE 1 gives up" "$log"; }; then
    passed=$((passed + 1)); echo "| fail_early.py $1 | 4 | shm | PASS | status $status in $took ms |"
  else
    failed=$((failed + 1)); echo "| fail_early.py $1 | 4 | shm | FAIL: status $status (want $2) in $took ms (bound $bound) |"; sed 's/^/    /' "$log"
  fi
done
# A failed allocation says why once, from PE 0, at the Python line that
# asked (shmem4py's MemoryError says only "returned NULL"); caught, the
# program goes on.
log=$out/big_alloc.log
expected="oneside: shmem_calloc: PE 0: returned NULL: asked for 67108864 bytes"
status=0
(cd "$root" && SHMEM_SYMMETRIC_SIZE=16M timeout -k 5 120 "$bin/oshrun" -np 2 "$venv/python" tests/python/big_alloc.py) >"$log" 2>&1 || status=$?
if [ "$status" != 0 ] && [ "$(grep -cF "$expected" "$log")" = 1 ] && ! grep -q "PE 1: returned NULL" "$log" \
  && grep -q "raise the cap SHMEM_SYMMETRIC_SIZE.*(at $root/tests/python/big_alloc.py:11 in <module>)" "$log" && ! grep -q "SIGSEGV" "$log"; then
  passed=$((passed + 1)); echo "| big_alloc.py | 2 | shm | PASS | one line from PE 0 names the cap and big_alloc.py:11 |"
else
  failed=$((failed + 1)); echo "| big_alloc.py | 2 | shm | FAIL: status $status |"; sed 's/^/    /' "$log"
fi
log=$out/big_alloc-catch.log
if (cd "$root" && SHMEM_SYMMETRIC_SIZE=16M timeout -k 5 120 "$bin/oshrun" -np 2 "$venv/python" tests/python/big_alloc.py catch) >"$log" 2>&1 \
  && [ "$(grep -c "caught MemoryError and allocated again" "$log")" = 2 ]; then
  passed=$((passed + 1)); echo "| big_alloc.py catch | 2 | shm | PASS | both PEs go on |"
else
  failed=$((failed + 1)); echo "| big_alloc.py catch | 2 | shm | FAIL |"; sed 's/^/    /' "$log"
fi
# Hang and deadlock reports name the Python lines too: the wait and the
# allocation of the word it waits for.
log=$out/deadlock.log
(cd "$root" && timeout -k 5 120 "$bin/oshrun" -np 2 "$venv/python" tests/python/deadlock.py) >"$log" 2>&1 || true
if grep -q "shmem_int_wait_until at $root/tests/python/deadlock.py:7 in <module> (Python)" "$log" \
  && grep -q "allocated at $root/tests/python/deadlock.py:5 in <module> (Python)" "$log" \
  && grep -q "rlaunch: deadlock:" "$log" && ! grep -q "shmem4py.api.c" "$log"; then
  passed=$((passed + 1)); echo "| deadlock.py | 2 | shm | PASS | the report names deadlock.py:7 and :5 |"
else
  failed=$((failed + 1)); echo "| deadlock.py | 2 | shm | FAIL |"; sed 's/^/    /' "$log"
fi
echo "python: $passed passed, $failed failed"
[ "$failed" = 0 ]
