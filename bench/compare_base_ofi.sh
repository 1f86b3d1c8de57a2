#!/usr/bin/env bash
# A/B of this tree against an earlier checkout over ofi, 2 ranks on this
# host, the builds alternating ROUNDS times in one run (the order rotates
# every round), so drift hits every side alike: examples/bench --smoke
# (as bench/compare_base.sh runs it over shm and tcp) and bench/capi_lat.c
# (8-byte put, get, fetch-add and compare-and-swap latency through
# shmem.h, the measure bench/compare_ofi.sh takes, since the smoke run
# times a few operations right after the target entered its barrier).
#
# Three sides: this tree as it runs by default ("this"), this tree with
# its segment registered in parts (ONESIDE_OFI_REGISTER=parts, "parts":
# the path a provider that pins memory takes, every heap object in a part
# of its own and found by its hint, capi_lat's globals in the data's
# part), and the base. Prints this/base and parts/base ratios of the
# medians: a change that only moves code must leave them at 1.00 within
# noise.
#
#   git worktree add --detach /tmp/base <rev> && (cd /tmp/base && cargo build --release --workspace --lib --bins --examples)
#   BASE_DIR=/tmp/base ROUNDS=5 bench/compare_base_ofi.sh   (PROVIDER='tcp;ofi_rxm'; results in target/compare_base_ofi/)
set -euo pipefail
# This harness runs more ranks than a small machine has CPUs, on purpose:
# allow it, as --oversubscribe would (without it rlaunch refuses).
export RLAUNCH_OVERSUBSCRIBE=1
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
PROVIDER=${PROVIDER:-tcp;ofi_rxm}
BASE_DIR=${BASE_DIR:?BASE_DIR names an earlier checkout, built in release}
OUT=target/compare_base_ofi
rm -rf "$OUT" && mkdir -p "$OUT"
cargo build --release --workspace --lib --bins --examples --quiet
target/release/oshcc -O2 -Wall -o "$OUT/capi_lat-this" bench/capi_lat.c
"$BASE_DIR/target/release/oshcc" -O2 -Wall -o "$OUT/capi_lat-base" bench/capi_lat.c
RUST_ROWS="put_lat 8|get_lat 8|fadd_lat 8|add_lat 8|cswap_lat 8|put_signal_lat 8|msg_rate 8|add_rate 8|put_bw 65536|put_bw 1048576|get_bw 1048576|barrier_n2 0"
C_ROWS="put_lat 8|get_lat 8|fadd_lat 8|cswap_lat 8"
figures() { grep -E '^[a-z_0-9]+ [0-9]+ [0-9.]+ [a-zA-Z/]+$' || true; }
note() { echo "failed or timed out: $*" | tee -a "$OUT/notes.txt" >&2; }
sides=(this parts base)
for round in $(seq "$ROUNDS"); do
  echo "== round $round/$ROUNDS"
  shift_by=$(( (round - 1) % 3 ))
  order=("${sides[@]:shift_by}" "${sides[@]:0:shift_by}")
  for side in "${order[@]}"; do
    case $side in
      base) dir=$BASE_DIR/target register= ;;
      this) dir=target register= ;;
      parts) dir=target register=parts ;;
    esac
    exe=$OUT/capi_lat-${side/parts/this}
    env ${register:+ONESIDE_OFI_REGISTER=$register} timeout 300 "$dir/release/rlaunch" -n 2 --transport ofi \
      --ofi-provider "$PROVIDER" "$dir/release/examples/bench" --smoke < /dev/null | figures >> "$OUT/rust-$side.txt" \
      || note "examples/bench, $side, round $round"
    env ${register:+ONESIDE_OFI_REGISTER=$register} ONESIDE_TRANSPORT=ofi ONESIDE_OFI_PROVIDER="$PROVIDER" \
      timeout 300 "$dir/release/oshrun" -np 2 "$exe" < /dev/null | figures >> "$OUT/c-$side.txt" \
      || note "capi_lat, $side, round $round"
  done
done
for side in this parts; do
  echo "== examples/bench --smoke over ofi $PROVIDER: $side / base, median of $ROUNDS alternating rounds"
  awk -v rows="$RUST_ROWS" -v peer="base" -f bench/ratios.awk "$OUT/rust-$side.txt" "$OUT/rust-base.txt" | sed "s/oneside/$side/" | tee -a "$OUT/ratios.txt"
  echo "== bench/capi_lat.c over ofi $PROVIDER: $side / base, median of $ROUNDS alternating rounds"
  awk -v rows="$C_ROWS" -v peer="base" -f bench/ratios.awk "$OUT/c-$side.txt" "$OUT/c-base.txt" | sed "s/oneside/$side/" | tee -a "$OUT/ratios.txt"
done
if [ -s "$OUT/notes.txt" ]; then echo; echo "== runs that failed or timed out"; cat "$OUT/notes.txt"; fi
