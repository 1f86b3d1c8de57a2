#!/usr/bin/env bash
# The wheel as a user gets it, in order:
#   1. make wheel: the wheel and the sdist in target/wheels/; auditwheel
#      show confirms manylinux_2_28, the version is the workspace's, the
#      wheel is at most 15 MB and holds no fabric library, and its ELF
#      files need only glibc and libgcc_s;
#   2. a fresh venv, and from then on only the venv's bin/, /usr/bin and
#      /bin on PATH (env -i, no cargo, no rustc, no source tree): pip
#      install the wheel, then shmem4py, then a 4-rank shmem4py program,
#      timed from the empty venv (the guide's figure);
#   3. C: oshcc -show names the venv, ring.c built with oshcc, oshc++ and
#      pkg-config runs at 1, 2 and 4 ranks under oshrun, with the venv's
#      lib/ as its run path; the man pages render; python -m oneside
#      --version lists the transports;
#   4. shmem4py's own test suite at 2 PEs, with the pass count of the
#      source tree's run (tests/python/run.sh) when that ran first;
#   5. --transport ofi over Debian's libfabric, found at run time;
#   6. pip install mpi4py mpich: a hybrid mpi4py + shmem4py program under
#      that wheel's mpiexec (Hydra), both import orders, PE = MPI rank;
#   7. pip uninstall in a venv of its own leaves no file behind.
# Needs python3-venv, pkg-config, man-db, libfabric1 and the package
# registry (.ci/run installs them). Every run is bounded in time.
set -euo pipefail
# This harness runs more ranks than a small machine has CPUs, on purpose:
# allow it, as --oversubscribe would (without it rlaunch refuses).
export RLAUNCH_OVERSUBSCRIBE=1
cd "$(dirname "$0")/../.."
root=$PWD
work=${WORK:-/tmp/oneside-wheel}
python=${PYTHON:-/usr/bin/python3}
# shmem4py and its NumPy pinned as tests/python/run.sh pins them.
shmem4py=shmem4py==1.0.0
numpy='numpy<2'
rm -rf "$work"
mkdir -p "$work/run"
step() { echo "== wheel: $*"; }
fail() { echo "wheel: FAIL: $*" >&2; exit 1; }
venv=$work/venv
# Only the venv's tools, the compiler and coreutils.
plain() { env -i HOME="$HOME" PATH="$venv/bin:/usr/bin:/bin" RLAUNCH_OVERSUBSCRIBE=1 "$@"; }
pip_quiet=(--quiet --disable-pip-version-check)

step "1. make wheel"
began=$SECONDS
make wheel >"$work/make.log" 2>&1 || { tail -30 "$work/make.log"; fail "make wheel"; }
echo "built in $((SECONDS - began)) s"
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
wheel=$(echo target/wheels/oneside-"$version"-py3-none-manylinux_2_28_x86_64.whl)
[ -f "$wheel" ] || fail "no $wheel: $(ls target/wheels)"
[ -f "target/wheels/oneside-$version.tar.gz" ] || fail "no sdist oneside-$version.tar.gz"
shown=$(PATH="$root/target/wheel-tools/bin:$PATH" auditwheel show "$wheel" 2>&1)
grep -q 'consistent with the[[:space:]]*following platform tag: "manylinux_2_28_x86_64"' <<<"$(tr '\n' ' ' <<<"$shown")" \
  || fail "auditwheel show: $shown"
bytes=$(stat -c %s "$wheel")
echo "$(basename "$wheel"): $((bytes / 1024)) KiB"
[ "$bytes" -le $((15 * 1024 * 1024)) ] || fail "the wheel is over 15 MB"
if unzip -l "$wheel" | grep -E 'lib(ibverbs|fabric|pmix|rdmacm|efa|mlx|ucp|ucs|psm)'; then
  fail "the wheel carries a fabric library"
