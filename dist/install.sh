#!/bin/sh
# Installs a release build into a prefix (`make install PREFIX=DIR`):
#   bin/            rlaunch, oshrun, oshcc, oshc++ (a link to oshcc)
#   lib/            liboneside_shmem.so.<version>, its soname link, the
#                   unversioned link for -l, liboneside_shmem.a
#   lib/pkgconfig/  oneside-shmem.pc (paths relative to ${pcfiledir})
#   include/        shmem.h, pshmem.h, shmemx.h, mpp/shmem.h, mpp/shmemx.h
#   share/man/man1/ rlaunch.1, oshrun.1, oshcc.1 (rlaunch --print-man)
#   share/modulefiles/oneside/<version>.lua (Lmod)
#   share/doc/oneside/ README, ARCHITECTURE, licences, the guide
#   share/oneside/install-manifest.txt, which uninstall.sh reads
# Nothing installed holds the prefix's path: oshcc and the module file find
# it from where they are, so the prefix can be moved, copied or mounted
# elsewhere. Run from the repository root after `cargo build --release`.
set -eu
dest=${1:?usage: install.sh PREFIX}
root=$(pwd)
bin=$root/target/release
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
soname=$(readelf -d "$bin/liboneside_shmem.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ -n "$version" ] && [ -n "$soname" ] || { echo "install.sh: no version or soname (build first)" >&2; exit 1; }
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
manifest=share/oneside/install-manifest.txt
listed=$(mktemp)
trap 'rm -f "$listed"' EXIT

# put MODE SOURCE PATH: copies SOURCE to PREFIX/PATH and lists PATH.
put() {
  mkdir -p "$(dirname "$dest/$3")"
  install -m "$1" "$2" "$dest/$3"
  echo "$3" >> "$listed"
}
# link TARGET PATH: a symbolic link PREFIX/PATH -> TARGET, listed.
link() {
  mkdir -p "$(dirname "$dest/$2")"
  ln -sfn "$1" "$dest/$2"
  echo "$2" >> "$listed"
}
# text PATH: writes standard input to PREFIX/PATH, listed.
text() {
  mkdir -p "$(dirname "$dest/$1")"
  cat > "$dest/$1"
  echo "$1" >> "$listed"
}

for tool in rlaunch oshrun oshcc; do
  put 755 "$bin/$tool" "bin/$tool"
done
link oshcc bin/oshc++

put 755 "$bin/liboneside_shmem.so" "lib/liboneside_shmem.so.$version"
[ "$soname" = "liboneside_shmem.so.$version" ] || link "liboneside_shmem.so.$version" "lib/$soname"
link "$soname" lib/liboneside_shmem.so
put 644 "$bin/liboneside_shmem.a" lib/liboneside_shmem.a
for header in capi/include/*.h capi/include/mpp/*.h; do
  put 644 "$header" "include/${header#capi/include/}"
done

sed "s/@VERSION@/$version/g" dist/oneside-shmem.pc.in | text lib/pkgconfig/oneside-shmem.pc

for page in rlaunch oshrun oshcc; do
  "$bin/rlaunch" --print-man "$page" | text "share/man/man1/$page.1"
done

sed "s/@VERSION@/$version/g" dist/modulefile.lua | text "share/modulefiles/oneside/$version.lua"

for doc in README.md ARCHITECTURE.md LICENSE-MIT LICENSE-APACHE; do
  put 644 "$doc" "share/doc/oneside/$doc"
done
for page in docs/src/*.md; do
  put 644 "$page" "share/doc/oneside/guide/$(basename "$page")"
done
if command -v "${MDBOOK:-mdbook}" >/dev/null 2>&1; then
  "${MDBOOK:-mdbook}" build docs >/dev/null
  (cd docs/book && find . -type f) | while read -r file; do
    put 644 "docs/book/$file" "share/doc/oneside/html/${file#./}"
  done
fi

echo "$manifest" >> "$listed"
mkdir -p "$dest/share/oneside"
sort -u "$listed" > "$dest/$manifest"
echo "installed oneside $version in $dest ($(wc -l < "$dest/$manifest") files)"
echo "  module use $dest/share/modulefiles && module load oneside"
echo "  or: export PATH=$dest/bin:\$PATH"
