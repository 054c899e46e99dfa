#!/usr/bin/env bash
# Prepare what tests/gpu/device-check.sh needs on a GPU machine without
# network, in the ignored folder _gpu/ at the top of the tree:
#   _gpu/debs/*.deb          the Debian packages of tests/gpu/debian-packages
#   _gpu/erase-VERSION.tar.gz  a `make dist` tarball (configure generated
#                             here: the GPU machine may have no autotools)
# Run it here (a Debian 12 machine with apt and a configured _build), then
# run tests/gpu/device-check.sh there with _gpu carried along.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
dest=$top/_gpu
mkdir -p "$dest/debs"
packages=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$top/tests/gpu/debian-packages")
echo "prepare: downloading $(echo "$packages" | wc -l) Debian packages into $dest/debs"
rm -f "$dest"/debs/*.deb
# apt's sandbox user cannot write to a root-owned folder: download as root.
(cd "$dest/debs" && apt-get -q -o APT::Sandbox::User=root download $packages)
build=${ERASE_BUILD:-$top/_build}
[ -f "$build/Makefile" ] || { echo "prepare: $build is not a configured build (run jobs/setup)" >&2; exit 1; }
echo "prepare: make dist in $build"
rm -f "$dest"/erase-*.tar.gz
make -s -C "$build" dist >/dev/null
mv "$build"/erase-*.tar.gz "$dest/"
du -sh "$dest/debs" "$dest"/erase-*.tar.gz
