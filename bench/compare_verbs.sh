#!/usr/bin/env bash
# oneside's verbs transport next to perftest, on the same Soft-RoCE device
# (rxe0, RDMA loopback) in the same guest boot: put latency (8 B) against
# ib_write_lat, get latency (8 B) against ib_read_lat, put bandwidth (64 KiB,
# 1 MiB) against ib_write_bw, fetch-add and compare-and-swap latency against
# ib_atomic_lat, and 32 non-blocking 1 MiB puts + one quiet against the same
# window of blocking puts. The guest's CPU is emulated, so only the
# ratios mean anything. Needs what tests/vm/vm.sh needs (root, QEMU).
#
# With BASE=DIR (a release directory of another build, holding
# examples/bench, and its rlaunch if it has one), the same bench of both builds also runs ROUNDS times,
# alternating in the same boot, and prints this build / BASE: an A/B of a
# change to the transport (goal: within 5% on every figure). AB_MAX caps
# the sizes of those rounds (default 1048576; 65536 fits 5 rounds in a boot).
#
#   bench/compare_verbs.sh        (results in target/compare-verbs/)
#   BASE=/tmp/old/release ROUNDS=5 bench/compare_verbs.sh
set -euo pipefail
# This harness runs more ranks than a small machine has CPUs, on purpose:
# allow it, as --oversubscribe would (without it rlaunch refuses).
export RLAUNCH_OVERSUBSCRIBE=1
cd "$(dirname "$0")/.."
repo=$(pwd)
OUT=target/compare-verbs
mkdir -p "$OUT"

echo "== building (release)"
cargo build --release --bins --examples --quiet

pair() { # server and client of one perftest, on loopback
  echo "$1 -d rxe0 -x 1 $2 >/dev/null 2>&1 & sleep 1; $1 -d rxe0 -x 1 $2 127.0.0.1"
}
script="cd $repo
$(pair ib_write_lat '-s 8 -n 2000') | awk '\$1 == 8 { print \"put_lat 8\", \$5, \"us\" }'
$(pair ib_read_lat '-s 8 -n 2000') | awk '\$1 == 8 { print \"get_lat 8\", \$5, \"us\" }'
$(pair ib_write_bw '-s 65536 -n 2000') | awk '\$1 == 65536 { print \"put_bw 65536\", \$4, \"MB/s\" }'
$(pair ib_write_bw '-s 1048576 -n 200') | awk '\$1 == 1048576 { print \"put_bw 1048576\", \$4, \"MB/s\" }'
$(pair ib_atomic_lat '-n 2000') | awk '\$1 == 8 { print \"fadd_lat 8\", \$5, \"us\" }'
$(pair ib_atomic_lat '-A CMP_AND_SWAP -n 2000') | awk '\$1 == 8 { print \"cswap_lat 8\", \$5, \"us\" }'
echo '--- oneside'
ONESIDE_HEAP_SIZE=16M target/release/rlaunch -n 2 --transport verbs target/release/examples/bench --max 1048576"
if [ -n "${BASE:-}" ]; then
  base=$(realpath "$BASE")
  # The base's ranks speak its own launcher's protocol, when it has one.
  base_rlaunch=target/release/rlaunch
  [ -x "$base/rlaunch" ] && base_rlaunch=$base/rlaunch
  script="$script
for round in \$(seq ${ROUNDS:-5}); do
  echo '--- ab new'; ONESIDE_HEAP_SIZE=16M target/release/rlaunch -n 2 --transport verbs target/release/examples/bench --max ${AB_MAX:-1048576}
  echo '--- ab base'; ONESIDE_HEAP_SIZE=16M $base_rlaunch -n 2 --transport verbs $base/examples/bench --max ${AB_MAX:-1048576}
done"
fi
VM_TIMEOUT=${VM_TIMEOUT:-1800} tests/vm/vm.sh "$script" | tee "$OUT/raw.txt"

sed -n '1,/^--- oneside/p' "$OUT/raw.txt" | grep -E '^(put|get|fadd|cswap)_' > "$OUT/perftest.txt"
sed -n '/^--- oneside/,/^--- ab/p' "$OUT/raw.txt" | grep -E '^[a-z_0-9]+ [0-9]+ [0-9.]+ ' > "$OUT/ours.txt"
echo
echo "== oneside verbs / perftest on rxe0, same boot"
awk -v peer="perftest" -f bench/ratios.awk -v rows="put_lat 8|get_lat 8|put_bw 65536|put_bw 1048576|fadd_lat 8|cswap_lat 8" \
  "$OUT/ours.txt" "$OUT/perftest.txt" | tee "$OUT/ratios.txt"
echo "note: ib_write_lat reports half a round trip (ping-pong); put + quiet is a whole one (the"
echo "completion needs the responder's ACK), so its ratio against 2 x ib_write_lat is:"
awk '$1 == "put_lat" && $2 == 8 { v[FILENAME] = $3 } END { for (f in v) if (f ~ /ours/) o = v[f]; else p = v[f];
     printf "  put_lat 8 / (2 x ib_write_lat): %.2f\n", o / (2 * p) }' "$OUT/ours.txt" "$OUT/perftest.txt" | tee -a "$OUT/ratios.txt"
echo
echo "== 32 non-blocking 1 MiB puts + quiet / the same window of blocking puts (oneside), same boot"
awk -v peer="blocking" -f bench/ratios.awk -v rows="put_nbi_bw 1048576" \
  <(grep '^put_nbi_bw' "$OUT/ours.txt") <(grep '^put_win_bw' "$OUT/ours.txt" | sed 's/^put_win_bw/put_nbi_bw/') \
  | tee -a "$OUT/ratios.txt"
if [ -n "${BASE:-}" ]; then
  awk '/^--- ab new$/ { side = "new" } /^--- ab base$/ { side = "base" } side == "new" && /^[a-z_0-9]+ [0-9]+ [0-9.]+ / { print }' \
    "$OUT/raw.txt" > "$OUT/ab-new.txt"
  awk '/^--- ab new$/ { side = "new" } /^--- ab base$/ { side = "base" } side == "base" && /^[a-z_0-9]+ [0-9]+ [0-9.]+ / { print }' \
    "$OUT/raw.txt" > "$OUT/ab-base.txt"
  echo
  echo "== this build / BASE ($BASE), ${ROUNDS:-5} alternating rounds, same boot (medians)"
  rows=$(awk '{ print $1 " " $2 }' "$OUT/ab-new.txt" | sort -u | paste -sd'|')
  awk -v peer="BASE" -v rows="$rows" -f bench/ratios.awk "$OUT/ab-new.txt" "$OUT/ab-base.txt" | tee -a "$OUT/ratios.txt"
fi
