#!/bin/sh
# The reader on classification rows under mpirun (2 ranks): converts 900
# images of the shipped MNIST split with erase-convert mnist (shards of
# 300 rows), then runs tests/io/test-reader-mpi, whose rank 0 compares the
# gathered rank parts with a 1-rank reader (tests/io/reader-mpi.sh).
. "${srcdir:-.}/tests/io/reader-mpi.sh"
reader_mpi_convert apps/erase-convert mnist -q -o "$dir/data" --split 900,100 --shard-rows 300 --chunk-rows 50 \
    "$srcdir/data/mnist/t10k-images-idx3-ubyte.gz" "$srcdir/data/mnist/t10k-labels-idx1-ubyte.gz"
reader_mpi_run 2 classify "$dir/data/train" 900 100 50
exit 0
