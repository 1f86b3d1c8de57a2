#!/usr/bin/env bash
# Builds Sandia OpenSHMEM's test suite (../shared/suites/tests-sos, BSD)
# against oneside's C API with its own autotools, runs `make check` in
# test/unit, test/spec-example and test/apps over each transport, and
# writes the pass table (test, transport, result) to $OUT/sos-results.md.
#
#   tests/sos/run.sh                      # shm and tcp, debug build
#   TRANSPORTS="shm" PROFILE=release tests/sos/run.sh
#   DEPRECATED=1 DIRS=test/unit OUT=target/sos-deprecated tests/sos/run.sh
#       # --enable-deprecated-tests: the same programs on the pre-1.5 names
#   PROFILE=release BUILD_ONLY=1 OUT=target/sos-verbs tests/sos/run.sh
#       # only builds (for tests/vm/sos-verbs.sh, which runs them over verbs)
#
# Exit status: 0 when every test that is not listed in tests/sos/skip.txt
# passed on every transport.
set -euo pipefail
# This harness runs more ranks than a small machine has CPUs, on purpose:
# allow it, as --oversubscribe would (without it rlaunch refuses).
export RLAUNCH_OVERSUBSCRIBE=1
cd "$(dirname "$0")/../.."
root=$PWD
suite=$(cd ../shared/suites/tests-sos && pwd)
profile=${PROFILE:-debug}
transports=${TRANSPORTS:-shm tcp}
out=$(realpath -m "${OUT:-$root/target/sos}")
dirs=${DIRS:-test/unit test/spec-example test/apps}
per_test=${PER_TEST_TIMEOUT:-120}
configure_extra=()
[ "${DEPRECATED:-0}" = 1 ] && configure_extra+=(--enable-deprecated-tests)

build=(-p oneside-shmem -p rlaunch)
[ "$profile" = release ] && build+=(--release)
[ -n "${FEATURES:-}" ] && build+=(--features "$FEATURES")
cargo build "${build[@]}"
bin=$(realpath -m "${CARGO_TARGET_DIR:-$root/target}")/$profile

rm -rf "$out" && mkdir -p "$out"
cp -r "$suite" "$out/src"
(cd "$out/src" && ./autogen.sh >"$out/autogen.log" 2>&1)

# The runner bounds every test: a hang is a failure, never a stuck CI.
cat >"$out/runner" <<RUNNER
#!/bin/sh
exec timeout -k 5 $per_test "$bin/oshrun" "\$@"
RUNNER
chmod +x "$out/runner"

mkdir -p "$out/build"
cd "$out/build"
"$out/src/configure" CC="$bin/oshcc" --with-test-runner="$out/runner -np \$(NPROCS)" \
  --disable-cxx --disable-fortran ${configure_extra[@]+"${configure_extra[@]}"} >"$out/configure.log" 2>&1
for d in $dirs; do
  make -j2 -k -C "$d" check TESTS= >"$out/build-$(basename "$d").log" 2>&1 || true
done
[ "${BUILD_ONLY:-0}" = 1 ] && exit 0

table=$out/sos-results.md
echo "| test | transport | result |" >"$table"
echo "| --- | --- | --- |" >>"$table"
failed=0
for transport in $transports; do
  for d in $dirs; do
    ONESIDE_TRANSPORT=$transport make -k -C "$d" check-TESTS >"$out/check-$(basename "$d")-$transport.log" 2>&1 || true
    for trs in "$d"/*.trs; do
      [ -e "$trs" ] || continue
      name=$(basename "$trs" .trs)
      result=$(sed -n 's/^:test-result: //p' "$trs")
      if grep -qx "$name" "$root/tests/sos/skip.txt"; then
        result="$result (listed in skip.txt)"
      elif [ "$result" != PASS ]; then
        failed=$((failed + 1))
      fi
      echo "| $(basename "$d")/$name | $transport | $result |" >>"$table"
    done
    # The next transport's run must run every test again.
    rm -f "$d"/*.trs "$d"/*.log
  done
done
echo "tests-sos: $(grep -c '| PASS |' "$table") passed, $failed failed; table in $table"
[ "$failed" -eq 0 ]
