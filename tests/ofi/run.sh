#!/usr/bin/env bash
# The ofi suite on one host, through Debian's libfabric (1.17): the
# integration tests (examples, course, collectives, the model test, threads)
# over tcp;ofi_rxm at 2 and 4 ranks (the model test and collectives at 3;
# examples and the model test again without a CQ wait descriptor, and
# with the segment registered in parts, as over shm),
# the ofi-specific tests of tests/ofi.rs, the same suites and the
# collectives over shm at 2, 3 and 4 ranks and again at 2 and 3 with
# cross-memory attach off (shm's writes then keep the delivery flag,
# src/transport/ofi/completion.rs), examples and collectives over
# udp;ofi_rxd at 2 and 4, the demo over sockets, and a
# subset of Sandia OpenSHMEM's test suite (tests/sos/verbs-subset.txt) over
# tcp;ofi_rxm through oshrun. Every run is bounded. Needs libfabric1 (the
# library is opened at run time; nothing is built against it).
set -euo pipefail
# This harness runs more ranks than a small machine has CPUs, on purpose:
# allow it, as --oversubscribe would (without it rlaunch refuses).
export RLAUNCH_OVERSUBSCRIBE=1
cd "$(dirname "$0")/../.."
root=$PWD

# grep reads all of ldconfig's list (no -q): quitting at the first match
# would end ldconfig with SIGPIPE, which pipefail counts as a failure.
if ! ldconfig -p | grep 'libfabric\.so\.1 ' > /dev/null; then
  echo "ofi suite: libfabric.so.1 is not installed (Debian: libfabric1)"; exit 1
fi

echo "== building (host)"
cargo build --workspace --bins --examples --quiet

echo "== integration tests over ofi, tcp;ofi_rxm, 2 and 4 ranks"
# Only tests/ofi.rs needs the feature; the other suites reuse cargo test
# --workspace's build (a feature set is a build of its own). The race
# checker's C program runs in its GCC build only: its other builds differ
# in the instrumentation, which the host's runs check.
ONESIDE_TEST_TRANSPORTS=ofi ONESIDE_OFI_PROVIDER='tcp;ofi_rxm' ONESIDE_TEST_SIZES=2,4 ONESIDE_RACE_BUILDS=gcc \
  cargo test -p rlaunch --test examples --test course --test coll --test model --test threads --test races -- --test-threads=1
ONESIDE_TEST_TRANSPORTS=ofi ONESIDE_OFI_PROVIDER='tcp;ofi_rxm' ONESIDE_TEST_SIZES=2,4 \
  cargo test -p rlaunch --features harness-tests --test ofi -- --test-threads=1
echo "== floods of non-blocking operations over tcp;ofi_rxm (tests/c/flood.c)"
ONESIDE_TEST_TRANSPORTS=ofi ONESIDE_OFI_PROVIDER='tcp;ofi_rxm' \
  cargo test -p rlaunch --test capi floods -- --test-threads=1

echo "== over tcp;ofi_rxm, 3 ranks: the model test and collectives"
ONESIDE_TEST_TRANSPORTS=ofi ONESIDE_OFI_PROVIDER='tcp;ofi_rxm' ONESIDE_TEST_SIZES=3 \
  cargo test -p rlaunch --test model --test coll -- --test-threads=1

echo "== over tcp;ofi_rxm without a CQ wait descriptor (ONESIDE_OFI_CQ_WAIT=none), 2 ranks: examples and the model test"
# The ranks' own waits then serve their peers (src/transport/ofi/arrivals.rs).
ONESIDE_OFI_CQ_WAIT=none ONESIDE_TEST_TRANSPORTS=ofi ONESIDE_OFI_PROVIDER='tcp;ofi_rxm' ONESIDE_TEST_SIZES=2 \
  cargo test -p rlaunch --test examples --test model -- --test-threads=1

echo "== registered in parts (ONESIDE_OFI_REGISTER=parts, as a provider that pins memory does), tcp;ofi_rxm and shm, 2 ranks: examples, the model test, the C heap test"
# Every object then lies in a part of its own, registered as the heap grows
# (src/transport/parts.rs), and the C programs' globals in the data's part.
for provider in 'tcp;ofi_rxm' shm; do
  ONESIDE_OFI_REGISTER=parts ONESIDE_TEST_TRANSPORTS=ofi ONESIDE_OFI_PROVIDER=$provider ONESIDE_TEST_SIZES=2 \
    cargo test -p rlaunch --test examples --test model -- --test-threads=1
  ONESIDE_OFI_REGISTER=parts ONESIDE_TEST_TRANSPORTS=ofi ONESIDE_OFI_PROVIDER=$provider \
    cargo test -p rlaunch --test capi the_heap_grows -- --test-threads=1
