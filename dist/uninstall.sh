#!/bin/sh
# Removes what install.sh put in a prefix (`make uninstall PREFIX=DIR`):
# the files its manifest lists, then the directories that leaves empty.
# Anything else in the prefix stays. Works after the prefix was moved: the
# manifest's paths are relative to it.
set -eu
dest=${1:?usage: uninstall.sh PREFIX}
manifest=$dest/share/oneside/install-manifest.txt
[ -f "$manifest" ] || { echo "uninstall.sh: $manifest not found: nothing was installed in $dest by make install" >&2; exit 1; }
dirs=$(mktemp)
trap 'rm -f "$dirs"' EXIT
while read -r file; do
  case $file in
    /* | *..*) echo "uninstall.sh: skipping $file, which is not inside the prefix" >&2; continue ;;
  esac
  rm -f "$dest/$file"
  dir=$(dirname "$file")
  while [ "$dir" != . ]; do
    echo "$dir" >> "$dirs"
    dir=$(dirname "$dir")
  done
done < "$manifest"
# Deepest first, and only those left empty.
sort -ru "$dirs" | while read -r dir; do
  rmdir "$dest/$dir" 2>/dev/null || true
done
echo "removed oneside from $dest"
