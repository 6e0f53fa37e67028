/*
 * C tests of the acquisitions that return at once and complete through a callback
 * (fl_lock_acquire_start, fl_semaphore_acquire_start, fl_rwlock_acquire_start,
 * fl_pending_cancel, FL_ACQUIRE_INLINE) and of the span callback (fl_set_span_callback, fl_trace_next), against the INSTALLED library; tests/run.sh runs it plain, under
 * valgrind and with AddressSanitizer, with FL_TEST_PORTS as for fencelock_test.c (the first
 * server is used).
 */
#define _POSIX_C_SOURCE 200809L

#include "check.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static char url[64];

/* What a completion callback saw; waited for with wait_done. */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int calls;
    fl_status status;
    fl_lock *lock;
    char message[512];
} outcome;

static void outcome_init(outcome *o) {
    memset(o, 0, sizeof *o);
    pthread_mutex_init(&o->mu, NULL);
    pthread_cond_init(&o->cv, NULL);
}

static void outcome_destroy(outcome *o) {
    pthread_mutex_destroy(&o->mu);
    pthread_cond_destroy(&o->cv);
}

/* The fl_acquire_done callback: records the outcome (and the message, readable only here). */
static void on_done(fl_status status, fl_lock *lock, void *user_data) {
    outcome *o = user_data;
    pthread_mutex_lock(&o->mu);
    o->calls++;
    o->status = status;
    o->lock = lock;
    snprintf(o->message, sizeof o->message, "%s", status == FL_OK ? "" : fl_last_error_message());
    pthread_cond_broadcast(&o->cv);
    pthread_mutex_unlock(&o->mu);
}

/* Waits up to limit_ms for the callback; returns whether it came. A limit for a hang only. */
static int wait_done(outcome *o, long limit_ms) {
    struct timespec until;
    int came;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += limit_ms / 1000;
    until.tv_nsec += (limit_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&o->mu);
    while (o->calls == 0 && pthread_cond_timedwait(&o->cv, &o->mu, &until) != ETIMEDOUT) {
    }
    came = o->calls > 0;
    pthread_mutex_unlock(&o->mu);
    return came;
}

static int calls_of(outcome *o) {
    int n;
    pthread_mutex_lock(&o->mu);
    n = o->calls;
    pthread_mutex_unlock(&o->mu);
    return n;
}

static fl_manager *new_manager(void) {
    const char *u[] = {url};
    fl_manager *m = NULL;
    fl_manager_options *o = NULL;
    const char *t = getenv("FL_TEST_SERVER_TIMEOUT_MS");
    CHECK_ST(fl_manager_options_new(&o), FL_OK);
    if (t && *t) CHECK_ST(fl_manager_options_set_server_timeout_ms(o, (uint64_t)atol(t)), FL_OK);
    CHECK_ST(fl_manager_new(u, 1, o, &m), FL_OK);
    fl_manager_options_free(o);
    return m;
}

static const char *fresh_name(const char *base) {
    static char buf[4][96];
    static int next;
    char *b = buf[next++ % 4];
    snprintf(b, sizeof buf[0], "%s-%d-%ld-%d", base, (int)getpid(), (long)time(NULL), next);
    return b;
}

/* Bad arguments are the start call's error, before any network call; done is never called. */
static void test_bad_arguments_fail_the_start_call(void) {
    fl_manager *m = new_manager();
    fl_pending *p = NULL;
    outcome o;
    outcome_init(&o);
    CHECK_INVALID(fl_lock_acquire_start(m, "x", NULL, 1000, -1, 0, NULL, &o, &p), "done is NULL");
    CHECK_INVALID(fl_lock_acquire_start(m, "", NULL, 1000, -1, 0, on_done, &o, &p), "name");
    CHECK_INVALID(fl_lock_acquire_start(m, "x", NULL, 1000, -2, 0, on_done, &o, &p), "wait");
    CHECK_INVALID(fl_lock_acquire_start(m, "x", NULL, 1000, -1, 0x80, on_done, &o, &p), "flags");
    CHECK_INVALID(fl_lock_acquire_start(m, "x", NULL, 1000, -1, 0, on_done, &o, NULL), "out");
    CHECK_INVALID(fl_lock_acquire_start(NULL, "x", NULL, 1000, -1, 0, on_done, &o, &p), "manager");
    CHECK_INVALID(fl_pending_cancel(NULL), "pending");
    CHECK(p == NULL);
    CHECK(calls_of(&o) == 0);
    fl_pending_free(NULL);
    fl_manager_free(m);
    outcome_destroy(&o);
}

