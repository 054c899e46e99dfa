# tests/nn: model files, networks, optimizers (make check).

if HAVE_CMOCKA
check_PROGRAMS += tests/nn/test-model-config
TESTS += tests/nn/test-model-config
tests_nn_test_model_config_CPPFLAGS = $(AM_CPPFLAGS) -DERASE_SRCDIR='"$(abs_top_srcdir)"'
tests_nn_test_model_config_CFLAGS = $(TEST_CFLAGS)
tests_nn_test_model_config_LDADD = $(TEST_LIBS)
endif

if HAVE_CMOCKA
check_PROGRAMS += tests/nn/test-models
TESTS += tests/nn/test-models
tests_nn_test_models_SOURCES = tests/nn/test-models.c tests/nn/h5ref.c tests/nn/h5ref.h
tests_nn_test_models_CPPFLAGS = $(AM_CPPFLAGS) $(HDF5_CPPFLAGS) $(MPI_CPPFLAGS) \
	-DERASE_TEST_DATA='"$(abs_top_srcdir)/tests/data"'
tests_nn_test_models_CFLAGS = $(TEST_CFLAGS)
tests_nn_test_models_LDFLAGS = $(AM_LDFLAGS) $(HDF5_LDFLAGS) $(MPI_LDFLAGS)
tests_nn_test_models_LDADD = $(TEST_LIBS) $(HDF5_LIBS) $(MPI_LIBS)
endif
EXTRA_DIST += tests/data/reference/ctr_cuts_none.h5 tests/data/reference/ctr_cuts_all.h5 \
	tests/data/reference/ctr_cuts_2_4.h5 tests/data/reference/mlp_cuts_all.h5 \
	tests/data/reference/mlp_cuts_none.h5 tests/data/reference/gpt_cuts_none.h5 \
	tests/data/reference/gpt_cuts_1_2.h5 tests/data/reference/gpt_untied.h5 \
	tests/reference/make_reference.py \
	tests/data/reference/nanochat_gqa.h5 tests/data/reference/nanochat_cuts_1_2.h5 \
	tests/data/reference/nanochat_t1.h5 tests/reference/make_nanochat_reference.py \
	jobs/gpt-shakespeare.cfg jobs/gpt-nanochat.cfg \
	tests/reference/README.md

if HAVE_CMOCKA
check_PROGRAMS += tests/nn/test-optim
TESTS += tests/nn/test-optim
tests_nn_test_optim_CFLAGS = $(TEST_CFLAGS)
tests_nn_test_optim_LDADD = $(TEST_LIBS)
endif

if HAVE_CMOCKA
check_PROGRAMS += tests/nn/test-metrics
TESTS += tests/nn/test-metrics
tests_nn_test_metrics_CFLAGS = $(TEST_CFLAGS)
tests_nn_test_metrics_LDADD = $(TEST_LIBS)
check_PROGRAMS += tests/nn/test-metrics-cls
TESTS += tests/nn/test-metrics-cls
tests_nn_test_metrics_cls_CFLAGS = $(TEST_CFLAGS)
tests_nn_test_metrics_cls_LDADD = $(TEST_LIBS)
endif

# Muon (issue 34): three steps against PyTorch (make_muon_reference.py)
if HAVE_CMOCKA
check_PROGRAMS += tests/nn/test-muon
TESTS += tests/nn/test-muon
tests_nn_test_muon_SOURCES = tests/nn/test-muon.c tests/nn/h5ref.c tests/nn/h5ref.h
tests_nn_test_muon_CPPFLAGS = $(AM_CPPFLAGS) $(HDF5_CPPFLAGS) $(MPI_CPPFLAGS) \
	-DERASE_TEST_DATA='"$(abs_top_srcdir)/tests/data"'
tests_nn_test_muon_CFLAGS = $(TEST_CFLAGS)
tests_nn_test_muon_LDFLAGS = $(AM_LDFLAGS) $(HDF5_LDFLAGS) $(MPI_LDFLAGS)
tests_nn_test_muon_LDADD = $(TEST_LIBS) $(HDF5_LIBS) $(MPI_LIBS)
endif
EXTRA_DIST += tests/data/reference/muon.h5 tests/reference/make_muon_reference.py
# the dcn model's PyTorch references (issue 36)
EXTRA_DIST += tests/data/reference/dcn_cuts_none.h5 tests/data/reference/dcn_cuts_all.h5 \
	tests/data/reference/dcn_full_cuts_2_5.h5 tests/reference/make_dcn_reference.py

# next-token sampling: temperature, top-k, seeds (erase-sample)
if HAVE_CMOCKA
check_PROGRAMS += tests/nn/test-sampler
TESTS += tests/nn/test-sampler
tests_nn_test_sampler_CFLAGS = $(TEST_CFLAGS)
tests_nn_test_sampler_LDADD = $(TEST_LIBS)
endif

# sharded embeddings (issue 19): table-wise, row-wise and auto placement,
# owners of rows at the boundaries, the errors' text (lib/nn/sharding.c)
if HAVE_CMOCKA
check_PROGRAMS += tests/nn/test-sharding
TESTS += tests/nn/test-sharding
tests_nn_test_sharding_CFLAGS = $(TEST_CFLAGS)
tests_nn_test_sharding_LDADD = $(TEST_LIBS)
endif
