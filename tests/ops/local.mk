# tests/ops: op gradients and reference checks (make check).
if HAVE_CMOCKA
OPS_TESTS = tests/ops/test-op-gradients tests/ops/test-op-stream tests/ops/test-op-numerics \
	tests/ops/test-op-shard
check_PROGRAMS += $(OPS_TESTS)
TESTS += $(OPS_TESTS)

tests_ops_test_op_gradients_SOURCES = tests/ops/test-op-gradients.c
tests_ops_test_op_gradients_CFLAGS = $(TEST_CFLAGS)
tests_ops_test_op_gradients_LDADD = $(TEST_LIBS)
tests_ops_test_op_stream_SOURCES = tests/ops/test-op-stream.c
tests_ops_test_op_stream_CFLAGS = $(TEST_CFLAGS)
tests_ops_test_op_stream_LDADD = $(TEST_LIBS)
tests_ops_test_op_numerics_SOURCES = tests/ops/test-op-numerics.c
tests_ops_test_op_numerics_CFLAGS = $(TEST_CFLAGS)
tests_ops_test_op_numerics_LDADD = $(TEST_LIBS)
tests_ops_test_op_shard_SOURCES = tests/ops/test-op-shard.c
tests_ops_test_op_shard_CFLAGS = $(TEST_CFLAGS)
tests_ops_test_op_shard_LDADD = $(TEST_LIBS)
endif

# Multi-hot embedding bags against torch.nn.EmbeddingBag, the documented
# order and finite differences (issue 35)
if HAVE_CMOCKA
check_PROGRAMS += tests/ops/test-op-bag
TESTS += tests/ops/test-op-bag
tests_ops_test_op_bag_SOURCES = tests/ops/test-op-bag.c tests/nn/h5ref.c tests/nn/h5ref.h
tests_ops_test_op_bag_CPPFLAGS = $(AM_CPPFLAGS) $(HDF5_CPPFLAGS) $(MPI_CPPFLAGS) \
	-DERASE_TEST_DATA='"$(abs_top_srcdir)/tests/data"'
tests_ops_test_op_bag_CFLAGS = $(TEST_CFLAGS)
tests_ops_test_op_bag_LDFLAGS = $(AM_LDFLAGS) $(HDF5_LDFLAGS) $(MPI_LDFLAGS)
tests_ops_test_op_bag_LDADD = $(TEST_LIBS) $(HDF5_LIBS) $(MPI_LIBS)
endif
EXTRA_DIST += tests/data/reference/embedding_bag.h5 tests/reference/make_embedding_bag_reference.py

# The nanochat model's ops against their formulas and finite differences (issue 34).
if HAVE_CMOCKA
check_PROGRAMS += tests/ops/test-op-nanochat
TESTS += tests/ops/test-op-nanochat
tests_ops_test_op_nanochat_SOURCES = tests/ops/test-op-nanochat.c
tests_ops_test_op_nanochat_CFLAGS = $(TEST_CFLAGS)
tests_ops_test_op_nanochat_LDADD = $(TEST_LIBS)
endif

# The dcn model's cross-layer op against its formula (issue 36).
if HAVE_CMOCKA
check_PROGRAMS += tests/ops/test-op-cross
TESTS += tests/ops/test-op-cross
tests_ops_test_op_cross_SOURCES = tests/ops/test-op-cross.c
tests_ops_test_op_cross_CFLAGS = $(TEST_CFLAGS)
tests_ops_test_op_cross_LDADD = $(TEST_LIBS)
endif

# CUDA ops against the CPU oracle (skips without a GPU).
if HAVE_CMOCKA
if HAVE_CUDA
check_PROGRAMS += tests/ops/test-cuda-parity
TESTS += tests/ops/test-cuda-parity
GPU_TESTS += tests/ops/test-cuda-parity
tests_ops_test_cuda_parity_SOURCES = tests/ops/test-cuda-parity.c tests/gpu_tap.h
tests_ops_test_cuda_parity_CFLAGS = $(TEST_CFLAGS)
tests_ops_test_cuda_parity_LDADD = $(TEST_LIBS)
endif
endif
