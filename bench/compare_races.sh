#!/usr/bin/env bash
# What the race checker and the checking mode cost, each against the same
# program unchecked, in the same run: for every program, ROUNDS rounds of
# (unchecked, --check-races, --check-races without the rebuild, --debug)
# in alternating order, at each NPS size; prints each one's median time,
# the ratios checked/unchecked, and each checked run's reports (a
# race-free program must have none). A fifth run, the checked build with
# the checker off ("built"), is the instrumentation's own cost: the floor
# that no work in the runtime can take a checked run below.
#
# C programs come twice: built by plain oshcc (run unchecked and under
# --debug) and by `oshcc --check-races` (run under --check-races, which
# then also sees the program's own loads and stores). Rust programs are
# one binary (the run-time switch). The time is the program's own figure
# where it prints one (PRK's "Avg time", ISx's "Average total time",
# bench/barrier.c's microseconds per barrier), else the job's wall time.
#
#   PRK=/work/peer/Kernels/SHMEM ISX=/work/peer ROUNDS=5 NPS="2 4" bench/compare_races.sh
#
# PRK: a ParRes Kernels checkout whose SHMEM Stencil, Transpose and
# Synch_p2p were each built twice with its own Makefiles, as <kernel>-plain
# (SHMEMCC="oshcc -O3 -g") and <kernel>-races (SHMEMCC="oshcc
# --check-races -O3 -g"). ISX: a directory holding isx-plain and isx-races,
# ISx's isx.strong built with its SHMEM Makefile (make optimized
# CC="oshcc [--check-races] -D_POSIX_C_SOURCE=200809L"). Both are fetched
# and built outside the project; either may be left unset.
set -euo pipefail
cd "$(dirname "$0")/.."
export RLAUNCH_OVERSUBSCRIBE=1
ROUNDS=${ROUNDS:-5}
NPS=${NPS:-"2 4"}
OUT=target/compare_races
mkdir -p "$OUT" && rm -f "$OUT"/*.txt "$OUT"/*.log
cargo build --release --quiet -p rlaunch -p oneside-shmem --bins --examples
R=target/release/rlaunch
OSHCC=target/release/oshcc
$OSHCC -O2 -g -o "$OUT/heat-plain" bench/heat.c
$OSHCC --check-races -O2 -g -o "$OUT/heat-races" bench/heat.c
$OSHCC -O2 -g -o "$OUT/barrier-plain" bench/barrier.c
$OSHCC --check-races -O2 -g -o "$OUT/barrier-races" bench/barrier.c

# name|plain binary|checked binary|arguments|how the time is read
progs=(
  "barrier.c, us|$OUT/barrier-plain|$OUT/barrier-races|20000|barrier"
  "heat.c|$OUT/heat-plain|$OUT/heat-races|100000 100|wall"
  "halo.rs|target/release/examples/halo|target/release/examples/halo|100000 200|wall"
  "cg.rs|target/release/examples/cg|target/release/examples/cg|2000|wall"
  "summa.rs|target/release/examples/summa|target/release/examples/summa|240|wall"
)
if [ -n "${PRK:-}" ]; then
  progs+=("PRK Stencil|$PRK/Stencil/stencil-plain|$PRK/Stencil/stencil-races|20 2000|prk"
    "PRK Transpose|$PRK/Transpose/transpose-plain|$PRK/Transpose/transpose-races|20 2000|prk"
    "PRK Synch_p2p|$PRK/Synch_p2p/p2p-plain|$PRK/Synch_p2p/p2p-races|20 2000 2000|prk")
fi
if [ -n "${ISX:-}" ]; then
  progs+=("ISx|$ISX/isx-plain|$ISX/isx-races|16777216 $OUT/isx-out|isx")
fi

run() { # MODE PROG NP: one run; prints its time in seconds
  local mode=$1 np=$3 name plain checked args how exe flag log t0 t1
  IFS='|' read -r name plain checked args how <<<"$2"
  case $mode in
    off) exe=$plain flag=() ;;
    races) exe=$checked flag=(--check-races) ;;
    rt) exe=$plain flag=(--check-races) ;;
    debug) exe=$plain flag=(--debug) ;;
    built) exe=$checked flag=() ;;
  esac
  log="$OUT/$(echo "$name" | tr ' ./' '___')-$mode-$np.log"
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  timeout 900 "$R" -n "$np" "${flag[@]}" "$exe" $args >"$log" 2>&1 || [ $? = 66 ] || { echo "$name $mode at $np failed:" >&2; tail -5 "$log" >&2; return 1; }
  t1=$(date +%s.%N)
  case $how in
    prk) awk '/Avg time/ { print $NF }' "$log" ;;
    isx) awk '/Average total time/ { print $6 }' "$log" ;;
    barrier) awk '/^barrier/ { print $2 }' "$log" ;;
    *) echo "$t1 - $t0" | bc -l ;;
  esac
  grep -c "data race" "$log" >>"$OUT/reports-$mode.txt" || true
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

for round in $(seq "$ROUNDS"); do
  echo "== round $round/$ROUNDS"
  for np in $NPS; do
    for p in "${progs[@]}"; do
      name=${p%%|*}
      modes="off built races rt debug"
      ((round % 2)) || modes="debug rt races built off"
      for mode in $modes; do
        echo "$(run "$mode" "$p" "$np")" >>"$OUT/$(echo "$name" | tr ' ./' '___')-$mode-$np.txt"
      done
    done
  done
done

echo
echo "| program | PEs | unchecked (s) | --check-races (s) | ratio | built, checker off: ratio | not rebuilt (s) | ratio | --debug (s) | ratio |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for np in $NPS; do
  for p in "${progs[@]}"; do
    name=${p%%|*}
    f="$OUT/$(echo "$name" | tr ' ./' '___')"
    off=$(median <"$f-off-$np.txt") races=$(median <"$f-races-$np.txt") rt=$(median <"$f-rt-$np.txt")
    debug=$(median <"$f-debug-$np.txt") built=$(median <"$f-built-$np.txt")
    printf '| %s | %s | %.4f | %.4f | %.2f | %.2f | %.4f | %.2f | %.4f | %.2f |\n' "$name" "$np" "$off" "$races" \
      "$(echo "$races / $off" | bc -l)" "$(echo "$built / $off" | bc -l)" "$rt" "$(echo "$rt / $off" | bc -l)" "$debug" "$(echo "$debug / $off" | bc -l)"
  done
done
echo
echo "data race reports in the checked runs (race-free programs: all 0): $(cat "$OUT/reports-races.txt" "$OUT/reports-rt.txt" | sort -u | tr '\n' ' ')"