/* A free lock is acquired and handed to the callback, which owns it. */
static void test_a_free_lock_completes_with_the_lock(void) {
    fl_manager *m = new_manager();
    fl_pending *p = NULL;
    const char *name = fresh_name("start-free");
    outcome o;
    outcome_init(&o);
    CHECK_ST(fl_lock_acquire_start(m, name, NULL, 10000, -1, 0, on_done, &o, &p), FL_OK);
    CHECK(wait_done(&o, 30000));
    CHECK_ST(o.status, FL_OK);
    CHECK(o.lock != NULL);
    if (o.lock) {
        const char *got = NULL;
        uint64_t fence = 0;
        CHECK_ST(fl_lock_name(o.lock, &got), FL_OK);
        CHECK(got && strcmp(got, name) == 0);
        CHECK_ST(fl_lock_fencing_token(o.lock, &fence), FL_OK);
        CHECK(fence > 0);
        CHECK_ST(fl_lock_release(o.lock), FL_OK);
        fl_lock_free(o.lock);
    }
    /* Cancelling after the end changes nothing: done was called once. */
    CHECK_ST(fl_pending_cancel(p), FL_OK);
    CHECK(calls_of(&o) == 1);
    fl_pending_free(p);
    fl_manager_free(m);
    outcome_destroy(&o);
}

/* FL_ACQUIRE_INLINE: a free lock ends inside the start call, on the calling thread; a held
 * one returns with the wait under way, ending on a library thread at the release. Blocking
 * calls refuse the flag. */
static pthread_t done_on;

static void on_done_where(fl_status status, fl_lock *lock, void *user_data) {
    done_on = pthread_self();
    on_done(status, lock, user_data);
}

static void test_inline_ends_in_the_start_call_when_no_wait_is_needed(void) {
    fl_manager *m = new_manager();
    fl_pending *p = NULL, *q = NULL;
    fl_lock *l = NULL;
    const char *name = fresh_name("start-inline");
    outcome o, w;
    bool locked = true;
    outcome_init(&o);
    outcome_init(&w);
    CHECK_ST(fl_manager_is_locked(m, name, &locked), FL_OK); /* the manager's connections up */
    CHECK(!locked);
    CHECK_ST(fl_lock_acquire_start(m, name, NULL, 10000, -1, FL_ACQUIRE_INLINE, on_done_where, &o, &p),
             FL_OK);
    CHECK(calls_of(&o) == 1);
    CHECK(pthread_equal(done_on, pthread_self()));
    CHECK_ST(o.status, FL_OK);
    CHECK_ST(fl_lock_acquire_start(m, name, NULL, 10000, -1, FL_ACQUIRE_INLINE, on_done_where, &w, &q),
             FL_OK);
    CHECK(calls_of(&w) == 0);
    if (o.lock) {
        CHECK_ST(fl_lock_release(o.lock), FL_OK);
        fl_lock_free(o.lock);
    }
    CHECK(wait_done(&w, 30000));
    CHECK_ST(w.status, FL_OK);
    CHECK(!pthread_equal(done_on, pthread_self()));
    if (w.lock) {
        CHECK_ST(fl_lock_release(w.lock), FL_OK);
        fl_lock_free(w.lock);
    }
    CHECK_INVALID(fl_lock_acquire_with_flags(m, name, "t", 1000, 0, FL_ACQUIRE_INLINE, &l),
                  "FL_ACQUIRE_INLINE");
    CHECK(l == NULL);
    fl_pending_free(p);
    fl_pending_free(q);
    fl_manager_free(m);
    outcome_destroy(&o);
    outcome_destroy(&w);
}

/* The waiters of test_waiters_get_the_lock_in_turn: granted locks in the order they came. */
enum { WAITERS = 50 };
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    fl_lock *granted[WAITERS];
    int n_granted, n_failed;
} turns = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {NULL}, 0, 0};

static void on_turn(fl_status status, fl_lock *lock, void *user_data) {
    (void)user_data;
    pthread_mutex_lock(&turns.mu);
    if (status == FL_OK && turns.n_granted < WAITERS) {
        turns.granted[turns.n_granted++] = lock;
    } else {
        turns.n_failed++;
        fl_lock_free(lock);
    }
    pthread_cond_broadcast(&turns.cv);
    pthread_mutex_unlock(&turns.mu);
}

