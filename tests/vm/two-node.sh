#!/usr/bin/env bash
# The crown demo, end to end: `rlaunch -n 2 -f hosts ./hello_put` with verbs
# between two real kernels. Two Soft-RoCE guests are joined by a QEMU socket
# netdev on host loopback (eth0 198.18.2.1 and 198.18.2.2, rxe0 on each);
# guest B runs a real sshd with throwaway keys, guest A runs rlaunch, which
# starts rank 0 there and rank 1 on B over ssh. Rank 0 RDMA-writes its
# greeting into rank 1's buffer across the link, and back. Then the link
# gets 20 ms of delay and 5% loss each way (tc netem, on both guests' eth0:
# the host's own kernel has no sch_netem, the guests' Debian kernel has),
# and 4 ranks over TCP, 2 a guest, must still give correct results, each
# checked by the program itself (bucket_sort: alltoall and exscan; matvec:
# fcollect and collect; ring: puts ordered by quiet before a flag; traffic:
# puts, gets and fetch-adds counted exactly), with packets dropped on both
# sides. (Each step waits 40 ms for a round trip under emulation, so
# coll_check, hundreds of collectives, would take past 5 minutes.) Every wait is bounded; guest B stops when A is done (or after
# its own timeout).
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)

echo "== building (release)"
cargo build --release --bins --examples --quiet

control=$(mktemp -d /var/tmp/oneside-two-node.XXXXXX)
trap 'touch "$control/stop"; wait; rm -rf "$control"' EXIT
ssh-keygen -q -t ed25519 -N '' -f "$control/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$control/client_key"
cp "$control/client_key.pub" "$control/authorized_keys"
chmod 600 "$control/authorized_keys"
cat > "$control/sshd_config" <<CFG
ListenAddress 198.18.2.2
HostKey $control/host_key
AuthorizedKeysFile $control/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile /run/sshd.pid
CFG
printf 'localhost slots=1\n198.18.2.2 slots=1\n' > "$control/hosts"
printf 'localhost slots=2\n198.18.2.2 slots=2\n' > "$control/hosts2"
ssh="ssh -i $control/client_key -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
port=$((20000 + RANDOM % 20000))
while ss -Hltn "sport = :$port" | grep -q .; do port=$((20000 + RANDOM % 20000)); done

echo "== guest B (198.18.2.2): sshd"
VM_NET=listen:$port:198.18.2.2/24 VM_TIMEOUT=900 tests/vm/vm.sh "mkdir -p /run/sshd && /usr/sbin/sshd -f $control/sshd_config || exit 1
for i in \$(seq 850); do [ -f $control/stop ] && exit 0; sleep 1; done; exit 1" > "$control/b.log" 2>&1 &
# (vm.sh starts guest A once guest B's QEMU listens on the port)

echo "== guest A (198.18.2.1): rlaunch -n 2 -f hosts hello_put --transport verbs"
set +e
VM_NET=connect:$port:198.18.2.1/24 VM_TIMEOUT=900 tests/vm/vm.sh "for i in \$(seq 180); do $ssh -o BatchMode=yes -o ConnectTimeout=5 198.18.2.2 true 2>/dev/null && break; sleep 1; done
cat $control/hosts
cd $repo && target/release/rlaunch -n 2 -f $control/hosts --ssh '$ssh' --transport verbs --timeout 300 target/release/examples/hello_put || exit 1
echo '== 20 ms delay and 5% loss each way (netem): 4 ranks over tcp'
netem='modprobe sch_netem && tc qdisc add dev eth0 root netem delay 20ms loss 5%'
$ssh 198.18.2.2 \"\$netem\" && sh -c \"\$netem\" || exit 1
export ONESIDE_YIELD_WHEN_IDLE=1
for program in bucket_sort matvec 'ring 10' traffic; do
  target/release/rlaunch -n 4 -f $control/hosts2 --ssh '$ssh' --transport tcp --timeout 300 target/release/examples/\$program || exit 1
done
echo \"A: \$(tc -s qdisc show dev eth0 | grep -o 'dropped [0-9]*')\"
echo \"B: \$($ssh 198.18.2.2 tc -s qdisc show dev eth0 | grep -o 'dropped [0-9]*')\"" | tee "$control/a.log"
status=${PIPESTATUS[0]}
set -e
touch "$control/stop"
wait || true

expected=('rank 1/2 received "Hello from rank 0" from rank 0 (via verbs)' 'rank 0/2 received "Hello from rank 1" from rank 1 (via verbs)')
for line in "${expected[@]}"; do
  if ! grep -qF "$line" "$control/a.log"; then
    echo "two-node: FAILED: missing '$line' (rlaunch exit $status); guest B said:"
    cat "$control/b.log"
    exit 1
  fi
done
if [ "$status" != 0 ] || ! grep -qx 'traffic ok: 4 ranks' "$control/a.log" \
   || [ "$(grep -c ': ok$' "$control/a.log")" != 3 ]; then
  echo "two-node: FAILED: 4 ranks over tcp under 20 ms delay and 5% loss (rlaunch exit $status)"
  exit 1
fi
for side in A B; do
  if ! grep -qE "^$side: dropped [1-9]" "$control/a.log"; then
    echo "two-node: FAILED: netem dropped no packet on guest $side: the loss was not real"
    exit 1
  fi
done
echo "two-node: ok: RDMA WRITE between two kernels over Soft-RoCE; TCP collectives and traffic exact under 20 ms delay and 5% loss each way"
