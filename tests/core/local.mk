# tests/core: lib/core (make check).

if HAVE_CMOCKA
check_PROGRAMS += tests/core/test-status
TESTS += tests/core/test-status
tests_core_test_status_CFLAGS = $(TEST_CFLAGS)
tests_core_test_status_LDADD = $(TEST_LIBS)
check_PROGRAMS += tests/core/test-checked
TESTS += tests/core/test-checked
tests_core_test_checked_CFLAGS = $(TEST_CFLAGS)
tests_core_test_checked_LDADD = $(TEST_LIBS)
endif
