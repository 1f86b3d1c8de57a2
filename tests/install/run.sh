#!/usr/bin/env bash
# An installation as a site would make and use it, in order:
#   1. make install PREFIX=$WORK/p1, from a copy of this tree (its files as
#      git lists them, so a developer's own target/ is never touched), and
#      `cargo install --path launcher`, whose rlaunch runs ring in step 4;
#   2. move the prefix to $WORK/p2;
#   3. delete the copy's target/: nothing may still point into it;
#   4. with only p2/bin on PATH, and again through `module load` under Lmod,
#      compile tests/c/ring.c with oshcc and run it with oshrun -np 4; the
#      program's run path is p2/lib; pkg-config and `man -l` work;
#   5. build a Rust program outside the tree that depends on oneside by path,
#      and run it with the installed rlaunch;
#   6. make uninstall, which must leave p2 empty.
# Needs make, gcc, lmod, man-db and pkg-config (.ci/run installs them).
set -euo pipefail
# This harness runs more ranks than a small machine has CPUs, on purpose:
# allow it, as --oversubscribe would (without it rlaunch refuses).
export RLAUNCH_OVERSUBSCRIBE=1
# Its builds (the copy's `make install`, `cargo install`, the Rust program of
# step 5) start from nothing, so they are built without the optimizer: this
# checks where files go and that they work, not how fast they run.
# INSTALL_OPT_LEVEL=3 builds them as a site would.
export CARGO_PROFILE_RELEASE_OPT_LEVEL=${INSTALL_OPT_LEVEL:-0} CARGO_PROFILE_RELEASE_DEBUG=${INSTALL_DEBUG:-0}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${WORK:-/tmp/oneside-install}
rm -rf "$work"
mkdir -p "$work/src" "$work/run" "$work/app/src"
step() { echo "== install: $*"; }
fail() { echo "install: FAIL: $*" >&2; exit 1; }
# Only the installed tools, the compiler and coreutils (and the allowance
# to run 4 ranks on 2 cores).
plain() { env -i HOME="$HOME" PATH="$work/p2/bin:/usr/bin:/bin" RLAUNCH_OVERSUBSCRIBE=1 "$@"; }

step "copy the tree to $work/src"
(cd "$root" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf -) | tar -xf - -C "$work/src"

step "1. make install PREFIX=$work/p1"
(cd "$work/src" && make install PREFIX="$work/p1" >"$work/install.log" 2>&1) || { tail -20 "$work/install.log"; fail "make install"; }
tail -3 "$work/install.log"
for file in bin/rlaunch bin/oshrun bin/oshcc bin/oshc++ lib/liboneside_shmem.so lib/liboneside_shmem.a \
  lib/pkgconfig/oneside-shmem.pc include/shmem.h include/pshmem.h include/shmemx.h include/mpp/shmem.h include/mpp/shmemx.h share/man/man1/rlaunch.1 \
  share/man/man1/oshrun.1 share/man/man1/oshcc.1 share/modulefiles/oneside/0.1.0.lua share/doc/oneside/README.md; do
  [ -e "$work/p1/$file" ] || fail "$file was not installed"
