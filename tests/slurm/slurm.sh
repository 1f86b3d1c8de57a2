#!/usr/bin/env bash
# A real Slurm cluster (Debian's slurmctld, slurmd, slurm-client, munge) on the
# hosts of tests/cluster/cluster.sh: one slurmd per host os-hI, run inside that
# host's own namespaces (joined with nsenter through its sshd, so it shares the
# host's address 198.18.0.1I, hostname and /dev/shm), and slurmctld in one more
# network namespace os-ctl at 198.18.0.2 on the same bridge. One munged, outside
# the namespaces, serves everyone through a socket under DIR (a path socket is
# reached across network namespaces). Only 198.18.0.0/15 addresses are used:
# every name Slurm looks up is in DIR/etc-hosts, bind-mounted over /etc/hosts
# in the namespaces (which have no default route), so no DNS server is asked.
# Submit commands work from the launcher side (198.18.0.1) and from a host.
# Every daemon runs under `timeout $SLURM_TTL` (default 2 h), every job has a
# default time limit of 30 minutes, and all state lives under DIR.
#
#   slurm.sh up K DIR     cluster.sh up K DIR, then munged, slurmctld, K slurmd;
#                         waits until sinfo shows K idle nodes; writes DIR/env
#                         (source it: SLURM_CONF, SLURM_DIR, SLURM_NODES)
#   slurm.sh down DIR     stop everything, then cluster.sh down DIR (safe twice)
#
# Each node has CPUs=4 (the real core count is overridden), so up to 4 tasks a
# host; more with srun --overcommit. Needs: apt-get install slurmctld slurmd
# slurm-client munge. Logs: DIR/munge/munged.log, DIR/slurmctld.log,
# DIR/slurmd.os-hI.log (the daemons' stderr; no LogFile is set).
#
# Submitting: from the launcher side (`. DIR/env; srun ...`), srun advertises
# 198.18.0.1 (the address it reaches slurmctld from) and the slurmds connect
# back to it. From inside host I, use its namespaces, e.g.
#   nsenter -t "$(cat DIR/sshd.I.pid)" -n -u -m srun ...   (hostname os-hI)
# or ssh to 198.18.0.1I; `ip netns exec os-hI` also works but keeps the
# machine's hostname and /etc/hosts. Node names resolve only inside the
# namespaces (DIR/etc-hosts), not on the launcher side.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
CLUSTER=$HERE/../cluster/cluster.sh
NET=198.18.0
CTL_IP=$NET.2
TTL=${SLURM_TTL:-7200}

# Run a command in host I's namespaces (network, hostname, mounts).
in_host() { local i=$1; shift; nsenter -t "$(cat "$DIR/sshd.$i.pid")" -n -u -m -- "$@"; }

