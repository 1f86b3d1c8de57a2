# Shared by bench/oshmem_peer.sh and bench/oshmem_coll.sh (sourced, not run):
# building the OSU Micro-Benchmarks 6.1 OpenSHMEM programs from
# ../shared/suites/osu-micro-benchmarks (not copied, not edited) with Open MPI
# 4.1.4's oshcc, and running them under oshrun with their tables checked.
#
# The caller sets OUT (build and output directory), OSHRUN (the oshrun command
# line as an array, including `timeout`), OSHRUN_TIMEOUT, and before each
# oshm_run `round`; oshm_run sets `status=1` on a missing figure.
#
# Quirk of Open MPI 4.1.4 here: every oshmem program SIGSEGVs inside
# shmem_finalize after printing its table, so exit statuses are ignored and
# the tables are checked instead.
# This harness runs more ranks than a small machine has CPUs, on purpose:
# allow it, as --oversubscribe would (without it rlaunch refuses).
export RLAUNCH_OVERSUBSCRIBE=1

SUITE=../shared/suites/osu-micro-benchmarks
LOG_NAME=${LOG_NAME:-$(basename "$0" .sh)}
log() { echo "$LOG_NAME: $*" >&2; }

# oshm_setup: installs Open MPI if missing, checks the suite, writes the stub.
oshm_setup() {
  if ! command -v oshcc >/dev/null || ! command -v oshrun >/dev/null; then
    log "installing Open MPI (Debian openmpi-bin, libopenmpi-dev)"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openmpi-bin libopenmpi-dev; } >&2
  fi
  [ -d "$SUITE/c/openshmem" ] || { log "missing $SUITE (see ../shared/suites/README.md)"; exit 1; }
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  mkdir -p "$OUT"
  echo 'void omb_ddt_process_options(char *o) { (void)o; }' > "$OUT/omb_stub.c"
}

# osu_build NAME [EXTRA-SOURCE...]: builds $BUILD_DIR/osu_oshm_NAME (default
# $OUT) with $OSHCC (default Open MPI's oshcc). OSU_CFLAGS (an array, may be
# unset) adds compiler flags.
osu_build() {
  local name=$1; shift
  "${OSHCC:-oshcc}" -O2 -DOSHM_1_3 -DPACKAGE_VERSION='"6.1"' ${OSU_CFLAGS[@]+"${OSU_CFLAGS[@]}"} -I "$SUITE/c/util" \
    "$SUITE/c/openshmem/osu_oshm_$name.c" "$SUITE/c/util/osu_util.c" "$SUITE/c/util/osu_util_pgas.c" \
    "$OUT/omb_stub.c" "$@" -o "${BUILD_DIR:-$OUT}/osu_oshm_$name" -lm >&2
}

# oshm_run NAME EXPECTED AWK-PROGRAM ARGS...: runs one program under OSHRUN,
# keeps its raw output in $OUT/NAME-$round.{out,err}, converts its table with
# AWK-PROGRAM and prints the figures; warns when there are not EXPECTED.
oshm_run() {
  local name=$1 expected=$2 prog=$3 rc=0 got; shift 3
  "${OSHRUN[@]}" "$@" >"$OUT/$name-$round.out" 2>"$OUT/$name-$round.err" || rc=$?
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then log "$name: stopped by timeout after ${OSHRUN_TIMEOUT}s"
  elif [ "$rc" -ne 0 ]; then log "$name: exit status $rc (ignored: the crash at shmem_finalize)"; fi
  if grep -h '^oshm_signal:' "$OUT/$name-$round.err" >&2; then status=1; fi
  awk "$prog" "$OUT/$name-$round.out" > "$OUT/$name-$round.txt"
  got=$(wc -l < "$OUT/$name-$round.txt")
  if [ "$got" -ne "$expected" ]; then
    log "WARNING: $name gave $got of $expected figures; see $OUT/$name-$round.{out,err}"; status=1
  fi
  cat "$OUT/$name-$round.txt"
}
