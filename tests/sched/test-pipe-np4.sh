#!/bin/sh
# The pipeline stage executor on 4 ranks: P = 4, then P = 2 x dp 2 (tests/sched/test-pipe.c;
# TAP from rank 0 and the driver).
. "$(dirname "$0")/pipe.sh"
pipe_run 4 4
pipe_run 4 2
pipe_end