fi
rm -rf "$work/unpacked" && mkdir -p "$work/unpacked" && (cd "$work/unpacked" && unzip -q "$root/$wheel")
allowed='^(libc\.so\.6|libm\.so\.6|libgcc_s\.so\.1|ld-linux-x86-64\.so\.2|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|libutil\.so\.1)$'
find "$work/unpacked" -type f | while read -r file; do
  [ "$(head -c 4 "$file" | od -An -c | tr -d ' ')" = '177ELF' ] || continue
  readelf -d "$file" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | grep -Ev "$allowed" \
    && fail "${file#"$work"/unpacked/} needs a library beyond glibc and libgcc_s"
  true
done

step "2. from an empty venv: pip install the wheel, then shmem4py, then 4 PEs"
began=$(date +%s%N)
"$python" -m venv "$venv"
plain bash -c '! command -v cargo && ! command -v rustc' >/dev/null || fail "cargo or rustc is on the test's PATH"
plain pip install "${pip_quiet[@]}" "$root/$wheel"
wheel_done=$(date +%s%N)
# The guide's second command: shmem4py finds the venv's oshcc on PATH (no
# OSHCC); no cache, so it is built here, against this oshcc.
plain pip install "${pip_quiet[@]}" --no-cache-dir "$numpy" "$shmem4py" >"$work/shmem4py.log" 2>&1 \
  || { tail -30 "$work/shmem4py.log"; fail "pip install shmem4py"; }
cp "$root/tests/wheel/sum.py" "$work/run/sum.py"
(cd "$work/run" && plain timeout -k 5 120 rlaunch -n 4 python sum.py) | tee "$work/sum.out"
grep -qx 'sum 10 on 4 PEs' "$work/sum.out" || fail "the 4-PE shmem4py program"
done_ns=$(date +%s%N)
echo "empty venv to a 4-PE result: $(( (done_ns - began) / 1000000 )) ms (the wheel: $(( (wheel_done - began) / 1000000 )) ms; shmem4py's build is the rest)"
extension=$(echo "$venv"/lib/python3*/site-packages/shmem4py/api*.so)
ldd "$extension" | grep -q "liboneside_shmem.so.* => $venv/lib/" || fail "shmem4py is not built against the venv's library: $(ldd "$extension")"

step "3. C with the venv's oshcc, oshc++ and pkg-config, under oshrun"
cd "$work/run"
shown=$(plain oshcc -show -o ring "$root/tests/c/ring.c")
echo "$shown"
grep -q -- "-I$venv/include .*-Wl,-rpath,$venv/lib -loneside_shmem" <<<"$shown" || fail "oshcc -show does not name the venv"
plain oshcc -std=c11 -Wall -Werror -o ring "$root/tests/c/ring.c"
readelf -d ring | grep -q "RUNPATH.*\[$venv/lib\]" || fail "ring's run path is not $venv/lib"
plain oshc++ -x c++ -o ring_cxx "$root/tests/c/ring.c"
plain bash -c "cc -o ring_pc '$root/tests/c/ring.c' \$(PKG_CONFIG_PATH='$venv/lib/pkgconfig' pkg-config --cflags --libs oneside-shmem)"
for program in ring ring_cxx ring_pc; do
  for n in 1 2 4; do
    plain timeout -k 5 60 oshrun -np $n --timeout 60 ./$program > $program-$n.out 2>&1 || { cat $program-$n.out; fail "$program at $n ranks"; }
    grep -qx 'ring ok' $program-$n.out || { cat $program-$n.out; fail "$program at $n ranks printed no 'ring ok'"; }
  done
done
echo "ring (oshcc, oshc++, pkg-config) at 1, 2 and 4 ranks: ok"
for page in rlaunch oshrun oshcc; do
  MANWIDTH=80 man -l "$venv/share/man/man1/$page.1" 2>&1 | grep -q "^NAME" || fail "man -l $page.1 renders no NAME"
done
plain python -m oneside --version | tee "$work/version.out"
grep -q "^oneside $version in $venv\$" "$work/version.out" || fail "python -m oneside --version names another prefix"
grep -q "^  ofi: yes (libfabric 1" "$work/version.out" || fail "python -m oneside --version does not reach libfabric"
[ "$(plain python -c 'import oneside; print(oneside.prefix(), oneside.__version__)')" = "$venv $version" ] \
  || fail "oneside.prefix() or __version__"

