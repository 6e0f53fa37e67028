/*
 * The C tests' framework (tests/fencelock_test.c, tests/pending_test.c): CHECK macros that
 * count failed checks per test, run_test, and the "N passed, N failed" summary that
 * tests/run.sh reads. Header-only: each test program includes it once.
 */
#ifndef FENCELOCK_TEST_CHECK_H
#define FENCELOCK_TEST_CHECK_H

#include <fencelock.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int tests_passed, tests_failed;
static int checks_failed_in_test;
static const char *current_test;

static void report_failure(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    checks_failed_in_test++;
    fprintf(stderr, "%s:%d: [%s] ", file, line, current_test);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) report_failure(__FILE__, __LINE__, "CHECK failed: %s", #cond);   \
    } while (0)

/* Checks a call's status; on a mismatch shows both statuses and the last error message. */
#define CHECK_ST(call, want)                                                          \
    do {                                                                              \
        fl_status st_ = (call);                                                       \
        fl_status want_ = (want);                                                     \
        if (st_ != want_)                                                             \
            report_failure(__FILE__, __LINE__, "%s returned %u (%s), want %u (%s); last error: %s", \
                           #call, (unsigned)st_, fl_status_str(st_), (unsigned)want_,  \
                           fl_status_str(want_), fl_last_error_message());             \
    } while (0)

/* A bad-input check: the status is FL_INVALID_ARGUMENT and the message mentions `needle`. */
#define CHECK_INVALID(call, needle)                                                   \
    do {                                                                              \
        fl_status st_ = (call);                                                       \
        if (st_ != FL_INVALID_ARGUMENT)                                               \
            report_failure(__FILE__, __LINE__, "%s returned %u (%s), want FL_INVALID_ARGUMENT", \
                           #call, (unsigned)st_, fl_status_str(st_));                  \
        else if (!strstr(fl_last_error_message(), (needle)))                          \
            report_failure(__FILE__, __LINE__, "%s: message \"%s\" lacks \"%s\"", #call, \
                           fl_last_error_message(), (needle));                         \
    } while (0)

static void run_test(const char *name, void (*fn)(void)) {
    current_test = name;
    checks_failed_in_test = 0;
    fprintf(stderr, "test %s ...\n", name);
    fn();
    if (checks_failed_in_test == 0) {
        tests_passed++;
        fprintf(stderr, "test %s ... ok\n", name);
    } else {
        tests_failed++;
        fprintf(stderr, "test %s ... FAILED (%d checks)\n", name, checks_failed_in_test);
    }
}

/* The summary line tests/run.sh reads; the exit status. */
static int summary(void) {
    printf("%d passed, %d failed\n", tests_passed, tests_failed);
    return tests_failed == 0 ? 0 : 1;
}

#endif
