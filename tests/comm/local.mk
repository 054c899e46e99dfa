# tests/comm: communicators under real mpirun (make check). Each test is a
# shell driver (executable, run by the TAP driver) that starts mpirun on a
# test program; rank 0 or the driver prints TAP. MPIRUN comes from configure.
AM_TESTS_ENVIRONMENT += MPIRUN='$(MPIRUN)'; export MPIRUN;

COMM_TEST_DRIVERS = tests/comm/test-collectives-np2.sh tests/comm/test-collectives-np3.sh \
	tests/comm/test-collectives-np4.sh tests/comm/test-collectives-np4-ring.sh \
	tests/comm/test-kill.sh tests/comm/test-watchdog.sh tests/comm/test-fatal.sh \
	tests/comm/test-mismatch.sh tests/comm/test-id-exchange-np2.sh \
	tests/comm/test-id-exchange-np4.sh tests/comm/test-nccl-np1.sh tests/comm/test-nccl-np2.sh \
	tests/comm/test-p2p-np2.sh tests/comm/test-counted-np2.sh tests/comm/test-counted-np4.sh
TESTS += $(COMM_TEST_DRIVERS)
GPU_TESTS += tests/comm/test-nccl-np1.sh tests/comm/test-nccl-np2.sh
EXTRA_DIST += $(COMM_TEST_DRIVERS) tests/comm/mpi.sh tests/comm/tsan.supp tests/comm/lsan.supp

# the file-system exchange of NCCL ids (no NCCL, no GPU: every build)
check_PROGRAMS += tests/comm/test-id-exchange
tests_comm_test_id_exchange_SOURCES = tests/comm/test-id-exchange.c tests/comm/mpi_tap.h
tests_comm_test_id_exchange_LDADD = $(ERASE_LIBS)

# NCCL collectives on CUDA streams (needs a GPU: prints SKIP without one;
# in builds without NCCL it checks that attaching is a no-op for a CPU
# device and UNSUPPORTED for a CUDA one)
check_PROGRAMS += tests/comm/test-nccl
tests_comm_test_nccl_SOURCES = tests/comm/test-nccl.c tests/comm/mpi_tap.h
tests_comm_test_nccl_LDADD = $(ERASE_LIBS)

# sends and receives: a large exchange on two streams, waits that do not spin
check_PROGRAMS += tests/comm/test-p2p
tests_comm_test_p2p_SOURCES = tests/comm/test-p2p.c tests/comm/mpi_tap.h
tests_comm_test_p2p_LDADD = $(ERASE_LIBS)

# the counted all-to-all and the traffic counters (erase_comm_stats)
check_PROGRAMS += tests/comm/test-counted
tests_comm_test_counted_SOURCES = tests/comm/test-counted.c tests/comm/mpi_tap.h
tests_comm_test_counted_LDADD = $(ERASE_LIBS)

# failure modes of a job (no cmocka: the drivers judge)
check_PROGRAMS += tests/comm/test-failures
tests_comm_test_failures_SOURCES = tests/comm/test-failures.c
tests_comm_test_failures_LDADD = $(ERASE_LIBS)

if HAVE_CMOCKA
check_PROGRAMS += tests/comm/test-collectives
tests_comm_test_collectives_SOURCES = tests/comm/test-collectives.c \
	tests/device/kernels.c tests/device/kernels.h
tests_comm_test_collectives_CFLAGS = $(TEST_CFLAGS)
tests_comm_test_collectives_LDADD = $(TEST_LIBS)
endif
