#!/bin/sh
# The reader on token windows under mpirun (2 ranks): converts the first
# 20,000 bytes of data/text/tinyshakespeare.txt with erase-convert text
# (DIR/train: 18,000 tokens in shards of 5,000), then runs
# tests/io/test-reader-mpi with windows of 17 tokens (T = 16): 312 + 312 +
# 312 + 187 = 1,123 windows in 57 blocks of 20, shuffled in pools of 4
# blocks (issue 33: batches of 64 that straddle pools of 80 windows); rank 0
# compares the gathered rank parts with a 1-rank reader (tests/io/reader-mpi.sh).
. "${srcdir:-.}/tests/io/reader-mpi.sh"
head -c 20000 "$srcdir/data/text/tinyshakespeare.txt" >"$dir/text.txt"
reader_mpi_convert apps/erase-convert text -o "$dir/data" --shard-tokens 5000 --chunk-tokens 1000 "$dir/text.txt"
POOL_BLOCKS=4
export POOL_BLOCKS
reader_mpi_run 2 lm "$dir/data/train" 1123 64 20 16
exit 0
