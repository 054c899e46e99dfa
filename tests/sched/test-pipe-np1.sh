#!/bin/sh
# The pipeline stage executor on one rank: P = 1 (tests/sched/test-pipe.c;
# TAP from rank 0 and the driver).
. "$(dirname "$0")/pipe.sh"
pipe_run 1 1
pipe_end
