#!/usr/bin/env bash
# oneside's TCP path side by side with Open MPI's one-sided over TCP
# (--mca btl self,tcp --mca osc pt2pt: put/get/fetch-op + MPI_Win_flush,
# the target waiting in MPI_Barrier) and with a raw TCP ping-pong (the
# floor), in one run, ROUNDS alternating rounds, two placements:
#   one host:  2 ranks on this host, rlaunch --transport tcp / mpirun -n 2;
#   two hosts: 1 rank on each of two network namespaces with real sshd
#              (tests/cluster/cluster.sh), so this needs root.
# oneside runs twice per round: its target waiting in a barrier, as MPI's
# does, and its target computing outside oneside (examples/bench
# --busy-target), the case an MPI target cannot serve at all (its
# progress needs the target inside MPI), and once more its target looping
# on test of a word (examples/bench --testing-target, a program polling
# with shmem_test), which must serve as fast as a wait. The floor has two rows: a
# polling ping-pong (tcp_rtt_poll, the floor of a waiting target) and a
# blocking one (tcp_rtt, the floor of a target whose thread must be
# woken). Then the wall time of launching 2 hosts x 2 ranks with rlaunch
# and mpirun. Each figure is the median of its rounds. Trust the ratios,
# not the absolute numbers.
#
#   bench/compare_tcp.sh        (ROUNDS=3 MAX=1048576 LAUNCHES=5 PLACES="one two";
#                                results in target/compare-tcp/)
# The namespace hosts tell their ranks ONESIDE_YIELD_WHEN_IDLE=1 (they share
# this machine's cores); with one rank on each of them the cores are not
# shared, so the two-host runs say 0.
set -euo pipefail
# This harness runs more ranks than a small machine has CPUs, on purpose:
# allow it, as --oversubscribe would (without it rlaunch refuses).
export RLAUNCH_OVERSUBSCRIBE=1
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
LAUNCHES=${LAUNCHES:-5}
MAX=${MAX:-1048576}
PLACES=${PLACES:-one two}
OUT=target/compare-tcp
rm -rf "$OUT"; mkdir -p "$OUT"
if ! command -v mpicc >/dev/null || ! command -v sshd >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openmpi-bin libopenmpi-dev openssh-server >/dev/null
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

echo "== building"
cargo build --release --bins --examples --quiet
mpicc -O2 -o "$OUT/mpi_rma" bench/mpi_rma.c
gcc -O2 -o "$OUT/tcp_pingpong" bench/tcp_pingpong.c

cluster=$(mktemp -d /tmp/oneside-compare.XXXXXX)
trap 'tests/cluster/cluster.sh down "$cluster"; rm -rf "$cluster"' EXIT
tests/cluster/cluster.sh up 2 "$cluster"
SSH=$(cat "$cluster/ssh")
H1=198.18.0.11 H2=198.18.0.12
printf '%s slots=1\n%s slots=1\n' $H1 $H2 > "$cluster/one-each"
printf '%s slots=2\n%s slots=2\n' $H1 $H2 > "$cluster/two-each"
MPI_TCP=(--mca btl self,tcp --mca osc pt2pt)
MPIRUN_2H=(mpirun --mca plm_rsh_agent "$SSH" --mca oob_tcp_if_include 198.18.0.0/24
           --mca btl_tcp_if_include 198.18.0.0/24 "${MPI_TCP[@]}")
FIGURES='^(put_lat|get_lat|fadd_lat|cswap_lat|put_bw|put_bibw|msg_rate|barrier_n2) [0-9]+ [0-9.]+ [a-zA-Z/]+$'

# run SIDE PLACE: appends the side's figure lines to $OUT/SIDE-PLACE.txt
run() {
  local side=$1 place=$2 t0=$SECONDS
  local out="$OUT/$side-$place.txt" bench=(target/release/examples/bench --max "$MAX")
  case "$side-$place" in
    ours-one)  target/release/rlaunch -n 2 --transport tcp "${bench[@]}" ;;
    busy-one)  target/release/rlaunch -n 2 --transport tcp "${bench[@]}" --busy-target ;;
    test-one)  target/release/rlaunch -n 2 --transport tcp "${bench[@]}" --testing-target ;;
    mpi-one)   mpirun -n 2 "${MPI_TCP[@]}" "$OUT/mpi_rma" --max "$MAX" ;;
    ours-two)  target/release/rlaunch --ssh "$SSH" -f "$cluster/one-each" -n 2 -x ONESIDE_YIELD_WHEN_IDLE=0 "${bench[@]}" ;;
    busy-two)  target/release/rlaunch --ssh "$SSH" -f "$cluster/one-each" -n 2 -x ONESIDE_YIELD_WHEN_IDLE=0 "${bench[@]}" --busy-target ;;
    test-two)  target/release/rlaunch --ssh "$SSH" -f "$cluster/one-each" -n 2 -x ONESIDE_YIELD_WHEN_IDLE=0 "${bench[@]}" --testing-target ;;
    mpi-two)   "${MPIRUN_2H[@]}" -H $H1,$H2 -n 2 "$OUT/mpi_rma" --max "$MAX" ;;
    raw-one)   "$OUT/tcp_pingpong" server 7777 & sleep 0.2
               "$OUT/tcp_pingpong" client 127.0.0.1 7777; wait ;;
    raw-two)   ip netns exec os-h2 "$OUT/tcp_pingpong" server 7777 & sleep 0.2
               ip netns exec os-h1 "$OUT/tcp_pingpong" client $H2 7777; wait ;;
  esac 2>"$OUT/last.err" | grep -E "$FIGURES|^tcp_" >> "$out" || { cat "$OUT/last.err" >&2; exit 1; }
  echo "   $side ($place): $((SECONDS - t0)) s"
}