/* Waits up to 30 s (a hang, not a speed check) for grant number i; NULL if none came. */
static fl_lock *wait_turn(int i) {
    struct timespec until;
    fl_lock *lock;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 30;
    pthread_mutex_lock(&turns.mu);
    while (turns.n_granted <= i && turns.n_failed == 0 &&
           pthread_cond_timedwait(&turns.cv, &turns.mu, &until) != ETIMEDOUT) {
    }
    lock = turns.n_granted > i ? turns.granted[i] : NULL;
    pthread_mutex_unlock(&turns.mu);
    return lock;
}

/* Many waiters on a held lock hold no thread each: the holder's release hands it over, each
 * waiter's callback comes in turn, and each one's release hands it to the next. */
static void test_waiters_get_the_lock_in_turn(void) {
    fl_manager *m = new_manager();
    fl_lock *held = NULL;
    fl_pending *p[WAITERS];
    const char *name = fresh_name("start-waiters");
    int i;
    CHECK_ST(fl_lock_acquire(m, name, 30000, 0, &held), FL_OK);
    for (i = 0; i < WAITERS; i++) {
        p[i] = NULL;
        CHECK_ST(fl_lock_acquire_start(m, name, NULL, 30000, -1, 0, on_turn, NULL, &p[i]), FL_OK);
    }
    CHECK(turns.n_granted == 0);
    CHECK_ST(fl_lock_release(held), FL_OK);
    fl_lock_free(held);
    for (i = 0; i < WAITERS; i++) {
        fl_lock *lock = wait_turn(i);
        CHECK(lock != NULL);
        if (!lock) break;
        /* Exclusion: the next grant comes only after this release. */
        pthread_mutex_lock(&turns.mu);
        CHECK(turns.n_granted == i + 1);
        pthread_mutex_unlock(&turns.mu);
        CHECK_ST(fl_lock_release(lock), FL_OK);
        fl_lock_free(lock);
    }
    CHECK(turns.n_failed == 0);
    for (i = 0; i < WAITERS; i++) fl_pending_free(p[i]);
    fl_manager_free(m);
}

/* Cancelling a wait ends it with FL_CANCELLED, and its place in line is given up: the holder's
 * release leaves the lock free for a newcomer's single try at once. */
static void test_cancel_ends_the_wait_and_gives_the_place_up(void) {
    fl_manager *m = new_manager();
    fl_lock *held = NULL, *next = NULL;
    fl_pending *p = NULL;
    const char *name = fresh_name("start-cancel");
    outcome o;
    outcome_init(&o);
    CHECK_ST(fl_lock_acquire(m, name, 30000, 0, &held), FL_OK);
    CHECK_ST(fl_lock_acquire_start(m, name, NULL, 30000, -1, 0, on_done, &o, &p), FL_OK);
    CHECK(!wait_done(&o, 300)); /* still waiting */
    CHECK_ST(fl_pending_cancel(p), FL_OK);
    CHECK(wait_done(&o, 30000));
    CHECK_ST(o.status, FL_CANCELLED);
    CHECK(o.lock == NULL);
    CHECK(strstr(o.message, "cancelled") != NULL);
    CHECK_ST(fl_pending_cancel(p), FL_OK); /* twice: harmless */
    CHECK(calls_of(&o) == 1);
    CHECK_ST(fl_lock_release(held), FL_OK);
    fl_lock_free(held);
    /* The cancelled waiter's place is gone (given up in the background: settle first), so
     * the name is free for a single try rather than kept for the waiter. */
    CHECK_ST(fl_settle_all(30000), FL_OK);
    CHECK_ST(fl_lock_try_acquire(m, name, 1000, &next), FL_OK);
    if (next) {
        CHECK_ST(fl_lock_release(next), FL_OK);
        fl_lock_free(next);
    }
    fl_pending_free(p);
    fl_manager_free(m);
    outcome_destroy(&o);
}

/* A wait limit ends the wait with FL_NOT_ACQUIRED through the callback, with the message. */
static void test_a_wait_limit_completes_with_not_acquired(void) {
    fl_manager *m = new_manager();
    fl_lock *held = NULL;
    fl_pending *p = NULL;
    const char *name = fresh_name("start-limit");
    outcome o;
    outcome_init(&o);
    CHECK_ST(fl_lock_acquire(m, name, 30000, 0, &held), FL_OK);
    CHECK_ST(fl_lock_acquire_start(m, name, NULL, 30000, 200, 0, on_done, &o, &p), FL_OK);
    CHECK(wait_done(&o, 30000));
    CHECK_ST(o.status, FL_NOT_ACQUIRED);
    CHECK(strstr(o.message, name) != NULL);
    CHECK_ST(fl_lock_release(held), FL_OK);
    fl_lock_free(held);
    fl_pending_free(p);
    fl_manager_free(m);
    outcome_destroy(&o);
}

