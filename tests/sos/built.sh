# Sourced by the harnesses that run tests-sos programs over other transports
# (tests/ofi/run.sh, tests/vm/sos-verbs.sh) on the release library.
#
# sos_built OUT: prints the directory of a built suite. The one
# tests/sos/run.sh built for shm and tcp (CI's earlier stage, target/sos/build)
# serves when it holds the subset's programs: they load the library that
# LD_LIBRARY_PATH names before their run path, so the caller runs them with
# LD_LIBRARY_PATH=target/release. Otherwise the suite is built into OUT
# against the release library. Either way, the release library and oshrun
# are built first.
sos_built() {
  local out=$1 root first built
  root=$(pwd)
  built=${SOS_BUILD:-$root/target/sos/build}
  first=$(grep -v '^#' "$root/tests/sos/verbs-subset.txt" | head -1)
  cargo build --release --quiet -p oneside-shmem -p rlaunch >&2
  if [ -x "$built/test/$first" ]; then
    echo "== reusing the suite tests/sos/run.sh built ($built), on the release library" >&2
    rm -rf "$out" && mkdir -p "$out"
  else
    echo "== building the suite against the release library (host)" >&2
    PROFILE=release BUILD_ONLY=1 OUT=$out tests/sos/run.sh >&2
    built=$out/build
  fi
  echo "$built"
}