done

echo "== over shm, 2, 3 and 4 ranks: examples, model, threads, course, collectives"
# At 3 ranks the collectives' uneven shares include empty puts, which shm
# never completes if posted: they stalled here until the transport stopped
# posting them.
ONESIDE_TEST_TRANSPORTS=ofi ONESIDE_OFI_PROVIDER=shm ONESIDE_TEST_SIZES=2,3,4 \
  cargo test -p rlaunch --test examples --test model --test threads --test course --test coll \
  -- --test-threads=1

echo "== over shm with cross-memory attach off (FI_SHM_DISABLE_CMA=1), 2 and 3 ranks: writes keep the delivery flag"
FI_SHM_DISABLE_CMA=1 ONESIDE_TEST_TRANSPORTS=ofi ONESIDE_OFI_PROVIDER=shm ONESIDE_TEST_SIZES=2,3 \
  cargo test -p rlaunch --test examples --test model --test coll -- --test-threads=1

echo "== the fault campaign over tcp;ofi_rxm and shm: 56 faults each (tests/fault_campaign.rs)"
for provider in 'tcp;ofi_rxm' shm; do
  ONESIDE_TEST_TRANSPORTS=ofi ONESIDE_OFI_PROVIDER=$provider ONESIDE_FAULTS=56 \
    cargo test -p rlaunch --test fault_campaign -- --nocapture 2>&1 | grep -E '^\||^fault campaign|missed|Fault [{]|^rlaunch|^test result'
done

echo "== over udp;ofi_rxd, 2 and 4 ranks: examples and collectives"
# Its fetching atomics crash libfabric (ofiwg/libfabric#11814): they are a
# clear error (tests/ofi.rs), so the suites that use them are not run here.
ONESIDE_TEST_TRANSPORTS=ofi ONESIDE_OFI_PROVIDER='udp;ofi_rxd' ONESIDE_TEST_SIZES=2,4 \
  cargo test -p rlaunch --test examples --test coll -- --test-threads=1

# sockets (deprecated upstream) hangs at exit after atomics: the demo only.
echo "== the demo over sockets, 2 ranks"
timeout 120 target/debug/rlaunch -n 2 --transport ofi --ofi-provider sockets \
  target/debug/examples/hello_put > target/ofi-sockets-hello_put.log 2>&1 \
  || { echo "FAIL: hello_put over sockets"; cat target/ofi-sockets-hello_put.log; exit 1; }
grep -q 'via ofi' target/ofi-sockets-hello_put.log \
  || { echo "FAIL: hello_put over sockets printed no result"; cat target/ofi-sockets-hello_put.log; exit 1; }
echo "ok: hello_put over sockets"

echo "== a subset of tests-sos over ofi, 2 PEs: tcp;ofi_rxm, shm, udp;ofi_rxd"
out=$root/target/sos-ofi
. tests/sos/built.sh
built=$(sos_built "$out")
bin=$root/target/release
failed=0
# Over udp;ofi_rxd a program with fetching atomics must stop with the
# clear error that names the libfabric bug (never crash or answer
# wrongly); bigput's 10,000 large puts outlast the bound over rxd's UDP,
# and gups's stream of atomics sometimes loses a completion over rxd (1 run
# in about 10 stalls; open, see the guide, docs/src/networks.md), so neither runs over rxd.
refusal='udp;ofi_rxd crashes in fetching atomics'
for provider in 'tcp;ofi_rxm' shm 'udp;ofi_rxd'; do
  passed=0 refused=0
  for t in $(grep -v '^#' tests/sos/verbs-subset.txt); do
    [ "$provider" = 'udp;ofi_rxd' ] && case $t in unit/bigput | apps/gups) continue ;; esac
    if (cd "$built/test/${t%/*}" && LD_LIBRARY_PATH=$bin ONESIDE_TRANSPORT=ofi ONESIDE_OFI_PROVIDER="$provider" \
          timeout -k 5 120 "$bin/oshrun" -np 2 "./${t#*/}" > "$out/last.log" 2>&1); then
      passed=$((passed + 1))
    elif [ "$provider" = 'udp;ofi_rxd' ] && grep -q "$refusal" "$out/last.log"; then
      refused=$((refused + 1))
    else
      echo "| $t | ofi $provider | FAIL |"; tail -8 "$out/last.log" | sed 's/^/    /'; failed=$((failed + 1))
    fi
  done
  echo "tests-sos over ofi $provider: $passed passed, $refused refused clearly (fetching atomics)"
done
echo "tests-sos over ofi: $failed failed"
[ "$failed" -eq 0 ]
