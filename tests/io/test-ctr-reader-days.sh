#!/bin/sh
# The reader over days in several directories (issue 35), under mpirun on 2
# ranks: three days written by erase-convert synth (shards of 1000 rows,
# chunks of 500), read as one dataset in the order given; rank 0 of
# tests/io/test-reader-mpi compares the gathered rank parts, bitwise, with
# a 1-rank reader over the same days: every row of every day in each of 2
# shuffled epochs (tests/io/reader-mpi.sh).
. "${srcdir:-.}/tests/io/reader-mpi.sh"
for d in 0 1 2; do
    reader_mpi_convert apps/erase-convert synth -q -o "$dir/day_$d" --rows $((2000 + 700 * d)) --seed $((d + 1)) \
        --shard-rows 1000 --chunk-rows 500
done
reader_mpi_run 2 ctr "$dir/day_0,$dir/day_1,$dir/day_2" 8100 512 500
exit 0
