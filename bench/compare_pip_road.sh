#!/usr/bin/env bash
# The pip road, timed: from an empty venv to a 4-PE shmem4py program's
# answer with the wheel on disk (pip install the wheel, then numpy and
# shmem4py, built here with no cache, then rlaunch -n 4), ROUNDS times.
# Beside it, in the same run:
#  - shmem4py's own compile against Open MPI 4.1's OpenSHMEM (Debian's
#    /usr/bin/oshcc) and against the wheel's oshcc, alternating: the part
#    of the road that is shmem4py's build, with a peer's header;
#  - once (SOURCE=1, the default), the road from source: cargo build
#    --release of rlaunch and oneside-shmem from an empty target
#    directory (crates already downloaded), then the same shmem4py build
#    and run.
# Prints each round and the medians. The goal: the pip road <= 60 s.
#
#   bench/compare_pip_road.sh      (ROUNDS=3; needs make wheel's wheel)
set -euo pipefail
export RLAUNCH_OVERSUBSCRIBE=1
cd "$(dirname "$0")/.."
root=$PWD
ROUNDS=${ROUNDS:-3}
OUT=$root/target/compare_pip_road
python=${PYTHON:-/usr/bin/python3}
wheel=$(ls target/wheels/oneside-*-manylinux_2_28_x86_64.whl | head -n 1)
rm -rf "$OUT" && mkdir -p "$OUT"
cp "$root/tests/wheel/sum.py" "$OUT/sum.py"
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
quiet=(--quiet --disable-pip-version-check)
# shmem4py's compile alone, against OSHCC, in a venv that has its deps.
"$python" -m venv "$OUT/deps" && "$OUT/deps/bin/pip" install "${quiet[@]}" "numpy<2" cffi setuptools wheel "$root/$wheel"
compile() {
  local began; began=$(date +%s%N)
  OSHCC=$1 "$OUT/deps/bin/pip" install "${quiet[@]}" --no-cache-dir --no-build-isolation --no-deps --force-reinstall shmem4py==1.0.0 >/dev/null
  ms "$began"
}
for round in $(seq "$ROUNDS"); do
  venv=$OUT/venv-$round began=$(date +%s%N)
  "$python" -m venv "$venv"
  env -i HOME="$HOME" PATH="$venv/bin:/usr/bin:/bin" bash -c "
    pip install ${quiet[*]} '$root/$wheel' &&
    pip install ${quiet[*]} --no-cache-dir 'numpy<2' shmem4py==1.0.0 &&
    cd '$OUT' && RLAUNCH_OVERSUBSCRIBE=1 rlaunch -n 4 python sum.py" | grep -qx 'sum 10 on 4 PEs'
  road=$(ms "$began")
  if [ $((round % 2)) = 1 ]; then ompi=$(compile /usr/bin/oshcc); ours=$(compile "$OUT/deps/bin/oshcc")
  else ours=$(compile "$OUT/deps/bin/oshcc"); ompi=$(compile /usr/bin/oshcc); fi
  echo "round $round: pip road $road ms; shmem4py's compile: Open MPI's oshcc $ompi ms, the wheel's $ours ms"
  echo "$road" >> "$OUT/road.txt"; echo "$ompi" >> "$OUT/ompi.txt"; echo "$ours" >> "$OUT/ours.txt"
  rm -rf "$venv"
done
echo "medians of $ROUNDS: pip road $(median < "$OUT/road.txt") ms (goal 60000); shmem4py's compile: Open MPI's oshcc $(median < "$OUT/ompi.txt") ms, the wheel's $(median < "$OUT/ours.txt") ms"
if [ "${SOURCE:-1}" = 1 ]; then
  venv=$OUT/venv-source began=$(date +%s%N)
  CARGO_TARGET_DIR=$OUT/cargo cargo build --release --quiet -p rlaunch -p oneside-shmem
  built=$(ms "$began")
  "$python" -m venv "$venv"
  "$venv/bin/pip" install "${quiet[@]}" "numpy<2" cffi
  OSHCC=$OUT/cargo/release/oshcc "$venv/bin/pip" install "${quiet[@]}" --no-cache-dir --no-binary shmem4py shmem4py==1.0.0
  (cd "$OUT" && "$OUT/cargo/release/rlaunch" -n 4 "$venv/bin/python" sum.py) | grep -qx 'sum 10 on 4 PEs'
  echo "from source, once: $(ms "$began") ms to the same answer (cargo build --release: $built ms)"
  rm -rf "$OUT/cargo"
fi
