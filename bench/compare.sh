#!/usr/bin/env bash
# Side-by-side: oneside's shared-memory path against Open MPI's osc/sm, in one
# run on this machine. Builds both, runs them alternately ROUNDS times, and
# prints oneside/Open MPI ratios (medians over the rounds) for each figure,
# plus the wall time of launching a 2-rank job. Timings on a shared machine
# are noisy: trust the ratios, not the absolute numbers.
#
#   bench/compare.sh            (ROUNDS=3 by default; results in target/compare/)
set -euo pipefail
# This harness runs more ranks than a small machine has CPUs, on purpose:
# allow it, as --oversubscribe would (without it rlaunch refuses).
export RLAUNCH_OVERSUBSCRIBE=1
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
LAUNCHES=${LAUNCHES:-10}
OUT=target/compare
mkdir -p "$OUT"

if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
  echo "== installing Open MPI (Debian openmpi-bin, libopenmpi-dev)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openmpi-bin libopenmpi-dev >/dev/null
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=(mpirun --oversubscribe --mca btl self,vader --mca osc sm)

echo "== building"
cargo build --release --bins --examples --quiet
mpicc -O2 -o "$OUT/mpi_rma" bench/mpi_rma.c
RLAUNCH=target/release/rlaunch
BENCH=target/release/examples/bench

: > "$OUT/ours.txt"
: > "$OUT/peer.txt"
for round in $(seq "$ROUNDS"); do
  echo "== round $round/$ROUNDS"
  "${MPIRUN[@]}" -n 2 "$OUT/mpi_rma" | tee "$OUT/peer-$round.txt" >> "$OUT/peer.txt"
  "${MPIRUN[@]}" -n 4 "$OUT/mpi_rma" --only-barrier >> "$OUT/peer.txt"
  "$RLAUNCH" -n 2 "$BENCH" --csv "$OUT/oneside-$round.csv" --plot "$OUT/shm-vs-openmpi.svg" \
    --peer "$OUT/peer-$round.txt" --peer-name "Open MPI osc/sm" | grep -E '^[a-z_0-9]+ [0-9]+ [0-9.]+ [a-zA-Z/]+$' >> "$OUT/ours.txt"
  "$RLAUNCH" -n 4 "$BENCH" --only-barrier | grep -E '^barrier' >> "$OUT/ours.txt"
done

# Launch wall time, alternating the two so drift hits both alike.
now() { date +%s%N; }
for i in $(seq "$LAUNCHES"); do
  t0=$(now); "$RLAUNCH" -n 2 target/release/examples/hello_put >/dev/null; t1=$(now)
  "${MPIRUN[@]}" -n 2 "$OUT/mpi_rma" trivial >/dev/null; t2=$(now)
  echo "launch_2 0 $(( (t1 - t0) / 1000 )) us" >> "$OUT/ours.txt"
  echo "launch_2 0 $(( (t2 - t1) / 1000 )) us" >> "$OUT/peer.txt"
done

echo
echo "== oneside shm / Open MPI osc/sm, 2 ranks (median of $ROUNDS rounds; launch: median of $LAUNCHES)"
awk -v peer="Open MPI" -f bench/ratios.awk \
  -v rows="put_lat 8|put_lat 65536|get_lat 8|get_lat 65536|put_bw 65536|put_bw 1048576|put_bw 4194304|put_bibw 1048576|msg_rate 8|barrier_n2 0|barrier_n4 0|launch_2 0" \
  "$OUT/ours.txt" "$OUT/peer.txt" | tee "$OUT/ratios.txt"
echo "goals: latency-like <= 1.0, bandwidth-like >= 1.0, launch <= 0.3"
echo
echo "== put bandwidth as a fraction of one core's memcpy (the physical limit), same run"
awk '$1 == "copy_bw" || $1 == "put_bw" { v[$1 " " $2] = v[$1 " " $2] " " $3 }
  END { for (s = 65536; s <= 4194304; s *= 4) if (("copy_bw " s) in v) {
          split(v["put_bw " s], p, " "); split(v["copy_bw " s], c, " ")
          printf "  %8d B: put %.0f MB/s of memcpy %.0f MB/s = %.0f%%\n", s, p[1], c[1], 100 * p[1] / c[1] } }' "$OUT/ours.txt" | tee -a "$OUT/ratios.txt"
echo
echo "plot: $OUT/shm-vs-openmpi.svg (last round); raw figures: $OUT/ours.txt, $OUT/peer.txt"
