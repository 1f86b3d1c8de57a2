#!/usr/bin/env bash
# Team collectives across two hosts, 2 ranks on each (4 ranks), in one run:
# oneside (examples/bench --only-coll) against Open MPI's MPI collectives
# (bench/mpi_coll.c), alternating ROUNDS times. The hosts are two network
# namespaces with real sshd from tests/cluster/cluster.sh, so this needs root
# and no other namespace cluster up at the same time. Two pairings:
#   tcp:   every pair of ranks over TCP, on the same host too:
#          rlaunch --transport tcp  against  mpirun --mca btl self,tcp
#   mixed: shared memory within a host, TCP across:
#          rlaunch --transport auto against  mpirun --mca btl self,vader,tcp
# Open MPI stays on the namespaces' 198.18.0.0/24 (btl_tcp_if_include,
# oob_tcp_if_include). The two hosts share this machine's 2 cores: told 2
# slots per host, Open MPI would bind each host's ranks to cores 0 and 1 and
# spin without yielding, two ranks per core (barriers of ~10 ms); so it runs
# with --bind-to none and mpi_yield_when_idle 1, which it picks by itself
# when it knows it is oversubscribed (as in compare_coll.sh); oneside gets
# the same word, ONESIDE_YIELD_WHEN_IDLE=1 (its waits neither spin nor keep
# polling: each host's counts say a core per rank, which these hosts do not
# have). Metric names and timing conventions as in
# bench/compare_coll.sh (OSU's); medians over the rounds, ours / MPI.
# Trust the ratios, not the absolute numbers.
#
#   bench/compare_coll_tcp.sh   (ROUNDS=3 MAX=65536 MODES="tcp mixed";
#                                results in target/compare_coll_tcp/)
# MAX is 64 KiB by default: at the first measurement oneside's sweep over
# TCP between the namespaces took 104 s up to 16 KiB and did not end within
# 600 s up to 64 KiB (MPI's: 10 s up to 64 KiB).
# OURS=0 runs MPI only; BUILD=0 skips `cargo build`; RUN_TIMEOUT bounds each
# run (900 s); SMOKE=1 passes --smoke to both (3 sizes, a few calls each).
set -euo pipefail
# This harness runs more ranks than a small machine has CPUs, on purpose:
# allow it, as --oversubscribe would (without it rlaunch refuses).
export RLAUNCH_OVERSUBSCRIBE=1
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
MAX=${MAX:-65536}
MODES=${MODES:-"tcp mixed"}
OURS=${OURS:-1}
BUILD=${BUILD:-1}
RUN_TIMEOUT=${RUN_TIMEOUT:-900}
EXTRA=(--max "$MAX")
[ "${SMOKE:-0}" = 1 ] && EXTRA+=(--smoke)
OUT=target/compare_coll_tcp
mkdir -p "$OUT/raw"
if ip link show osbr0 >/dev/null 2>&1; then
  echo "compare_coll_tcp: a namespace cluster is already up (bridge osbr0): another test or bench is running" >&2
  exit 1
fi
if ! command -v mpicc >/dev/null || ! command -v sshd >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openmpi-bin libopenmpi-dev openssh-server >/dev/null
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

echo "== building"
if [ "$OURS" = 1 ] && [ "$BUILD" = 1 ]; then cargo build --release --bins --examples --quiet; fi
mpicc -O2 -o "$OUT/mpi_coll" bench/mpi_coll.c

cluster=$(mktemp -d /tmp/oneside-coll-tcp.XXXXXX)
trap 'tests/cluster/cluster.sh down "$cluster"; rm -rf "$cluster"' EXIT
tests/cluster/cluster.sh up 2 "$cluster"
SSH=$(cat "$cluster/ssh")
H1=198.18.0.11 H2=198.18.0.12
printf '%s slots=2\n%s slots=2\n' $H1 $H2 > "$cluster/two-each"
MPIRUN=(mpirun --mca plm_rsh_agent "$SSH" --mca oob_tcp_if_include 198.18.0.0/24
        --mca btl_tcp_if_include 198.18.0.0/24 --bind-to none --mca mpi_yield_when_idle 1
        -H "$H1:2,$H2:2" -n 4)

status=0
warn() { echo "compare_coll_tcp: WARNING: $*" >&2; status=1; }
# run SIDE MODE ROUND
run() {
  local side=$1 mode=$2 round=$3 rc=0 t0=$SECONDS
  local raw="$OUT/raw/$side-$mode-$round"
  case $side in
    ours)
      local transport=tcp; [ "$mode" = mixed ] && transport=auto
      timeout -k 5 "$RUN_TIMEOUT" target/release/rlaunch --ssh "$SSH" -f "$cluster/two-each" -n 4 --transport "$transport" -x ONESIDE_YIELD_WHEN_IDLE=1 \
        target/release/examples/bench --only-coll "${EXTRA[@]}" >"$raw.out" 2>"$raw.err" || rc=$?
      grep -E '^(coll_barrier_lat|bcast_lat|reduce_[a-z0-9]+_[a-z]+_lat|fcollect_lat|collect_lat|alltoall_lat) [0-9]+ [0-9.]+ us$' \
        "$raw.out" >> "$OUT/ours-$mode.txt" || true ;;
    mpi)
      local btl=self,tcp; [ "$mode" = mixed ] && btl=self,vader,tcp
      timeout -k 5 "$RUN_TIMEOUT" "${MPIRUN[@]}" --mca btl "$btl" "$OUT/mpi_coll" "${EXTRA[@]}" >"$raw.out" 2>"$raw.err" || rc=$?
      cat "$raw.out" >> "$OUT/mpi-$mode.txt" ;;
  esac
  echo "   $side ($mode): $((SECONDS - t0)) s"
  [ "$rc" -eq 0 ] || warn "$side ($mode), round $round: exit status $rc; see $raw.*"
}

for mode in $MODES; do : > "$OUT/ours-$mode.txt"; : > "$OUT/mpi-$mode.txt"; done
sides=(mpi)
[ "$OURS" = 1 ] && sides=(ours mpi)
for round in $(seq "$ROUNDS"); do
  for mode in $MODES; do
    echo "== round $round/$ROUNDS, $mode"
    # The first side turns each round.
    if [ $((round % 2)) = 0 ]; then order=$(printf '%s\n' "${sides[@]}" | tac); else order=${sides[*]}; fi
    for s in $order; do run "$s" "$mode" "$round"; done
  done
done

: > "$OUT/ratios.txt"
for mode in $MODES; do
  case $mode in
    tcp) what="all pairs over TCP: rlaunch --transport tcp / Open MPI btl self,tcp" ;;
    mixed) what="shm within a host, TCP across: rlaunch --transport auto / Open MPI btl self,vader,tcp" ;;
  esac
  {
    echo
    echo "== 2 hosts x 2 ranks, $what (median of $ROUNDS rounds)"
    awk -f bench/best_ratios.awk -v names="oneside|mpi" -v goal=1.0 "$OUT/ours-$mode.txt" "$OUT/mpi-$mode.txt"
    echo "goal: <= 1.0 (latency)"
  } | tee -a "$OUT/ratios.txt"
done
echo "raw figures: $OUT/{ours,mpi}-MODE.txt; tables: $OUT/ratios.txt"
exit "$status"
