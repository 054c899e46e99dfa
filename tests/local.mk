# tests/: make check. Each test program prints TAP (cmocka) and is run by
# automake's TAP driver; a test that cannot run here reports SKIP with why.
LOG_DRIVER = env AM_TAP_AWK='$(AWK)' $(SHELL) $(top_srcdir)/build-aux/tap-driver.sh
AM_TESTS_ENVIRONMENT = CMOCKA_MESSAGE_OUTPUT=TAP; export CMOCKA_MESSAGE_OUTPUT; \
	TSAN_OPTIONS='halt_on_error=1 second_deadlock_stack=1'; export TSAN_OPTIONS; \
	UBSAN_OPTIONS='print_stacktrace=1 halt_on_error=1'; export UBSAN_OPTIONS;

# Tests that need a GPU (they SKIP without one): each folder adds its own to
# GPU_TESTS as well as to TESTS; tests/gpu/device-check.sh runs them first.
GPU_TESTS =
print-gpu-tests:
	@echo $(GPU_TESTS)
.PHONY: print-gpu-tests

if HAVE_CMOCKA
DEVICE_TESTS = tests/device/test-stream tests/device/test-graph tests/device/test-gemm \
	tests/device/test-fpmode tests/device/test-hugepages tests/device/test-team
check_PROGRAMS += $(DEVICE_TESTS)
TESTS += $(DEVICE_TESTS)
TEST_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
TEST_LIBS = $(ERASE_LIBS) $(CMOCKA_LIBS)
EXTRA_DIST += tests/cpu_device.h tests/expect_error.h

tests_device_test_stream_SOURCES = tests/device/test-stream.c tests/device/kernels.c tests/device/kernels.h
tests_device_test_stream_CFLAGS = $(TEST_CFLAGS)
tests_device_test_stream_LDADD = $(TEST_LIBS)
tests_device_test_graph_SOURCES = tests/device/test-graph.c tests/device/kernels.c tests/device/kernels.h
tests_device_test_graph_CFLAGS = $(TEST_CFLAGS)
tests_device_test_graph_LDADD = $(TEST_LIBS)
tests_device_test_gemm_SOURCES = tests/device/test-gemm.c tests/device/gemm_case.h
tests_device_test_gemm_CFLAGS = $(TEST_CFLAGS)
tests_device_test_gemm_LDADD = $(TEST_LIBS)
tests_device_test_fpmode_SOURCES = tests/device/test-fpmode.c
tests_device_test_fpmode_CFLAGS = $(TEST_CFLAGS)
tests_device_test_fpmode_LDADD = $(TEST_LIBS)
tests_device_test_hugepages_SOURCES = tests/device/test-hugepages.c
tests_device_test_hugepages_CFLAGS = $(TEST_CFLAGS)
tests_device_test_hugepages_LDADD = $(TEST_LIBS)
tests_device_test_team_SOURCES = tests/device/test-team.c
tests_device_test_team_CFLAGS = $(TEST_CFLAGS)
tests_device_test_team_LDADD = $(TEST_LIBS)

# The CUDA backend: every case but the no-GPU check reports SKIP without a GPU.
if HAVE_CUDA
check_PROGRAMS += tests/device/test-cuda
TESTS += tests/device/test-cuda
GPU_TESTS += tests/device/test-cuda
tests_device_test_cuda_SOURCES = tests/device/test-cuda.c tests/device/gemm_case.h tests/gpu_tap.h
tests_device_test_cuda_CFLAGS = $(TEST_CFLAGS)
tests_device_test_cuda_LDADD = $(TEST_LIBS)
endif
endif

include tests/core/local.mk
include tests/ops/local.mk
include tests/nn/local.mk
include tests/sched/local.mk
include tests/comm/local.mk
include tests/io/local.mk
include tests/ckpt/local.mk
include tests/slurm/local.mk
include tests/cluster/local.mk
include tests/apps/local.mk
include tests/docs/local.mk