wait_for() { # wait_for SECONDS WHAT CMD...: bounded poll
  local n=$(($1 * 10)) what=$2; shift 2
  for _ in $(seq "$n"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "slurm.sh: timed out waiting for $what" >&2; return 1
}

nodes_idle() {
  [ "$(timeout 5 sinfo -h -N -t idle -o '%N' | sort -u | wc -l)" -eq "$K" ]
}

up() {
  K=$1 DIR=$2
  mkdir -p "$DIR"
  DIR=$(cd "$DIR" && pwd)
  local t0=$SECONDS
  # A controller namespace left by a run killed before its teardown (CI
  # once stopped here at "File exists"); cluster.sh up clears its hosts.
  if ip netns list 2>/dev/null | grep -qw '^os-ctl'; then
    echo "slurm.sh: removing namespace os-ctl left by an earlier run" >&2
  fi
  remove_controller
  "$CLUSTER" up "$K" "$DIR"

  # Names: every node, the controller, and localhost, for the namespaces.
  { echo "127.0.0.1 localhost"; echo "$CTL_IP os-ctl"
    echo "$NET.1 os-launcher"
    for i in $(seq "$K"); do echo "$NET.$((10 + i)) os-h$i"; done; } > "$DIR/etc-hosts"

  # munged, as root (hence --force), with a throwaway key.
  mkdir -p "$DIR/munge"
  chmod 755 "$DIR/munge"
  dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1 count=1024 status=none
  chmod 400 "$DIR/munge/munge.key"
  timeout "$TTL" munged -F --force -S "$DIR/munge/socket" \
    --key-file "$DIR/munge/munge.key" --pid-file "$DIR/munge/munged.pid" \
    --seed-file "$DIR/munge/seed" --log-file "$DIR/munge/munged.log" \
    2>> "$DIR/munge/munged.log" &
  wait_for 10 munged munge -S "$DIR/munge/socket" -n

  mkdir -p "$DIR/ctld" "$DIR/spool"
  cat > "$DIR/slurm.conf" <<CONF
ClusterName=oscluster
SlurmctldHost=os-ctl($CTL_IP)
SlurmctldPort=6817
SlurmdPort=6818
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$DIR/ctld
SlurmdSpoolDir=$DIR/spool/%n
TmpFS=/var/tmp
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.%n.pid
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
SchedulerType=sched/backfill
KillWait=2
MailProg=/bin/true
MinJobAge=60
InactiveLimit=0
NodeName=os-h[1-$K] NodeAddr=$NET.[11-$((10 + K))] CPUs=4 State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE DefaultTime=30 State=UP
CONF
  # No cgroups here (and ip netns exec's fresh /sys has no /sys/fs/cgroup):
  # cgroup/v1 named outright loads without one; autodetect would fail.
  echo "CgroupPlugin=cgroup/v1" > "$DIR/cgroup.conf"
  export SLURM_CONF=$DIR/slurm.conf

  # slurmctld in its own netns os-ctl, with hostname os-ctl.
  ip netns add os-ctl
  ip link add osvc type veth peer name osvcp
  ip link set osvcp netns os-ctl
  ip link set osvc master osbr0 up
  ip netns exec os-ctl ip link set lo up
  ip netns exec os-ctl ip addr add "$CTL_IP/24" dev osvcp
  ip netns exec os-ctl ip link set osvcp up
  ip netns exec os-ctl unshare --uts --mount --propagation private -- sh -c \
    "hostname os-ctl && mount --bind $DIR/etc-hosts /etc/hosts &&
     exec timeout $TTL slurmctld -D -c -f $DIR/slurm.conf" \
    >> "$DIR/slurmctld.log" 2>&1 &
  wait_for 20 slurmctld timeout 5 scontrol ping

  # One slurmd per host, in that host's namespaces (its sshd's).
  for i in $(seq "$K"); do
    mkdir -p "$DIR/spool/os-h$i" "$DIR/tmp/os-h$i"
    in_host "$i" mount --bind "$DIR/etc-hosts" /etc/hosts
    # The hosts share one /tmp, but each slurmstepd's PMIx plugin makes its
    # step's directory under TmpFS by job and step alone: a /var/tmp of its
    # own per host, as real nodes have.
    in_host "$i" mount --bind "$DIR/tmp/os-h$i" /var/tmp
    in_host "$i" timeout "$TTL" slurmd -D -N "os-h$i" -f "$DIR/slurm.conf" \
      >> "$DIR/slurmd.os-h$i.log" 2>&1 &
  done
  if ! wait_for 60 "$K idle nodes" nodes_idle; then sinfo -N >&2; return 1; fi

  cat > "$DIR/env" <<ENV
export SLURM_CONF=$DIR/slurm.conf
export SLURM_DIR=$DIR
export SLURM_NODES=os-h[1-$K]
ENV
  echo "slurm.sh: $K nodes idle after $((SECONDS - t0)) s"
}

kill_pidfile() { [ -f "$1" ] && kill "$(cat "$1")" 2>/dev/null || true; }

# The controller's namespace gone: what runs in it killed, it and its link
# deleted. Safe when either is already gone.
remove_controller() {
  ip netns pids os-ctl 2>/dev/null | xargs -r kill -9 2>/dev/null || true
  ip netns del os-ctl 2>/dev/null || true
  ip link del osvc 2>/dev/null || true
}

down() {
  DIR=$1
  [ -d "$DIR" ] && DIR=$(cd "$DIR" && pwd)
  K=$(cat "$DIR/hosts" 2>/dev/null || echo 8)
  for i in $(seq "$K"); do kill_pidfile "$DIR/slurmd.os-h$i.pid"; done
  kill_pidfile "$DIR/slurmctld.pid"
  sleep 0.5
  # Whatever is left in the namespaces: slurmstepd, job tasks, timeout.
  remove_controller
  kill_pidfile "$DIR/munge/munged.pid"
  "$CLUSTER" down "$DIR"
  # Killed slurmstepds (children of PID 1) stay zombies until it reaps them.
  for _ in $(seq 100); do
    pgrep -f "$DIR/(slurm.conf|munge/)" >/dev/null || pgrep -x slurmstepd >/dev/null ||
      return 0
    sleep 0.1
  done
  echo "slurm.sh: left: $(pgrep -af "$DIR/(slurm.conf|munge/)|slurmstepd")" >&2
}

case "${1:-}" in
  up) up "$2" "$3" ;;
  down) down "$2" ;;
  *) echo "usage: $0 up K DIR | down DIR" >&2; exit 2 ;;
esac
