#!/bin/sh
# The pipeline stage executor on 2 ranks: P = 2 (tests/sched/test-pipe.c;
# TAP from rank 0 and the driver).
. "$(dirname "$0")/pipe.sh"
pipe_run 2 2
pipe_end