/* Freeing the manager while an acquisition waits ends it with FL_CANCELLED. */
static void test_freeing_the_manager_ends_a_wait(void) {
    fl_manager *m = new_manager(), *other = new_manager();
    fl_lock *held = NULL;
    fl_pending *p = NULL;
    const char *name = fresh_name("start-free-manager");
    outcome o;
    outcome_init(&o);
    CHECK_ST(fl_lock_acquire(other, name, 30000, 0, &held), FL_OK);
    CHECK_ST(fl_lock_acquire_start(m, name, NULL, 30000, -1, 0, on_done, &o, &p), FL_OK);
    fl_pending_free(p);
    fl_manager_free(m);
    CHECK(wait_done(&o, 30000));
    CHECK_ST(o.status, FL_CANCELLED);
    CHECK_ST(fl_lock_release(held), FL_OK);
    fl_lock_free(held);
    fl_manager_free(other);
    outcome_destroy(&o);
}

/* A semaphore's permits and a read-write lock's shares start the same way. */
static void test_semaphore_and_rwlock_start(void) {
    fl_manager *m = new_manager();
    fl_semaphore *s = NULL;
    fl_rwlock *rw = NULL;
    fl_pending *p = NULL, *q = NULL;
    outcome a, b;
    outcome_init(&a);
    outcome_init(&b);
    CHECK_ST(fl_semaphore_new(m, fresh_name("start-sem"), 3, &s), FL_OK);
    CHECK_ST(fl_rwlock_new(m, fresh_name("start-rw"), &rw), FL_OK);
    CHECK_INVALID(fl_semaphore_acquire_start(s, 4, NULL, 1000, -1, 0, on_done, &a, &p), "permits");
    CHECK_INVALID(fl_rwlock_acquire_start(rw, 7, NULL, 1000, -1, 0, on_done, &a, &p), "mode");
    CHECK_ST(fl_semaphore_acquire_start(s, 2, NULL, 10000, -1, 0, on_done, &a, &p), FL_OK);
    CHECK_ST(fl_rwlock_acquire_start(rw, FL_RW_WRITE, NULL, 10000, -1, 0, on_done, &b, &q), FL_OK);
    CHECK(wait_done(&a, 30000) && wait_done(&b, 30000));
    CHECK_ST(a.status, FL_OK);
    CHECK_ST(b.status, FL_OK);
    if (a.lock) {
        uint32_t kind = FL_KIND_LOCK, permits = 0;
        CHECK_ST(fl_lock_kind(a.lock, &kind, &permits), FL_OK);
        CHECK(kind == FL_KIND_SEMAPHORE && permits == 2);
        CHECK_ST(fl_lock_release(a.lock), FL_OK);
        fl_lock_free(a.lock);
    }
    if (b.lock) {
        uint32_t kind = FL_KIND_LOCK, permits = 0;
        CHECK_ST(fl_lock_kind(b.lock, &kind, &permits), FL_OK);
        CHECK(kind == FL_KIND_WRITE);
        CHECK_ST(fl_lock_release(b.lock), FL_OK);
        fl_lock_free(b.lock);
    }
    fl_pending_free(p);
    fl_pending_free(q);
    fl_semaphore_free(s);
    fl_rwlock_free(rw);
    fl_manager_free(m);
    outcome_destroy(&a);
    outcome_destroy(&b);
}

