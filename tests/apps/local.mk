# tests/apps: command-line behaviour of erase-train and erase-bench that no
# other folder's drivers cover (make check): --device, errors for bad settings,
# erase-convert, erase-inspect and erase-bench on bad input, the metrics file.
APPS_TEST_DRIVERS = tests/apps/test-device.sh tests/apps/test-train-errors.sh tests/apps/test-tool-errors.sh \
	tests/apps/test-metrics.sh tests/apps/test-bench-subnormal.sh tests/apps/test-bench-output.sh
# erase-inspect data's distinct ids against the Criteo sample's TSV (issue 14)
APPS_TEST_DRIVERS += tests/apps/test-inspect-distinct.sh
# erase-bench schedules --feasibility --data: the ERASE MLP table on MNIST shards (issue 14)
APPS_TEST_DRIVERS += tests/apps/test-bench-feasibility.sh
# jobs/trace-svg: boxes labelled with their block and pass, a legend (issue 15)
APPS_TEST_DRIVERS += tests/apps/test-trace-svg.sh
TESTS += $(APPS_TEST_DRIVERS)
EXTRA_DIST += $(APPS_TEST_DRIVERS)

# erase-bench's spread of samples and busy-machine warning (bench_common.c)
if HAVE_CMOCKA
check_PROGRAMS += tests/apps/test-bench-spread
TESTS += tests/apps/test-bench-spread
tests_apps_test_bench_spread_SOURCES = tests/apps/test-bench-spread.c apps/bench/bench_common.c
tests_apps_test_bench_spread_CFLAGS = $(TEST_CFLAGS)
tests_apps_test_bench_spread_LDADD = $(TEST_LIBS)
endif
