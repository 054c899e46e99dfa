/*
 * lib/core/status: the error trail (the message with its "file:line: " and
 * breadcrumbs, and the reason a user reads), messages per thread, and
 * status names.
 */
#include "lib/core/status.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

static void test_trail_and_reason(void **state)
{
    (void)state;
    erase_error_clear();
    assert_string_equal(erase_error_message(), "");
    assert_string_equal(erase_error_reason(), "");
    assert_int_equal(erase_error_set(ERASE_ERR_FORMAT, "../lib/a.c", 10, "bad value %d", 7), ERASE_ERR_FORMAT);
    assert_string_equal(erase_error_message(), "lib/a.c:10: bad value 7");
    erase_error_trail("./io/b.c", 20);
    erase_error_trail("apps/c.c", 30);
    assert_string_equal(erase_error_message(), "apps/c.c:30 -> io/b.c:20 -> lib/a.c:10: bad value 7");
    assert_string_equal(erase_error_reason(), "bad value 7");
    /* a new failure replaces the old one, trail and all */
    erase_error_set(ERASE_ERR_IO, "d.c", 1, "cannot read %s", "x.h5");
    assert_string_equal(erase_error_message(), "d.c:1: cannot read x.h5");
    assert_string_equal(erase_error_reason(), "cannot read x.h5");
    erase_error_clear();
    assert_string_equal(erase_error_message(), "");
    assert_string_equal(erase_error_reason(), "");
}

/* What erase-train does with a library's failure: its own words in front of
 * the library's reason. The reason of the result is the whole new text. */
static void test_rewritten_reason(void **state)
{
    (void)state;
    erase_error_set(ERASE_ERR_UNSUPPORTED, "lib/device/device.c", 66, "no CUDA backend");
    erase_error_trail("apps/run.c", 5);
    char why[256];
    snprintf(why, sizeof why, "%s", erase_error_reason());
    erase_error_set(ERASE_ERR_UNSUPPORTED, "apps/run.c", 9, "--device cuda: %s", why);
    assert_string_equal(erase_error_message(), "apps/run.c:9: --device cuda: no CUDA backend");
    assert_string_equal(erase_error_reason(), "--device cuda: no CUDA backend");
}

/* A trail that would not fit is dropped: the root cause is what matters. */
static void test_long_trail_keeps_the_reason(void **state)
{
    (void)state;
    static char big[16300];
    memset(big, 'r', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    erase_error_set(ERASE_ERR_INVALID, "a.c", 1, "%s", big);
    for (int i = 0; i < 100; i++)
        erase_error_trail("lib/some/longer/path/of/a/file.c", 1000 + i);
    const char *m = erase_error_message();
    assert_int_equal(strlen(m) + 1 <= 16384, 1);
    assert_string_equal(m + strlen(m) - strlen(big), big);
    assert_string_equal(erase_error_reason(), big);
    erase_error_clear();
    /* a path of PATH_MAX bytes and more: the message keeps its reason */
    static char path[5000];
    memset(path, 'd', sizeof path - 1);
    path[sizeof path - 1] = '\0';
    erase_error_set(ERASE_ERR_IO, "a.c", 2, "%s/x.tmp: cannot rename to %s: File name too long", path, path);
    const char *r = erase_error_reason();
    assert_string_equal(r + strlen(r) - strlen(": File name too long"), ": File name too long");
    erase_error_clear();
}

static void *other_thread(void *arg)
{
    erase_error_set(ERASE_ERR_COMM, "t.c", 2, "the other thread's failure");
    snprintf(arg, 128, "%s|%s", erase_error_message(), erase_error_reason());
    return NULL;
}

static void test_per_thread(void **state)
{
    (void)state;
    erase_error_set(ERASE_ERR_IO, "m.c", 3, "the main thread's failure");
    char seen[128];
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, other_thread, seen), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_string_equal(seen, "t.c:2: the other thread's failure|the other thread's failure");
    assert_string_equal(erase_error_message(), "m.c:3: the main thread's failure");
    assert_string_equal(erase_error_reason(), "the main thread's failure");
    erase_error_clear();
}

static void test_status_names(void **state)
{
    (void)state;
    assert_string_equal(erase_status_name(ERASE_OK), "success");
    assert_string_equal(erase_status_name(ERASE_ERR_FORMAT), "bad format");
    assert_string_equal(erase_status_name(ERASE_ERR_UNSUPPORTED), "unsupported");
    assert_string_equal(erase_status_name((erase_status_t)99), "unknown status");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trail_and_reason),
        cmocka_unit_test(test_rewritten_reason),
        cmocka_unit_test(test_long_trail_keeps_the_reason),
        cmocka_unit_test(test_per_thread),
        cmocka_unit_test(test_status_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