/* Several names at once start the same way; a bad list is the start call's error. */
static void test_many_names_start(void) {
    fl_manager *m = new_manager();
    fl_pending *p = NULL;
    const char *names[2];
    const char *twice[2] = {"same", "same"};
    size_t count = 0;
    outcome o;
    outcome_init(&o);
    names[0] = fresh_name("start-many-a");
    names[1] = fresh_name("start-many-b");
    CHECK_INVALID(fl_lock_acquire_many_start(m, twice, 2, NULL, 1000, -1, 0, on_done, &o, &p), "twice");
    CHECK_INVALID(fl_lock_acquire_many_start(m, NULL, 2, NULL, 1000, -1, 0, on_done, &o, &p), "names");
    CHECK_INVALID(fl_lock_acquire_many_start(m, names, 2, NULL, 1000, -1, 0, NULL, &o, &p), "done");
    CHECK(calls_of(&o) == 0);
    CHECK_ST(fl_lock_acquire_many_start(m, names, 2, NULL, 10000, -1, 0, on_done, &o, &p), FL_OK);
    CHECK(wait_done(&o, 30000));
    CHECK_ST(o.status, FL_OK);
    if (o.lock) {
        CHECK_ST(fl_lock_name_count(o.lock, &count), FL_OK);
        CHECK(count == 2);
        CHECK_ST(fl_lock_release(o.lock), FL_OK);
        fl_lock_free(o.lock);
    }
    fl_pending_free(p);
    fl_manager_free(m);
    outcome_destroy(&o);
}

/* fl_set_span_callback and fl_trace_next: spans of numbered calls, none of the others. */

struct spans_seen {
    pthread_mutex_t mu;
    char log[8192]; /* "parent name last attr=value ...\n" per span */
    size_t len;
    int bad;
    fl_status reentry_status;
};

static void on_span(const fl_span *span, void *user_data) {
    struct spans_seen *seen = user_data;
    size_t i;
    int n;
    pthread_mutex_lock(&seen->mu);
    if (!span || !span->name || span->end_unix_ns < span->start_unix_ns ||
        span->start_unix_ns < 1700000000LL * 1000000000LL)
        seen->bad++;
    n = snprintf(seen->log + seen->len, sizeof seen->log - seen->len, "%llu %s %d",
                 (unsigned long long)span->parent, span->name, (int)span->last);
    if (n > 0 && (size_t)n < sizeof seen->log - seen->len) seen->len += (size_t)n;
    for (i = 0; i < span->attribute_count && seen->len < sizeof seen->log - 128; i++) {
        const fl_span_attribute *a = &span->attributes[i];
        if (a->kind == FL_SPAN_TEXT)
            n = snprintf(seen->log + seen->len, sizeof seen->log - seen->len, " %s=%s", a->key, a->text);
        else if (a->kind == FL_SPAN_INT)
            n = snprintf(seen->log + seen->len, sizeof seen->log - seen->len, " %s=%llu", a->key,
                         (unsigned long long)a->number);
        else
            n = snprintf(seen->log + seen->len, sizeof seen->log - seen->len, " %s=%s", a->key,
                         a->flag ? "true" : "false");
        if (n > 0) seen->len += (size_t)n;
    }
    if (seen->len < sizeof seen->log - 1) seen->log[seen->len++] = '\n';
    seen->log[seen->len] = 0;
    seen->reentry_status = fl_set_span_callback(NULL, NULL);
    pthread_mutex_unlock(&seen->mu);
}

static int spans_contain(struct spans_seen *seen, const char *what) {
    int found;
    pthread_mutex_lock(&seen->mu);
    found = strstr(seen->log, what) != NULL;
    pthread_mutex_unlock(&seen->mu);
    return found;
}

