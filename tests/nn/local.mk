# tests/nn: model files, networks, optimizers (make check).

if HAVE_CMOCKA
check_PROGRAMS += tests/nn/test-model-config
TESTS += tests/nn/test-model-config
tests_nn_test_model_config_CFLAGS = $(TEST_CFLAGS)
tests_nn_test_model_config_LDADD = $(TEST_LIBS)
endif
