# tests/sched: step plans and the scheduler (make check).
if HAVE_CMOCKA
check_PROGRAMS += tests/sched/test-equivalence
TESTS += tests/sched/test-equivalence
tests_sched_test_equivalence_SOURCES = tests/sched/test-equivalence.c \
	tests/sched/equivalence.c tests/sched/equivalence.h
tests_sched_test_equivalence_CFLAGS = $(TEST_CFLAGS)
tests_sched_test_equivalence_LDADD = $(TEST_LIBS)
endif

if HAVE_CMOCKA
check_PROGRAMS += tests/sched/test-equivalence-mpi
tests_sched_test_equivalence_mpi_SOURCES = tests/sched/test-equivalence-mpi.c \
	tests/sched/equivalence.c tests/sched/equivalence.h
tests_sched_test_equivalence_mpi_CFLAGS = $(TEST_CFLAGS)
tests_sched_test_equivalence_mpi_LDADD = $(TEST_LIBS)
endif
TESTS += tests/sched/test-equivalence-np2.sh tests/sched/test-equivalence-np4.sh
EXTRA_DIST += tests/sched/test-equivalence-np2.sh tests/sched/test-equivalence-np4.sh

# Table-wise sharded embeddings (lib/sched/embed_shard.c) on 1, 2 and 4
# ranks: parameters bitwise those of replicated tables under every mode,
# boundary ids, a rank with an empty batch, the errors' text
if HAVE_CMOCKA
check_PROGRAMS += tests/sched/test-shard-mpi
tests_sched_test_shard_mpi_SOURCES = tests/sched/test-shard-mpi.c \
	tests/sched/equivalence.c tests/sched/equivalence.h
tests_sched_test_shard_mpi_CFLAGS = $(TEST_CFLAGS)
tests_sched_test_shard_mpi_LDADD = $(TEST_LIBS)
endif
TESTS += tests/sched/test-shard-np1.sh tests/sched/test-shard-np2.sh tests/sched/test-shard-np4.sh
EXTRA_DIST += tests/sched/test-shard-np1.sh tests/sched/test-shard-np2.sh tests/sched/test-shard-np4.sh
# erase-train --embeddings table: as replicated on 2 and 4 ranks, empty eval shares, the refusals
TESTS += tests/sched/test-train-shard.sh
EXTRA_DIST += tests/sched/test-train-shard.sh
# multi-hot ctr (MLPerf's hotness) row- and table-wise as replicated on 2 ranks (issue 35)
TESTS += tests/sched/test-train-multihot.sh
EXTRA_DIST += tests/sched/test-train-multihot.sh
# the same on a GPU (CUDA ops, NCCL all-to-alls; SKIP without one)
TESTS += tests/sched/test-cuda-shard.sh
GPU_TESTS += tests/sched/test-cuda-shard.sh
EXTRA_DIST += tests/sched/test-cuda-shard.sh

# On a GPU (SKIP without one): the schedules' equivalence on CUDA, and CUDA
# against the CPU backend.
if HAVE_CMOCKA
if HAVE_CUDA
check_PROGRAMS += tests/sched/test-cuda-equivalence
TESTS += tests/sched/test-cuda-equivalence
GPU_TESTS += tests/sched/test-cuda-equivalence
tests_sched_test_cuda_equivalence_SOURCES = tests/sched/test-cuda-equivalence.c \
	tests/sched/equivalence.c tests/sched/equivalence.h tests/gpu_tap.h
tests_sched_test_cuda_equivalence_CFLAGS = $(TEST_CFLAGS)
tests_sched_test_cuda_equivalence_LDADD = $(TEST_LIBS)
endif
endif

# Pipeline schedules (issue 16): every stage's action list of gpipe, 1f1b
# and paci, and their replay (lib/sched/pipe_schedule.c)
if HAVE_CMOCKA
check_PROGRAMS += tests/sched/test-pipe-schedule
TESTS += tests/sched/test-pipe-schedule
tests_sched_test_pipe_schedule_SOURCES = tests/sched/test-pipe-schedule.c
tests_sched_test_pipe_schedule_CFLAGS = $(TEST_CFLAGS)
tests_sched_test_pipe_schedule_LDADD = $(TEST_LIBS)
endif

# Trace writing (lib/sched/trace.c): the window's origin, pairing, overlap
if HAVE_CMOCKA
check_PROGRAMS += tests/sched/test-trace
TESTS += tests/sched/test-trace
tests_sched_test_trace_SOURCES = tests/sched/test-trace.c
tests_sched_test_trace_CFLAGS = $(TEST_CFLAGS)
tests_sched_test_trace_LDADD = $(TEST_LIBS)
endif

# The cost model of data-parallel steps (lib/sched/scale.c, issue 18)
if HAVE_CMOCKA
check_PROGRAMS += tests/sched/test-scale
TESTS += tests/sched/test-scale
tests_sched_test_scale_SOURCES = tests/sched/test-scale.c
tests_sched_test_scale_CFLAGS = $(TEST_CFLAGS)
tests_sched_test_scale_LDADD = $(TEST_LIBS)
endif

# The stage executor under mpirun (issue 16): gradient equality with one
# process, micro-batch splits, no deadlock, paci's drift; local (issue 17)
# against the same cut model on one process, its lag and its messages
# (lib/sched/pipe*.c); a killed stage ends an erase-train --pp 2 job within
# the watchdog
if HAVE_CMOCKA
check_PROGRAMS += tests/sched/test-pipe
tests_sched_test_pipe_SOURCES = tests/sched/test-pipe.c tests/comm/mpi_tap.h \
	tests/sched/equivalence.c tests/sched/equivalence.h
tests_sched_test_pipe_CFLAGS = $(TEST_CFLAGS)
tests_sched_test_pipe_LDADD = $(TEST_LIBS)
endif
PIPE_TEST_DRIVERS = tests/sched/test-pipe-np1.sh tests/sched/test-pipe-np2.sh tests/sched/test-pipe-np4.sh \
	tests/sched/test-pipe-kill.sh
TESTS += $(PIPE_TEST_DRIVERS)
EXTRA_DIST += $(PIPE_TEST_DRIVERS) tests/sched/pipe.sh
