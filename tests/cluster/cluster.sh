#!/usr/bin/env bash
# A test cluster of K hosts on this machine: network namespaces joined by veth
# links to a bridge, addresses in 198.18.0.0/15 only (never another range: the
# machine's own network lives elsewhere, and no traffic may leave it), and a
# real OpenSSH sshd in each host with a throwaway host key and client key.
# Every host sees the same filesystem, as with a shared home, but has its own
# hostname and its own /dev/shm (unshare --uts --mount).
#
#   cluster.sh up K DIR    create hosts os-h1..os-hK; writes DIR/hostfile and DIR/ssh
#   cluster.sh down DIR    tear everything down (safe to call twice)
#   cluster.sh stop-sshd DIR I   stop host I's sshd (for failure tests)
set -euo pipefail

BRIDGE=osbr0
NET=198.18.0
LAUNCHER_IP=$NET.1

host_ip() { echo "$NET.$((10 + $1))"; }

# Host I gone: what runs in its namespace killed, the namespace and its link
# deleted. Safe when any of them is already gone.
remove_host() {
  local i=$1
  kill_in_host "$i"
  ip netns del "os-h$i" 2>/dev/null || true
  ip link del "osv$i" 2>/dev/null || true
}

kill_in_host() { ip netns pids "os-h$1" 2>/dev/null | xargs -r kill -9 2>/dev/null || true; }

# What an earlier cluster left when its run was killed before its teardown
# (hosts os-hI, their links, the bridge): removed, and said, so that `up`
# does not stop at "File exists".
clear_stale() {
  local i
  for i in $( { ip netns list 2>/dev/null | awk '$1 ~ /^os-h[0-9]+$/ {print substr($1, 5)}'
                ip -o link show 2>/dev/null | awk -F': ' '$2 ~ /^osv[0-9]+(@|$)/ {sub(/@.*/, "", $2); print substr($2, 4)}'
              } | sort -un); do
    echo "cluster.sh: removing host os-h$i left by an earlier run" >&2
    remove_host "$i"
  done
  if ip link show "$BRIDGE" >/dev/null 2>&1; then
    echo "cluster.sh: removing bridge $BRIDGE left by an earlier run" >&2
    ip link del "$BRIDGE" 2>/dev/null || true
  fi
}

up() {
  local k=$1 dir=$2
  clear_stale
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  echo "$k" > "$dir/hosts"
  ssh-keygen -q -t ed25519 -N '' -f "$dir/host_key" <<< y >/dev/null
  ssh-keygen -q -t ed25519 -N '' -f "$dir/client_key" <<< y >/dev/null
  ssh-keygen -q -t ed25519 -N '' -f "$dir/wrong_key" <<< y >/dev/null
  cp "$dir/client_key.pub" "$dir/authorized_keys"
  chmod 600 "$dir/authorized_keys"
  mkdir -p /run/sshd

  ip link add "$BRIDGE" type bridge
  ip addr add "$LAUNCHER_IP/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  : > "$dir/hostfile"
  for i in $(seq "$k"); do
    local ns=os-h$i ip
    ip=$(host_ip "$i")
    ip netns add "$ns"
    ip link add "osv$i" type veth peer name "osv${i}p"
    ip link set "osv${i}p" netns "$ns"
    ip link set "osv$i" master "$BRIDGE" up
    ip netns exec "$ns" ip link set lo up
    ip netns exec "$ns" ip addr add "$ip/24" dev "osv${i}p"
    ip netns exec "$ns" ip link set "osv${i}p" up
    cat > "$dir/sshd_config.$i" <<CFG
Port 22
ListenAddress $ip
HostKey $dir/host_key
AuthorizedKeysFile $dir/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile $dir/sshd.$i.pid
LogLevel ERROR
# These hosts share this machine's cores, whatever each one's count says:
# ranks started here must not poll in their waits (as mpirun is told
# mpi_yield_when_idle where it would not know).
SetEnv ONESIDE_YIELD_WHEN_IDLE=1
CFG
    ip netns exec "$ns" unshare --uts --mount --propagation private -- sh -c \
      "hostname $ns && mount -t tmpfs -o mode=1777 tmpfs /dev/shm && exec /usr/sbin/sshd -D -e -f $dir/sshd_config.$i" \
      2>> "$dir/sshd.$i.log" &
    echo "$ip slots=2" >> "$dir/hostfile"
  done
  cat > "$dir/ssh" <<SSH
ssh -i $dir/client_key -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR
SSH
  # Wait (bounded) until every sshd answers.
  for i in $(seq "$k"); do
    for _ in $(seq 100); do
      $(cat "$dir/ssh") -o BatchMode=yes -o ConnectTimeout=2 "$(host_ip "$i")" true 2>/dev/null && break
      sleep 0.1
    done
  done
}

stop_sshd() {
  local dir=$1 i=$2
  [ -f "$dir/sshd.$i.pid" ] && kill "$(cat "$dir/sshd.$i.pid")" 2>/dev/null || true
  kill_in_host "$i"
}

down() {
  local dir=$1 k
  k=$(cat "$dir/hosts" 2>/dev/null || echo 8)
  for i in $(seq "$k"); do
    stop_sshd "$dir" "$i"
    remove_host "$i"
  done
  ip link del "$BRIDGE" 2>/dev/null || true
}

case "${1:-}" in
  up) up "$2" "$3" ;;
  down) down "$2" ;;
  stop-sshd) stop_sshd "$2" "$3" ;;
  *) echo "usage: $0 up K DIR | down DIR | stop-sshd DIR I" >&2; exit 2 ;;
esac