for round in $(seq "$ROUNDS"); do
  order="ours test busy mpi raw"
  [ $((round % 2)) = 0 ] && order="raw mpi busy test ours"
  for place in $PLACES; do
    echo "== round $round/$ROUNDS, $place host(s)"
    for side in $order; do run "$side" "$place"; done
  done
done

now() { date +%s%N; }
: > "$OUT/launch-ours.txt"; : > "$OUT/launch-mpi.txt"
for i in $(seq "$LAUNCHES"); do
  t0=$(now); target/release/rlaunch --ssh "$SSH" -f "$cluster/two-each" -n 4 target/release/examples/hello_put >/dev/null; t1=$(now)
  "${MPIRUN_2H[@]}" -H $H1:2,$H2:2 -n 4 "$OUT/mpi_rma" trivial >/dev/null; t2=$(now)
  echo "launch_4 0 $(( (t1 - t0) / 1000 )) us" >> "$OUT/launch-ours.txt"
  echo "launch_4 0 $(( (t2 - t1) / 1000 )) us" >> "$OUT/launch-mpi.txt"
done

ROWS="put_lat 8|get_lat 8|fadd_lat 8|cswap_lat 8|put_bw 65536|put_bw 1048576|put_bibw 1048576|msg_rate 8|barrier_n2 0"
# The floor as the figures it bounds: put+quiet, get and a fetching atomic
# are each one round trip.
as_figures() { # FILE METRIC -> lines named after every figure one round trip bounds
  for op in put_lat get_lat fadd_lat cswap_lat; do grep "^$2 8" "$1" | sed "s/^$2/$op/"; done
}
# One floor table: TITLE METRIC TAG PEER SIDE (the place's ours or busy figures).
floor() {
  echo "== $where, $1"
  as_figures "$OUT/raw-$place.txt" "$2" > "$OUT/floor-$3-$place.txt"
  awk -v peer="$4" -f bench/ratios.awk -v rows="put_lat 8|get_lat 8|fadd_lat 8|cswap_lat 8" \
    "$OUT/$5-$place.txt" "$OUT/floor-$3-$place.txt"
}
: > "$OUT/ratios.txt"
for place in $PLACES; do
  case $place in one) where="2 ranks on one host" ;; two) where="1 rank on each of 2 namespace hosts" ;; esac
  {
    echo
    echo "== $where, target waiting: oneside TCP / Open MPI (btl self,tcp, osc pt2pt), medians of $ROUNDS rounds"
    awk -v peer="Open MPI" -f bench/ratios.awk -v rows="$ROWS" "$OUT/ours-$place.txt" "$OUT/mpi-$place.txt"
    echo
    floor "target waiting: oneside TCP / polling raw TCP ping-pong (the floor)" tcp_rtt_poll poll "raw polled" ours
    echo
    echo "== $where, target looping on test: / the same target waiting"
    awk -v peer="waiting" -f bench/ratios.awk -v rows="$ROWS" "$OUT/test-$place.txt" "$OUT/ours-$place.txt"
    echo
    echo "== $where, target computing outside oneside: / the same target waiting (Open MPI cannot serve this case)"
    awk -v peer="waiting" -f bench/ratios.awk -v rows="$ROWS" "$OUT/busy-$place.txt" "$OUT/ours-$place.txt"
    echo
    floor "target computing: / blocking raw TCP ping-pong (the floor of a target that must be woken)" tcp_rtt block \
      "raw blocking" busy
  } | tee -a "$OUT/ratios.txt"
done
{
  echo
  echo "== launching 2 hosts x 2 ranks: rlaunch / mpirun, median of $LAUNCHES"
  awk -v peer="mpirun" -f bench/ratios.awk -v rows="launch_4 0" "$OUT/launch-ours.txt" "$OUT/launch-mpi.txt"
} | tee -a "$OUT/ratios.txt"
