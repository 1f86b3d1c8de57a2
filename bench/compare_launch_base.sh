#!/usr/bin/env bash
# A/B of launch time against an earlier checkout: rlaunch starting hello_put
# and /bin/true at SIZES ranks on this one host (oversubscribed), this tree
# and the base alternating within every round (which goes first alternates
# too), so the machine's fast and slow states hit both alike. Prints the
# median wall time of each, this/base, and each build's growth t(2N)/t(N)
# (the goal is at most 2.2).
#
#   git worktree add /tmp/base <rev> && (cd /tmp/base && cargo build --release --bins --examples)
#   BASE_DIR=/tmp/base ROUNDS=5 bench/compare_launch_base.sh   (SIZES="512 1024 2048")
set -euo pipefail
# This harness runs more ranks than a small machine has CPUs, on purpose:
# allow it, as --oversubscribe would (without it rlaunch refuses).
export RLAUNCH_OVERSUBSCRIBE=1
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
SIZES=${SIZES:-512 1024 2048}
BASE_TARGET=${BASE_TARGET:-${BASE_DIR:?BASE_DIR names an earlier checkout}/target}
OUT=target/compare_launch_base
mkdir -p "$OUT"
rm -f "$OUT"/*.txt
cargo build --release --bins --examples --quiet

now() { date +%s%N; }
for round in $(seq "$ROUNDS"); do
  echo "== round $round/$ROUNDS"
  for n in $SIZES; do
    for side in $( ((round % 2)) && echo "this base" || echo "base this"); do
      case $side in
        this) dir=target ;;
        base) dir=$BASE_TARGET ;;
      esac
      for program in hello_put true; do
        case $program in
          hello_put) exe=$dir/release/examples/hello_put ;;
          true) exe=/bin/true ;;
        esac
        t0=$(now)
        timeout 300 "$dir/release/rlaunch" -n "$n" --oversubscribe "$exe" >/dev/null 2>"$OUT/last.err" ||
          { echo "$side $program at $n failed:" >&2; tail -3 "$OUT/last.err" >&2; exit 1; }
        t1=$(now)
        echo "$n $(awk -v d=$((t1 - t0)) 'BEGIN { printf "%.3f", d / 1e9 }')" >>"$OUT/$side-$program.txt"
      done
    done
  done
done

median() { # median N FILE: the median seconds at N ranks
  awk -v n="$1" '$1 == n { print $2 }' "$2" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
echo "== wall seconds, medians of $ROUNDS alternating rounds; growth is t(N)/t(N/2)"
printf '%-10s %6s %8s %8s %10s %12s %12s\n' program ranks base this this/base "base growth" "this growth"
for program in hello_put true; do
  prev_b='' prev_t=''
  for n in $SIZES; do
    b=$(median "$n" "$OUT/base-$program.txt")
    t=$(median "$n" "$OUT/this-$program.txt")
    gb=$([ -n "$prev_b" ] && awk -v a="$b" -v p="$prev_b" 'BEGIN { printf "%.2f", a / p }' || echo -)
    gt=$([ -n "$prev_t" ] && awk -v a="$t" -v p="$prev_t" 'BEGIN { printf "%.2f", a / p }' || echo -)
    printf '%-10s %6s %8.2f %8.2f %10.2f %12s %12s\n' "$program" "$n" "$b" "$t" "$(awk -v a="$t" -v b="$b" 'BEGIN { print a / b }')" "$gb" "$gt"
    prev_b=$b prev_t=$t
  done
done
