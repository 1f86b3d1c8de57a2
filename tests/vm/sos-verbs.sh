#!/usr/bin/env bash
# A subset of Sandia OpenSHMEM's test suite (tests/sos/verbs-subset.txt) over
# the verbs transport, inside one Soft-RoCE guest, on the release C library.
# The suite is the one tests/sos/run.sh built (target/sos/build), or built on
# the host here (tests/sos/run.sh, BUILD_ONLY=1, into target/sos-verbs); the guest sees the host's files read-only, so it runs
# each program directly under oshrun (every run bounded by `timeout`)
# instead of `make check`, which writes logs next to the tests. Writes the
# pass table to target/sos-verbs/sos-results.md; exits non-zero when a test
# fails or the guest does not finish.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=$root/target/sos-verbs
bin=$root/target/release

tests=$(grep -v '^#' tests/sos/verbs-subset.txt | tr '\n' ' ')
. tests/sos/built.sh
built=$(sos_built "$out")

script="cd $built
export ONESIDE_TRANSPORT=verbs LD_LIBRARY_PATH=$bin
failed=0
for t in $tests; do
  if (cd test/\${t%/*} && timeout -k 5 ${PER_TEST_TIMEOUT:-300} $bin/oshrun -np 2 ./\${t#*/} > \$TMPDIR/out 2>&1); then
    echo \"| \$t | verbs | PASS |\"
  else
    echo \"| \$t | verbs | FAIL |\"; sed 's/^/    /' \$TMPDIR/out | tail -8; failed=\$((failed + 1))
  fi
done
exit \$failed"

# tests/vm/one-guest.sh boots one guest for this and the other guest suites:
# it asks for the guest's script (VM_SCRIPT_OUT) instead of a boot of its own.
if [ -n "${VM_SCRIPT_OUT:-}" ]; then printf '%s\n' "$script" > "$VM_SCRIPT_OUT"; exit 0; fi
echo "== running $(echo $tests | wc -w) tests in the Soft-RoCE guest"
status=0
VM_TIMEOUT=${VM_TIMEOUT:-1800} tests/vm/vm.sh "$script" | tee "$out/guest.log" || status=$?
{ echo "| test | transport | result |"; echo "| --- | --- | --- |"; grep '^| ' "$out/guest.log"; } > "$out/sos-results.md"
echo "tests-sos over verbs: $(grep -c '| PASS |' "$out/sos-results.md") passed, $(grep -c '| FAIL |' "$out/sos-results.md") failed; table in $out/sos-results.md"
exit "$status"
