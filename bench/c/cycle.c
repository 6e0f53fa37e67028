/*
 * The Java benchmark's reference (bench/java.py): uncontended acquire + release cycles on one
 * name through libfencelock's C interface, the same calls the Java binding makes through JNA,
 * with nothing in between: fl_lock_acquire (waiting as long as it takes), fl_lock_release,
 * fl_lock_free.
 *
 * Usage: cycle URL SECONDS NAME
 * Prints one JSON object: {"impl": "c", "cycles": N, "seconds": S, "errors": E}.
 * Runs 2,000 cycles first (not counted) so that connections are open. Exit code 2 for bad
 * arguments, 1 when a cycle fails (its status and message on stderr).
 */
#define _POSIX_C_SOURCE 200809L
#include <fencelock.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define WARMUP_CYCLES 2000
#define TTL_MS 10000

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cycle(const fl_manager *manager, const char *name) {
    fl_lock *lock = NULL;
    fl_status st = fl_lock_acquire(manager, name, TTL_MS, -1, &lock);
    if (st != FL_OK) {
        fprintf(stderr, "cycle: acquire: status %d: %s\n", (int)st, fl_last_error_message());
        return -1;
    }
    st = fl_lock_release(lock);
    fl_lock_free(lock);
    if (st != FL_OK) {
        fprintf(stderr, "cycle: release: status %d: %s\n", (int)st, fl_last_error_message());
        return -1;
    }
    return 0;
}

int main(int argc, char **argv) {
    fl_manager *manager = NULL;
    const char *url;
    double seconds, start, elapsed;
    long cycles = 0;
    int i;
    if (argc != 4 || (seconds = atof(argv[2])) <= 0) {
        fprintf(stderr, "usage: cycle URL SECONDS NAME\n");
        return 2;
    }
    url = argv[1];
    if (fl_manager_new(&url, 1, NULL, &manager) != FL_OK) {
        fprintf(stderr, "cycle: %s\n", fl_last_error_message());
        return 2;
    }
    for (i = 0; i < WARMUP_CYCLES; i++) {
        if (cycle(manager, argv[3]) != 0) return 1;
    }
    start = now_s();
    do {
        if (cycle(manager, argv[3]) != 0) return 1;
        cycles++;
        elapsed = now_s() - start;
    } while (elapsed < seconds);
    fl_manager_free(manager);
    printf("{\"impl\": \"c\", \"cycles\": %ld, \"seconds\": %.6f, \"errors\": 0}\n", cycles, elapsed);
    return 0;
}
