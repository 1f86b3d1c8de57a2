#!/usr/bin/env bash
# The verbs suite: builds the examples (every build has the verbs
# transport, which opens libibverbs at run time) and the integration
# tests, in release, and runs them inside one Soft-RoCE guest with --transport verbs at 2
# and 4 ranks, plus the RDMA-specific tests of tests/verbs.rs, and the
# profile's and hang reports' tests (tests/profile.rs, tests/hang.rs), and
# the race checker's verdicts (tests/races.rs, its C program built here); then,
# in the same guest, the examples and the model test over libfabric's
# verbs;ofi_rxm (--transport ofi, 2 ranks), through the host's libfabric1
# seen over 9p. rxm sizes its completion queue by FI_UNIVERSE_SIZE (default
# 256), more than rxe's max_cqe (32767) holds: the guest keeps it at 64.
# Last, the fault campaign (tests/fault_campaign.rs) over verbs;ofi_rxm
# (VM_OFI_FAULTS) and verbs (VM_FAULTS), 14 each by default: each family
# once, half of them SIGKILL and half SIGSTOP, with the host's bound: each
# job ended within 5 s of its fault, named, with nothing left.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)

# Release builds: the guest emulates every instruction (QEMU TCG), so the
# optimizer's work pays back many times over; the tests find rlaunch, the
# examples and the C library in target/release from their own path.
echo "== building (host, release)"
cargo build --release --workspace --bins --examples --quiet
cargo build --release -p oneside-shmem -p rlaunch --quiet  # with rlaunch: the same oneside build (Cargo.toml)
# Builds rlaunch's integration tests named by "$@" and prints their paths.
executables() {
  cargo test --release -p rlaunch "$@" --no-run --message-format=json 2>/dev/null \
    | grep -o '"executable":"[^"]*/deps/[^"]*"' | cut -d'"' -f4
}
tests=$(executables --features harness-tests --test examples --test course --test coll --test model --test threads --test verbs --test profile --test hang)
[ -n "$tests" ] || { echo "run-suite: no test executables were built"; exit 1; }
campaign=$(executables --features harness-tests --test fault_campaign)
races=$(executables --test races)
[ -n "$races" ] || { echo "run-suite: the race checker's test was not built"; exit 1; }
# The guest cannot build (its / is the host's, read-only): the race
# checker's C program is built here, as tests/races.rs builds it.
prebuilt=$repo/target/vm-races
mkdir -p "$prebuilt"
ONESIDE_CC=gcc target/release/oshcc --check-races -std=c11 -Wall -Werror -g -o "$prebuilt/races-gcc" tests/c/races.c
[ -n "$campaign" ] || { echo "run-suite: the fault campaign was not built"; exit 1; }

script="cd $repo
export ONESIDE_TEST_TRANSPORTS=verbs
export ONESIDE_TEST_SIZES=2,4 ONESIDE_HEAP_SIZE=16M
# Everything in the guest is emulated: the full coll_check at 3 ranks takes
# 107-125 s there, against the 120 s limit the host's runs keep. Every
# reduction type and operation runs at 4 ranks here (recursive doubling,
# a rank per node), and at 3 over shm and tcp on the host (tests/coll.rs).
export ONESIDE_TEST_HARD_LIMIT=300 ONESIDE_TEST_EXACT_SIZES=4
status=0"
for t in $tests; do
  script="$script
echo \"== \$(basename $t)\"
$t --test-threads=1 || status=1"
done
# The race checker over verbs: each case's verdict, its C program built
# with GCC (the compilers' builds are checked on the host, the Rust cases
# over ofi, which carries the records with the same Links calls).
script="$script
echo '== the race checker over verbs'
ONESIDE_RACE_BUILDS=gcc ONESIDE_RACE_PREBUILT=$prebuilt $races --test-threads=1 c_programs_built || status=1"
script="$script
export ONESIDE_TEST_TRANSPORTS=ofi ONESIDE_OFI_PROVIDER='verbs;ofi_rxm' FI_UNIVERSE_SIZE=64 ONESIDE_TEST_SIZES=2
fi_info -p 'verbs;ofi_rxm' -t FI_EP_RDM -c FI_RMA | grep -m 2 -E 'provider|domain' || { echo 'no verbs;ofi_rxm in the guest'; status=1; }"
for t in $tests; do
  case $(basename "$t") in examples-* | model-*) ;; *) continue ;; esac
  script="$script
echo \"== \$(basename $t) over verbs;ofi_rxm\"
$t --test-threads=1 || status=1"
done
script="$script
echo '== the fault campaign over verbs;ofi_rxm'
ONESIDE_FAULTS=${VM_OFI_FAULTS:-14} ONESIDE_FAULT_JOBS=2 $campaign --nocapture || status=1
echo '== the fault campaign over verbs'
export ONESIDE_TEST_TRANSPORTS=verbs
unset ONESIDE_OFI_PROVIDER
ONESIDE_FAULTS=${VM_FAULTS:-14} ONESIDE_FAULT_JOBS=2 $campaign --nocapture || status=1
exit \$status"

# tests/vm/one-guest.sh boots one guest for this and the other guest suites:
# it asks for the guest's script (VM_SCRIPT_OUT) instead of a boot of its own.
if [ -n "${VM_SCRIPT_OUT:-}" ]; then printf '%s\n' "$script" > "$VM_SCRIPT_OUT"; exit 0; fi
echo "== running in the Soft-RoCE guest"
VM_TIMEOUT=${VM_TIMEOUT:-1800} tests/vm/vm.sh "$script"
