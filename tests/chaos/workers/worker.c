/* A contend worker in C for the cross-language fault tests (tests/chaos/tests/mixed.rs) and
 * the demo (ci/demo.sh), built against the INSTALLED libfencelock:
 *
 *   cc worker.c $(pkg-config --cflags --libs fencelock) -o worker-c
 *   worker-c --servers URL[,URL...] --names A[,B...] --rounds N --hold-ms N --holder ID
 *            [--ttl-ms N] [--wait-ms N] [--server-timeout-ms N] [--duration-ms N]
 *
 * Same protocol as worker.py: one `HOLD name=.. token=.. start_us=.. end_us=.. validity_us=..
 * holder=..` line per hold (start right after acquire returned, validity read after it, end
 * before release; wall-clock microseconds), `FAIL kind=K took_ms=N` per failed acquisition,
 * `RFAIL kind=K` per failed release, then `DONE acquired=N failed=M`. */
#define _POSIX_C_SOURCE 200809L
#include <fencelock.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_LIST 32

static uint64_t wall_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void sleep_ms(double ms) {
    struct timespec ts;
    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)((ms - (double)ts.tv_sec * 1000) * 1e6);
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static const char *kind(fl_status st) {
    switch (st) {
    case FL_NOT_ACQUIRED: return "not_acquired";
    case FL_UNAVAILABLE: return "unavailable";
    case FL_NOT_HELD: return "not_held";
    case FL_REDIS_ERROR: return "redis_error";
    case FL_INVALID_ARGUMENT: return "invalid_argument";
    case FL_CANCELLED: return "cancelled";
    default: return "error";
    }
}

static void usage(const char *why) {
    fprintf(stderr,
            "worker-c: %s\nusage: worker-c --servers URL[,URL] --names A[,B] --rounds N "
            "--hold-ms N --holder ID [--ttl-ms N] [--wait-ms N] [--server-timeout-ms N] "
            "[--duration-ms N]\n",
            why);
    exit(64);
}

/* Splits s (modified in place) at commas into out; returns the count. */
static size_t split(char *s, const char **out) {
    size_t n = 0;
    for (char *tok = strtok(s, ","); tok != NULL && n < MAX_LIST; tok = strtok(NULL, ","))
        out[n++] = tok;
    return n;
}

int main(int argc, char **argv) {
    const char *servers[MAX_LIST], *names[MAX_LIST];
    size_t nservers = 0, nnames = 0;
    const char *holder = NULL;
    long rounds = -1;
    double hold_ms = -1;
    uint64_t ttl_ms = 1000, server_timeout_ms = 100, duration_ms = 0;
    int64_t wait_ms = 10000;
    for (int i = 1; i < argc; i += 2) {
        const char *flag = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL) usage("missing value");
        if (!strcmp(flag, "--servers")) nservers = split(argv[i + 1], servers);
        else if (!strcmp(flag, "--names")) nnames = split(argv[i + 1], names);
        else if (!strcmp(flag, "--rounds")) rounds = strtol(v, NULL, 10);
        else if (!strcmp(flag, "--hold-ms")) hold_ms = strtod(v, NULL);
        else if (!strcmp(flag, "--holder")) holder = v;
        else if (!strcmp(flag, "--ttl-ms")) ttl_ms = strtoull(v, NULL, 10);
        else if (!strcmp(flag, "--wait-ms")) wait_ms = strtoll(v, NULL, 10);
        else if (!strcmp(flag, "--server-timeout-ms")) server_timeout_ms = strtoull(v, NULL, 10);
        else if (!strcmp(flag, "--duration-ms")) duration_ms = strtoull(v, NULL, 10);
        else usage(flag);
    }
    if (nservers == 0 || nnames == 0 || rounds < 0 || hold_ms < 0 || holder == NULL)
        usage("--servers, --names, --rounds, --hold-ms and --holder are required");

    fl_manager_options *opts = NULL;
    fl_manager *m = NULL;
    if (fl_manager_options_new(&opts) != FL_OK ||
        fl_manager_options_set_retry_delay_ms(opts, 50) != FL_OK ||
        fl_manager_options_set_server_timeout_ms(opts, server_timeout_ms) != FL_OK ||
        fl_manager_new(servers, nservers, opts, &m) != FL_OK) {
        fprintf(stderr, "worker-c: %s\n", fl_last_error_message());
        return 2;
    }
    fl_manager_options_free(opts);

    uint64_t deadline = duration_ms > 0 ? mono_ms() + duration_ms : UINT64_MAX;
    uint32_t first = 0;
    for (const char *p = holder; *p; p++) first = first * 31u + (unsigned char)*p;
    first %= (uint32_t)nnames;
    unsigned long acquired = 0, failed = 0;
    for (long r = 0; r < rounds && mono_ms() < deadline; r++) {
        const char *name = names[(first + (unsigned long)r) % nnames];
        uint64_t t0 = mono_ms();
        fl_lock *lock = NULL;
        fl_status st = fl_lock_acquire(m, name, ttl_ms, wait_ms, &lock);
        if (st != FL_OK) {
            failed++;
            printf("FAIL kind=%s took_ms=%" PRIu64 "\n", kind(st), mono_ms() - t0);
            fflush(stdout);
            sleep_ms(5); /* do not spin when servers refuse at once */
            continue;
        }
        uint64_t start_us = wall_us(), validity_ms = 0, fence = 0;
        fl_lock_validity_ms(lock, &validity_ms);
        fl_lock_fencing_token(lock, &fence);
        if (hold_ms > 0) sleep_ms(hold_ms);
        uint64_t end_us = wall_us();
        printf("HOLD name=%s token=%" PRIu64 " start_us=%" PRIu64 " end_us=%" PRIu64
               " validity_us=%" PRIu64 " holder=%s\n",
               name, fence, start_us, end_us, validity_ms * 1000u, holder);
        fflush(stdout);
        acquired++;
        st = fl_lock_release(lock);
        if (st != FL_OK) {
            printf("RFAIL kind=%s\n", kind(st));
            fflush(stdout);
        }
        fl_lock_free(lock);
    }
    printf("DONE acquired=%lu failed=%lu\n", acquired, failed);
    fflush(stdout);
    fl_manager_free(m);
    return 0;
}