step "4. shmem4py's own test suite at 2 PEs"
plain pip download "${pip_quiet[@]}" --no-deps --no-binary shmem4py -d "$work/sdist" "$shmem4py" >/dev/null
tar -xzf "$work"/sdist/shmem4py-*.tar.gz -C "$work/sdist"
suite=$(echo "$work"/sdist/shmem4py-*/test)
(cd "$suite" && PYTHONDONTWRITEBYTECODE=1 plain timeout -k 5 600 oshrun -np 2 --timeout 600 python -m unittest discover -s .) \
  > "$work/suite.log" 2>&1 || { tail -30 "$work/suite.log"; fail "shmem4py's suite at 2 PEs"; }
ran=$(grep -m1 -E '^Ran [0-9]+ tests' "$work/suite.log")
echo "$ran: $(grep -m1 -E '^OK' "$work/suite.log")"
tree_log=$root/target/python/shmem4py-suite-2-shm.log
if [ -f "$tree_log" ]; then
  tree_ran=$(grep -m1 -E '^Ran [0-9]+ tests' "$tree_log")
  [ "$(grep -m1 -E '^OK' "$tree_log")" = "$(grep -m1 -E '^OK' "$work/suite.log")" ] && [ "${ran%% in *}" = "${tree_ran%% in *}" ] \
    || fail "the suite differs from the source tree's: '$ran' against '$tree_ran'"
  echo "the same as from the source tree (tests/python/run.sh): ${tree_ran%% in *}"
fi

step "5. --transport ofi (Debian's libfabric, opened at run time)"
plain timeout -k 5 120 oshrun -np 2 --transport ofi --timeout 120 ./ring | grep -qx 'ring ok' || fail "ring over ofi"
(plain timeout -k 5 120 rlaunch -n 2 --transport ofi --timeout 120 python sum.py) | grep -qx 'sum 3 on 2 PEs' || fail "sum.py over ofi"
echo "ring.c and sum.py over ofi: ok"

step "6. hybrid mpi4py + shmem4py under the mpich wheel's mpiexec"
plain pip install "${pip_quiet[@]}" mpich mpi4py
[ "$(plain bash -c 'command -v mpiexec')" = "$venv/bin/mpiexec" ] || fail "mpiexec is not the venv's"
for order in mpi-first shmem-first; do
  for n in 2 4; do
    log=$work/hybrid-$order-$n.log
    plain timeout -k 5 120 mpiexec -n $n python "$root/tests/wheel/hybrid.py" $order > "$log" 2>&1 || { cat "$log"; fail "hybrid $order at $n ranks"; }
    [ "$(grep -c ' ok$' "$log")" = $n ] && [ "$(wc -l < "$log")" = $n ] || { cat "$log"; fail "hybrid $order at $n ranks: not $n right answers alone"; }
  done
done
echo "hybrid at 2 and 4 ranks, both orders: every rank right, nothing else printed"

step "7. pip uninstall leaves nothing"
clean=$work/clean
"$python" -m venv "$clean"
snapshot() { (cd "$clean" && find . | sort); }
snapshot > "$work/before.txt"
"$clean/bin/pip" install "${pip_quiet[@]}" "$root/$wheel"
env -i PATH="$clean/bin:/usr/bin:/bin" python -m oneside --version > /dev/null
env -i PATH="$clean/bin:/usr/bin:/bin" oshcc -o "$work/run/ring_clean" "$root/tests/c/ring.c"
"$clean/bin/pip" uninstall "${pip_quiet[@]}" --yes oneside
snapshot > "$work/after.txt"
left=$(comm -13 "$work/before.txt" "$work/after.txt")
# pip removes the directories that held the wheel's files, not their
# parents: share/ and share/man/ stay, empty, as with any wheel's data.
for path in $left; do
  [ -d "$clean/$path" ] && [ -z "$(ls -A "$clean/$path" | grep -v '^man$')" ] || fail "left behind after pip uninstall: $path"
done
echo "no file left; pip leaves the empty directories: $(echo $left)"
echo "wheel: PASS"
