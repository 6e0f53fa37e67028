/*
 * Seeing what fencelock does: an event callback (fl_set_event_callback) and a manager with a
 * connect timeout. The same events go to stderr without any code with FENCELOCK_LOG=debug.
 *
 * Build: cc events.c $(pkg-config --cflags --libs fencelock) -o events
 * Run:   ./events redis://127.0.0.1:6379
 *        FENCELOCK_LOG=trace ./events rediss://user:password@redis.internal:6380
 */
#define _POSIX_C_SOURCE 200809L
#include <fencelock.h>

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static const char *const level_names[] = {"trace", "debug", "info", "warn", "error"};

/* Runs on fencelock's threads: quick, thread-safe, no fencelock calls. */
static void on_event(fl_event_level level, const char *message, const char *fields, void *user_data) {
    atomic_int *count = user_data;
    atomic_fetch_add(count, 1);
    fprintf(stdout, "[fencelock %s] %s %s\n", level <= FL_EVENT_ERROR ? level_names[level] : "?",
            message, fields);
}

static int fail(const char *what, fl_status st) {
    fprintf(stderr, "%s: %s: %s\n", what, fl_status_str(st), fl_last_error_message());
    return 1;
}

int main(int argc, char **argv) {
    static atomic_int count;
    fl_manager_options *opts = NULL;
    fl_manager *m = NULL;
    fl_lock *lock = NULL;
    fl_status st;

    if (argc < 2) {
        fprintf(stderr, "usage: %s redis://host:port [more URLs for Redlock]\n", argv[0]);
        return 2;
    }
    /* Every event at debug level or above: acquired, acquire failed, extend, release, lost. */
    st = fl_set_event_callback(on_event, &count, FL_EVENT_DEBUG);
    if (st != FL_OK) return fail("fl_set_event_callback", st);

    st = fl_manager_options_new(&opts);
    if (st != FL_OK) return fail("fl_manager_options_new", st);
    fl_manager_options_set_connect_timeout_ms(opts, 1000); /* give up a connection after 1 s */
    st = fl_manager_new((const char *const *)(argv + 1), (size_t)(argc - 1), opts, &m);
    fl_manager_options_free(opts);
    if (st != FL_OK) return fail("fl_manager_new", st);

    st = fl_lock_acquire(m, "events:demo", 5000, 2000, &lock);
    if (st != FL_OK) return fail("fl_lock_acquire", st);
    st = fl_lock_extend(lock, 5000);
    if (st != FL_OK) return fail("fl_lock_extend", st);
    st = fl_lock_release(lock);
    if (st != FL_OK) return fail("fl_lock_release", st);
    fl_lock_free(lock);
    fl_manager_free(m);

    /* Unregister: when this returns the callback is not running and will not run again. */
    fl_set_event_callback(NULL, NULL, 0);
    printf("%d events\n", atomic_load(&count));
    return atomic_load(&count) >= 3 ? 0 : 1; /* acquired, extend, release */
}
