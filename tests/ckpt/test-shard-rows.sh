#!/bin/sh
# Sharded tensors written by their owners into one checkpoint and read
# back for other placements, at the io level (tests/ckpt/shard-rows.c) on
# 3 ranks (TAP from rank 0; the timeout bounds a hang).
. "$(dirname "$0")/../comm/mpi.sh"
need tests/ckpt/shard-rows
dir=$(mktemp -d "$PWD/tmp-shard-rows-XXXXXX") || exit 99
trap 'rm -rf "$dir"' EXIT
timeout -k 5 300 "$MPIRUN" $MPI_FLAGS -np 3 tests/ckpt/shard-rows "$dir"
