#!/usr/bin/env bash
# The ofi suite on one host, through Debian's libfabric (1.17): the
# integration tests (examples, course, collectives, the model test, threads)
# over tcp;ofi_rxm at 2 and 4 ranks, the ofi-specific tests of tests/ofi.rs,
# the demo over shm and sockets at 2 ranks, and a
# subset of Sandia OpenSHMEM's test suite (tests/sos/verbs-subset.txt) over
# tcp;ofi_rxm through oshrun. Every run is bounded. Needs libfabric1 (the
# library is opened at run time; nothing is built against it).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD

if ! ldconfig -p | grep -q 'libfabric\.so\.1 '; then
  echo "ofi suite: libfabric.so.1 is not installed (Debian: libfabric1)"; exit 1
fi

echo "== building (host)"
cargo build --workspace --bins --examples --quiet

echo "== integration tests over ofi, tcp;ofi_rxm, 2 and 4 ranks"
ONESIDE_TEST_TRANSPORTS=ofi ONESIDE_OFI_PROVIDER='tcp;ofi_rxm' ONESIDE_TEST_SIZES=2,4 \
  cargo test -p rlaunch --features ofi-tests --test examples --test course --test coll --test model \
  --test threads --test ofi -- --test-threads=1

# Not yet: atomics over shm (libfabric 1.17's shm crashed or hung in them)
# and a clean exit after atomics over sockets; see ARCHITECTURE.
echo "== the demo over shm and sockets, 2 ranks"
for provider in shm sockets; do
  for program in hello_put; do
    timeout 120 target/debug/rlaunch -n 2 --transport ofi --ofi-provider "$provider" \
      target/debug/examples/$program > target/ofi-$provider-$program.log 2>&1 \
      || { echo "FAIL: $program over $provider"; cat target/ofi-$provider-$program.log; exit 1; }
    grep -q 'via ofi\|ok: ' target/ofi-$provider-$program.log \
      || { echo "FAIL: $program over $provider printed no result"; cat target/ofi-$provider-$program.log; exit 1; }
    echo "ok: $program over $provider"
  done
done

echo "== a subset of tests-sos over ofi (tcp;ofi_rxm), 2 PEs"
out=$root/target/sos-ofi
PROFILE=release BUILD_ONLY=1 OUT=$out tests/sos/run.sh
bin=$root/target/release
failed=0
passed=0
for t in $(grep -v '^#' tests/sos/verbs-subset.txt); do
  if (cd "$out/build/test/${t%/*}" && ONESIDE_TRANSPORT=ofi ONESIDE_OFI_PROVIDER='tcp;ofi_rxm' \
        timeout -k 5 120 "$bin/oshrun" -np 2 "./${t#*/}" > "$out/last.log" 2>&1); then
    passed=$((passed + 1))
  else
    echo "| $t | ofi tcp;ofi_rxm | FAIL |"; tail -8 "$out/last.log" | sed 's/^/    /'; failed=$((failed + 1))
  fi
done
echo "tests-sos over ofi: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
