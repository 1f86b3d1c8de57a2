#!/usr/bin/env bash
# The three single-guest suites in ONE Soft-RoCE guest: the verbs suite
# (tests/vm/run-suite.sh), the tests-sos subset over verbs
# (tests/vm/sos-verbs.sh) and OpenSHMEM 1.6, progress, profiling and
# shmem4py over verbs (tests/vm/verbs-c-python.sh). Each script builds what
# it needs on the host and hands over its guest script (VM_SCRIPT_OUT)
# instead of booting; the guest then runs the three parts one after the
# other, and every part runs whatever the one before it did. A guest boot
# under QEMU TCG, and each script's stage around it, are paid once instead of
# three times. Each part's output goes where its own script puts it
# (target/vm-verbs.log, target/sos-verbs/, target/verbs-c-python/), and
# each part's first and last lines carry its time in the guest. Exits
# non-zero when any part failed or the guest did not finish.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
parts=(run-suite sos-verbs verbs-c-python)

# In the repository's target directory, which every part's guest script
# reads already (the guest sees the host's / read-only).
scripts=$root/target/vm-parts
rm -rf "$scripts" && mkdir -p "$scripts"
for p in "${parts[@]}"; do
  echo "== $p: building on the host"
  VM_SCRIPT_OUT=$scripts/$p.sh "tests/vm/$p.sh"
done

guest="status=0
for p in ${parts[*]}; do
  began=\$(date +%s)
  echo \"=== part \$p\"
  sh $scripts/\$p.sh; rc=\$?
  echo \"=== end \$p rc=\$rc in \$((\$(date +%s) - began)) s\"
  [ \$rc = 0 ] || status=1
done
exit \$status"

log=$root/target/vm-one-guest.log
mkdir -p target/sos-verbs target/verbs-c-python
echo "== running ${parts[*]} in one Soft-RoCE guest"
status=0
VM_TIMEOUT=${VM_TIMEOUT:-3600} tests/vm/vm.sh "$guest" | tee "$log" || status=$?

# part NAME: what the guest printed for that part.
part() { sed -n "/^=== part $1\$/,/^=== end $1 /p" "$log"; }
part run-suite > target/vm-verbs.log
part sos-verbs > target/sos-verbs/guest.log
{ echo "| test | transport | result |"; echo "| --- | --- | --- |"; grep '^| ' target/sos-verbs/guest.log || true; } \
  > target/sos-verbs/sos-results.md
part verbs-c-python > target/verbs-c-python/guest.log
echo "tests-sos over verbs: $(grep -c '| PASS |' target/sos-verbs/sos-results.md) passed," \
  "$(grep -c '| FAIL |' target/sos-verbs/sos-results.md) failed; table in target/sos-verbs/sos-results.md"
echo "verbs C and Python: $(grep -c '| PASS |' target/verbs-c-python/guest.log) passed," \
  "$(grep -c '| FAIL |' target/verbs-c-python/guest.log) failed"
grep '^=== end' "$log" || echo "one-guest: no part finished"
for p in "${parts[@]}"; do
  grep -q "^=== end $p rc=0 " "$log" || { echo "one-guest: part $p failed or did not finish"; status=1; }
done
exit "$status"
