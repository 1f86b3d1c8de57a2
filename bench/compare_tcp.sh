#!/usr/bin/env bash
# Side-by-side over TCP between two hosts, in one run: oneside's TCP path
# against Open MPI's (--mca btl self,tcp --mca osc pt2pt) and against a raw
# TCP ping-pong (the floor), one rank per host; then the wall time of
# launching 2 hosts x 2 ranks with rlaunch and with mpirun. The hosts are
# two network namespaces with real sshd from tests/cluster/cluster.sh, so
# this needs root. Trust the ratios, not the absolute numbers.
#
#   bench/compare_tcp.sh        (results in target/compare-tcp/)
set -euo pipefail
cd "$(dirname "$0")/.."
LAUNCHES=${LAUNCHES:-5}
MAX=${MAX:-1048576}
OUT=target/compare-tcp
mkdir -p "$OUT"
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
MPIRUN=(mpirun --mca plm_rsh_agent "$SSH" --mca oob_tcp_if_include 198.18.0.0/24
        --mca btl_tcp_if_include 198.18.0.0/24 --mca btl self,tcp --mca osc pt2pt)

echo "== raw TCP ping-pong, $H1 -> $H2"
ip netns exec os-h2 "$OUT/tcp_pingpong" server 7777 &
ip netns exec os-h1 "$OUT/tcp_pingpong" client $H2 7777 | tee "$OUT/raw.txt"
wait
echo "== Open MPI over TCP"
"${MPIRUN[@]}" -H $H1,$H2 -n 2 "$OUT/mpi_rma" --max "$MAX" | tee "$OUT/mpi.txt" | grep -E '^(put_lat 8|put_bw 1048576|barrier)'
echo "== oneside over TCP"
target/release/rlaunch --ssh "$SSH" -f "$cluster/one-each" -n 2 target/release/examples/bench --max "$MAX" \
  | grep -E '^[a-z_0-9]+ [0-9]+ [0-9.]+ [a-zA-Z/]+$' | tee "$OUT/ours.txt" | grep -E '^(put_lat 8|put_bw 1048576|barrier)'

now() { date +%s%N; }
: > "$OUT/launch-ours.txt"; : > "$OUT/launch-mpi.txt"
for i in $(seq "$LAUNCHES"); do
  t0=$(now); target/release/rlaunch --ssh "$SSH" -f "$cluster/two-each" -n 4 target/release/examples/hello_put >/dev/null; t1=$(now)
  "${MPIRUN[@]}" -H $H1:2,$H2:2 -n 4 "$OUT/mpi_rma" trivial >/dev/null; t2=$(now)
  echo "launch_4 0 $(( (t1 - t0) / 1000 )) us" >> "$OUT/launch-ours.txt"
  echo "launch_4 0 $(( (t2 - t1) / 1000 )) us" >> "$OUT/launch-mpi.txt"
done

echo
echo "== oneside TCP / Open MPI TCP (btl tcp, osc pt2pt), 1 rank on each of 2 hosts"
cat "$OUT/ours.txt" "$OUT/launch-ours.txt" > "$OUT/ours-all.txt"
cat "$OUT/mpi.txt" "$OUT/launch-mpi.txt" > "$OUT/mpi-all.txt"
awk -v peer="Open MPI" -f bench/ratios.awk \
  -v rows="put_lat 8|get_lat 8|put_bw 65536|put_bw 1048576|put_bibw 1048576|msg_rate 8|barrier_n2 0|launch_4 0" \
  "$OUT/ours-all.txt" "$OUT/mpi-all.txt" | tee "$OUT/ratios.txt"
echo
echo "== oneside TCP / raw TCP ping-pong (the floor: put+quiet, get and a fetching atomic are one round trip)"
sed -e 's/^tcp_rtt 8/put_lat 8/' -e 's/^tcp_bw /put_bw /' "$OUT/raw.txt" > "$OUT/raw-as-put.txt"
for op in get_lat fadd_lat cswap_lat; do
  grep '^tcp_rtt' "$OUT/raw.txt" | sed "s/^tcp_rtt/$op/" >> "$OUT/raw-as-put.txt"
done
awk -v peer="raw TCP" -f bench/ratios.awk -v rows="put_lat 8|get_lat 8|fadd_lat 8|cswap_lat 8|put_bw 1048576" \
  "$OUT/ours.txt" "$OUT/raw-as-put.txt" | tee -a "$OUT/ratios.txt"
