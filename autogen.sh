#!/bin/sh
# Regenerate the GNU build system (configure, Makefile.in) from a fresh clone.
set -e
cd "$(dirname "$0")"
autoreconf --install --force --warnings=all