done
soname=$(readelf -d "$work/p1/lib/liboneside_shmem.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ -n "$soname" ] && [ -e "$work/p1/lib/$soname" ] || fail "no versioned soname link ($soname)"

step "1b. cargo install --path launcher (sharing the build's target/) gives a working rlaunch"
(cd "$work/src" && CARGO_TARGET_DIR="$work/src/target" cargo install --quiet --path launcher --root "$work/cargo-root")
[ -x "$work/cargo-root/bin/rlaunch" ] || fail "cargo install put no rlaunch in $work/cargo-root/bin"

step "2. move the prefix to $work/p2; 3. delete the build's target/"
mv "$work/p1" "$work/p2"
rm -rf "$work/src/target"
if grep -rlI -e "$work/p1" -e "$work/src" "$work/p2" | grep -v '/share/doc/'; then
  fail "installed text files name the old prefix or the build tree"
fi

step "4. oshcc and oshrun -np 4 with only $work/p2/bin on PATH"
cd "$work/run"
plain oshcc -show -o ring "$work/src/tests/c/ring.c"
plain oshcc -std=c11 -Wall -Werror -o ring "$work/src/tests/c/ring.c"
readelf -d ring | grep -q "RUNPATH.*\[$work/p2/lib\]" || fail "ring's run path is not $work/p2/lib"
plain oshrun -np 4 --timeout 60 ./ring | tee ring.out
grep -qx 'ring ok' ring.out || fail "ring did not print 'ring ok'"
"$work/cargo-root/bin/rlaunch" -n 2 --timeout 60 ./ring | grep -qx 'ring ok' || fail "ring under cargo install's rlaunch"
rm -rf "$work/cargo-root"
version=$(plain oshcc --version)
grep -q '^oshcc (oneside) 0.1.0, transports: shm, tcp, verbs' <<<"$version" || fail "oshcc --version: $version"
version=$(plain rlaunch --version)
grep -q 'transports: shm, tcp, verbs' <<<"$version" || fail "rlaunch --version: $version"
cflags=$(PKG_CONFIG_PATH="$work/p2/lib/pkgconfig" pkg-config --cflags --libs oneside-shmem)
# shellcheck disable=SC2086 # the flags are words
cc -o ring_pc "$work/src/tests/c/ring.c" $cflags
plain oshrun -np 2 --timeout 60 ./ring_pc | grep -qx 'ring ok' || fail "the program built with pkg-config's flags"
for page in rlaunch oshrun oshcc; do
  MANWIDTH=80 man -l "$work/p2/share/man/man1/$page.1" 2>&1 | grep -q "^NAME" || fail "man -l $page.1 renders no NAME"
done
MANWIDTH=80 man -l "$work/p2/share/man/man1/rlaunch.1" | grep -q -- "--hang-timeout" || fail "rlaunch.1 lacks --hang-timeout"

step "4. the same through module load under Lmod"
env -i HOME="$HOME" PATH=/usr/bin:/bin WORK="$work" RLAUNCH_OVERSUBSCRIBE=1 bash -c '
  set -euo pipefail
  source /usr/share/lmod/lmod/init/bash
  module use "$WORK/p2/share/modulefiles"
  module load oneside
  [ "$(command -v oshcc)" = "$WORK/p2/bin/oshcc" ]
  [ "$ONESIDE_HOME" = "$WORK/p2" ]
  man -w rlaunch | grep -q "$WORK/p2/share/man/man1/rlaunch.1"
  man -w ls >/dev/null
  cd "$WORK/run"
  oshcc -o ring_module "$WORK/src/tests/c/ring.c"
  oshrun -np 4 --timeout 60 ./ring_module | grep -qx "ring ok"
  module unload oneside
  # (the oshcc of Open MPI may remain, in /usr/bin.)
  [ "$(command -v oshcc)" != "$WORK/p2/bin/oshcc" ]
' || fail "module load oneside"

step "5. a Rust program outside the tree, oneside by path, run by the installed rlaunch"
cat > "$work/app/Cargo.toml" <<TOML
[package]
name = "app"
version = "0.1.0"
edition = "2021"

[dependencies]
oneside = { path = "$work/src" }
TOML
cat > "$work/app/src/main.rs" <<'RUST'
use oneside::prelude::*;

fn main() -> oneside::Result<()> {
    let world = oneside::init()?;
    let (rank, size) = (world.rank(), world.size());
    let inbox = world.alloc::<u64>(1)?;
    world.put_value(&inbox, (rank + 1) % size, 0, rank as u64)?;
    world.barrier()?;
    let left = (rank + size - 1) % size;
    assert_eq!(world.get_value(&inbox, rank, 0)?, left as u64);
    if rank == 0 {
        println!("app ok on {size} ranks");
    }
    Ok(())
}
RUST
(cd "$work/app" && cargo build --release --quiet)
plain rlaunch -n 4 --timeout 60 "$work/app/target/release/app" | tee app.out
grep -qx 'app ok on 4 ranks' app.out || fail "the Rust program"

step "6. make uninstall PREFIX=$work/p2"
(cd "$work/src" && make uninstall PREFIX="$work/p2")
left=$(find "$work/p2" -mindepth 1 | head)
[ -z "$left" ] || fail "left behind after uninstall: $left"
echo "install: PASS"