static void test_spans_reach_the_callback_with_their_parent(void) {
    static struct spans_seen seen;
    fl_manager *m = new_manager();
    fl_lock *l = NULL, *other = NULL;
    fl_pending *p = NULL;
    const char *name = fresh_name("traced");
    char expect[256];
    uint64_t token = 0;
    outcome o;
    int i;
    outcome_init(&o);
    memset(&seen, 0, sizeof seen);
    pthread_mutex_init(&seen.mu, NULL);

    /* No callback: a number is forgotten, nothing is recorded. */
    fl_trace_next(5);
    CHECK_ST(fl_lock_acquire(m, name, 10000, 0, &l), FL_OK);
    CHECK_ST(fl_lock_release(l), FL_OK);
    fl_lock_free(l);
    l = NULL;

    CHECK_ST(fl_set_span_callback(on_span, &seen), FL_OK);
    /* A call without a number has no span. */
    CHECK_ST(fl_lock_acquire(m, name, 10000, 0, &l), FL_OK);
    CHECK_ST(fl_lock_release(l), FL_OK);
    fl_lock_free(l);
    l = NULL;
    /* A blocking call numbered 7: acquire (not last) then hold (last) once released. */
    fl_trace_next(7);
    CHECK_ST(fl_lock_acquire(m, name, 10000, 0, &l), FL_OK);
    CHECK_ST(fl_lock_fencing_token(l, &token), FL_OK);
    /* Numbered 8, refused at once: one acquire span, last, outcome not_acquired. */
    fl_trace_next(8);
    CHECK_ST(fl_lock_try_acquire(m, name, 10000, &other), FL_NOT_ACQUIRED);
    /* Numbered 9, a callback acquisition: its span comes from the library's thread. */
    fl_trace_next(9);
    CHECK_ST(fl_lock_acquire_start(m, name, NULL, 10000, -1, 0, on_done, &o, &p), FL_OK);
    CHECK_ST(fl_lock_release(l), FL_OK);
    fl_lock_free(l);
    CHECK(wait_done(&o, 30000));
    CHECK_ST(o.status, FL_OK);
    if (o.lock) {
        CHECK_ST(fl_lock_release(o.lock), FL_OK);
        fl_lock_free(o.lock);
    }
    fl_pending_free(p);
    /* The hold span of 9 ends on a library thread after the release returns. */
    for (i = 0; i < 3000 && !spans_contain(&seen, "9 fencelock.hold 1"); i++) {
        struct timespec ms = {0, 1000000L};
        nanosleep(&ms, NULL);
    }

    snprintf(expect, sizeof expect, "7 fencelock.acquire 0 lock=%s kind=mutex", name);
    CHECK(spans_contain(&seen, expect));
    snprintf(expect, sizeof expect, "fencing_token=%llu", (unsigned long long)token);
    CHECK(spans_contain(&seen, expect));
    CHECK(spans_contain(&seen, "7 fencelock.hold 1"));
    CHECK(spans_contain(&seen, " outcome=released"));
    CHECK(spans_contain(&seen, "8 fencelock.acquire 1"));
    CHECK(spans_contain(&seen, " outcome=not_acquired"));
    CHECK(spans_contain(&seen, "9 fencelock.acquire 0"));
    CHECK(spans_contain(&seen, "9 fencelock.hold 1"));
    CHECK(!spans_contain(&seen, "\n0 ") && !spans_contain(&seen, "5 fencelock"));
    pthread_mutex_lock(&seen.mu);
    CHECK(strncmp(seen.log, "0 ", 2) != 0);
    CHECK(seen.bad == 0);
    CHECK_ST(seen.reentry_status, FL_INVALID_ARGUMENT);
    pthread_mutex_unlock(&seen.mu);

    /* Unregistered: once the call returns, the callback is never called again. */
    CHECK_ST(fl_set_span_callback(NULL, NULL), FL_OK);
    pthread_mutex_lock(&seen.mu);
    seen.len = 0;
    seen.log[0] = 0;
    pthread_mutex_unlock(&seen.mu);
    fl_trace_next(10);
    CHECK_ST(fl_lock_acquire(m, name, 10000, 0, &l), FL_OK);
    CHECK_ST(fl_lock_release(l), FL_OK);
    fl_lock_free(l);
    CHECK(!spans_contain(&seen, "fencelock."));
    fl_manager_free(m);
    outcome_destroy(&o);
    pthread_mutex_destroy(&seen.mu);
}

int main(void) {
    const char *ports = getenv("FL_TEST_PORTS");
    int port;
    if (!ports || sscanf(ports, "%d", &port) != 1) {
        fprintf(stderr, "set FL_TEST_PORTS (tests/run.sh does)\n");
        return 2;
    }
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    run_test("bad_arguments_fail_the_start_call", test_bad_arguments_fail_the_start_call);
    run_test("a_free_lock_completes_with_the_lock", test_a_free_lock_completes_with_the_lock);
    run_test("inline_ends_in_the_start_call_when_no_wait_is_needed",
             test_inline_ends_in_the_start_call_when_no_wait_is_needed);
    run_test("waiters_get_the_lock_in_turn", test_waiters_get_the_lock_in_turn);
    run_test("cancel_ends_the_wait_and_gives_the_place_up",
             test_cancel_ends_the_wait_and_gives_the_place_up);
    run_test("a_wait_limit_completes_with_not_acquired", test_a_wait_limit_completes_with_not_acquired);
    run_test("freeing_the_manager_ends_a_wait", test_freeing_the_manager_ends_a_wait);
    run_test("semaphore_and_rwlock_start", test_semaphore_and_rwlock_start);
    run_test("many_names_start", test_many_names_start);
    run_test("spans_reach_the_callback_with_their_parent",
             test_spans_reach_the_callback_with_their_parent);
    return summary();
}
