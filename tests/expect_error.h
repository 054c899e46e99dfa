/*
 * For tests (include after <cmocka.h>): assert that a call failed with a
 * given status and that erase_error_message() holds the expected text.
 */
#ifndef ERASE_TESTS_EXPECT_ERROR_H
#define ERASE_TESTS_EXPECT_ERROR_H

#include <string.h>

#include "lib/core/status.h"
#include "lib/device/device.h"

/* st must be `want`, and the error message must contain `expected`. */
static inline void erase_test_expect_error(erase_status_t st, erase_status_t want, const char *expected)
{
    print_message("%s -> %s\n", expected, erase_status_name(st));
    assert_int_equal(st, want);
    if (!strstr(erase_error_message(), expected))
        fail_msg("message \"%s\" lacks \"%s\"", erase_error_message(), expected);
}

/* A stream whose queued op fails when it runs: the synchronize returns
 * ERASE_ERR_INVALID with `expected` in the message; the stream is
 * destroyed. */
static inline void erase_test_expect_run_failure(erase_stream_t *s, const char *expected)
{
    erase_test_expect_error(erase_stream_synchronize(s), ERASE_ERR_INVALID, expected);
    erase_stream_destroy(s);
}

#endif
