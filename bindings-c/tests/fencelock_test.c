/*
 * C tests of libfencelock, compiled against the INSTALLED header and library
 * (gcc -Wall -Wextra -Werror -pedantic -std=c11) and run plain, under valgrind and with
 * AddressSanitizer by tests/run.sh, which starts the redis-server processes and passes:
 *
 *   FL_TEST_PORTS     four ports: one server for the single-server tests, then three for
 *                     Redlock
 *   FL_TEST_KILL_PID  the PID of the fourth server (the test kills it: Redlock with one
 *                     server down)
 *   FL_TEST_VERSION   the version pkg-config reports
 *   FL_TEST_CLUSTER_PORTS  the six ports of a Redis Cluster (3 masters, 3 replicas)
 *
 * The test talks to the servers itself through a tiny RESP client (raw_cmd) to check and
 * tamper with keys. The last line of output is "N passed, N failed" (tests, not checks).
 */
#define _POSIX_C_SOURCE 200809L

#include <fencelock.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

/* ---------------------------------------------------------------- helpers */

static int ports[4];
static char urls[4][64];
static pid_t kill_pid;

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A unique lock name per call, so tests never see each other's keys. */
static const char *fresh_name(const char *base) {
    static char buf[8][96];
    static int next;
    char *b = buf[next++ % 8];
    snprintf(b, sizeof buf[0], "%s-%d-%lld", base, (int)getpid(), now_ms() % 1000000 + next);
    return b;
}

/*
 * One command to 127.0.0.1:port over a fresh connection. The reply's type character is
 * returned ('+', '-', ':', '$', or '!' when the server could not be reached), its text
 * copied into out (a nil bulk string becomes "(nil)").
 */
static char raw_cmd(int port, char *out, size_t cap, int argc, const char **argv) {
    char req[4096], resp[4096];
    size_t n = 0, got = 0;
    int i, fd;
    struct sockaddr_in addr;
    out[0] = 0;
    n += (size_t)snprintf(req + n, sizeof req - n, "*%d\r\n", argc);
    for (i = 0; i < argc; i++)
        n += (size_t)snprintf(req + n, sizeof req - n, "$%zu\r\n%s\r\n", strlen(argv[i]), argv[i]);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return '!';
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0 || write(fd, req, n) != (ssize_t)n) {
        close(fd);
        return '!';
    }
    /* Read until the reply is complete: one line, or a bulk header plus its payload. */
    for (;;) {
        ssize_t r = read(fd, resp + got, sizeof resp - 1 - got);
        char *eol;
        if (r <= 0) break;
        got += (size_t)r;
        resp[got] = 0;
        eol = strstr(resp, "\r\n");
        if (!eol) continue;
        if (resp[0] != '$') break;
        if (atol(resp + 1) < 0) break;
        if (got >= (size_t)(eol - resp) + 2 + (size_t)atol(resp + 1) + 2) break;
    }
    close(fd);
    if (got == 0) return '!';
    resp[got] = 0;
    if (resp[0] == '$') {
        long len = atol(resp + 1);
        if (len < 0) {
            snprintf(out, cap, "(nil)");
        } else {
            char *body = strstr(resp, "\r\n") + 2;
            snprintf(out, cap, "%.*s", (int)len, body);
        }
    } else {
        char *eol = strstr(resp, "\r\n");
        if (eol) *eol = 0;
        snprintf(out, cap, "%s", resp + 1);
    }
    return resp[0];
}

static char raw1(int port, char *out, size_t cap, const char *a) {
    const char *argv[] = {a};
    return raw_cmd(port, out, cap, 1, argv);
}
static char raw2(int port, char *out, size_t cap, const char *a, const char *b) {
    const char *argv[] = {a, b};
    return raw_cmd(port, out, cap, 2, argv);
}
static char raw3(int port, char *out, size_t cap, const char *a, const char *b, const char *c) {
    const char *argv[] = {a, b, c};
    return raw_cmd(port, out, cap, 3, argv);
}

/*
 * The managers of most tests. Under valgrind everything runs ~30x slower, so run.sh sets
 * FL_TEST_SERVER_TIMEOUT_MS there: the default per-server timeout (ttl/20, e.g. 500 ms for a
 * 10 s TTL) would otherwise expire while a first connection is being set up.
 */
static fl_manager *manager_over(const char *const *u, size_t n) {
    fl_manager *m = NULL;
    fl_manager_options *o = NULL;
    const char *t = getenv("FL_TEST_SERVER_TIMEOUT_MS");
    if (t && *t) {
        CHECK_ST(fl_manager_options_new(&o), FL_OK);
        CHECK_ST(fl_manager_options_set_server_timeout_ms(o, (uint64_t)atol(t)), FL_OK);
    }
    CHECK_ST(fl_manager_new(u, n, o, &m), FL_OK);
    fl_manager_options_free(o);
    return m;
}

static fl_manager *single_manager(void) {
    const char *u[] = {urls[0]};
    return manager_over(u, 1);
}

static fl_manager *redlock_manager(void) {
    const char *u[] = {urls[1], urls[2], urls[3]};
    return manager_over(u, 3);
}

/* A loopback port nothing listens on (bound, then closed). */
static int dead_port(void) {
    struct sockaddr_in addr;
    socklen_t len = sizeof addr;
    int port, fd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    bind(fd, (struct sockaddr *)&addr, sizeof addr);
    getsockname(fd, (struct sockaddr *)&addr, &len);
    port = ntohs(addr.sin_port);
    close(fd);
    return port;
}

/* Sentinel for "out-pointer left untouched". */
static int sentinel_storage;
#define SENTINEL ((void *)&sentinel_storage)

/* ---------------------------------------------------------------- tests */

static void test_version_and_status_names(void) {
    const char *want = getenv("FL_TEST_VERSION");
    unsigned i;
    static const char *names[] = {"ok",          "invalid argument", "not acquired", "not held",
                                  "unavailable", "redis error",      "cancelled",    "panic",
                                  "wrong kind"};
    CHECK(fl_version() != NULL && strlen(fl_version()) > 0);
    if (want) CHECK(strcmp(fl_version(), want) == 0);
    CHECK(FL_OK == 0 && FL_INVALID_ARGUMENT == 1 && FL_NOT_ACQUIRED == 2 && FL_NOT_HELD == 3);
    CHECK(FL_UNAVAILABLE == 4 && FL_REDIS_ERROR == 5 && FL_CANCELLED == 6 && FL_PANIC == 7);
    CHECK(FL_WRONG_KIND == 8);
    for (i = 0; i < 9; i++) CHECK(strcmp(fl_status_str(i), names[i]) == 0);
    CHECK(strcmp(fl_status_str(9), "unknown status") == 0);
    CHECK(strcmp(fl_status_str(0xFFFFFFFFu), "unknown status") == 0);
}

static void test_free_functions_accept_null(void) {
    fl_lock_free(NULL);
    fl_manager_free(NULL);
    fl_manager_options_free(NULL);
    CHECK(1);
}

static void test_manager_new_rejects_bad_input(void) {
    fl_manager *m = SENTINEL;
    fl_manager_options *o = NULL;
    const char *good[] = {urls[0]};
    const char *with_null[] = {urls[0], NULL};
    const char *not_utf8[] = {"redis://127.0.0.1:1/\xff"};
    const char *bad_scheme[] = {"http://127.0.0.1:1"};
    const char *no_scheme[] = {"127.0.0.1:6379"};
    const char *twice[] = {urls[1], urls[1]};
    const char *secret[] = {"redis://user:hunter2@127.0.0.1:99999"};
    char long_prefix[1100];

    CHECK_INVALID(fl_manager_new(good, 1, NULL, NULL), "out");
    CHECK_INVALID(fl_manager_new(NULL, 1, NULL, &m), "urls is NULL");
    CHECK_INVALID(fl_manager_new(NULL, 0, NULL, &m), "at least one");
    CHECK_INVALID(fl_manager_new(good, 0, NULL, &m), "at least one");
    CHECK_INVALID(fl_manager_new(with_null, 2, NULL, &m), "URL #1 is NULL");
    CHECK_INVALID(fl_manager_new(not_utf8, 1, NULL, &m), "not valid UTF-8");
    CHECK_INVALID(fl_manager_new(bad_scheme, 1, NULL, &m), "unsupported scheme");
    CHECK_INVALID(fl_manager_new(no_scheme, 1, NULL, &m), "redis://");
    CHECK_INVALID(fl_manager_new(twice, 2, NULL, &m), "given twice");
    CHECK_INVALID(fl_manager_new(secret, 1, NULL, &m), "***@");
    CHECK(strstr(fl_last_error_message(), "hunter2") == NULL);

    /* Options: the setters record, fl_manager_new checks. */
    CHECK_INVALID(fl_manager_options_new(NULL), "out");
    CHECK_INVALID(fl_manager_options_set_key_prefix(NULL, "p"), "opts");
    CHECK_INVALID(fl_manager_options_set_retry_delay_ms(NULL, 1), "opts");
    CHECK_INVALID(fl_manager_options_set_retry_jitter_ms(NULL, 1), "opts");
    CHECK_INVALID(fl_manager_options_set_drift_factor(NULL, 0.1), "opts");
    CHECK_INVALID(fl_manager_options_set_server_timeout_ms(NULL, 1), "opts");
    CHECK_INVALID(fl_manager_options_set_tls_ca_file(NULL, "/x"), "opts is NULL");
    CHECK_INVALID(fl_manager_options_set_tls_ca_pem(NULL, "x"), "opts is NULL");
    CHECK_INVALID(fl_manager_options_set_tls_client_cert_files(NULL, "/c", "/k"), "opts is NULL");
    CHECK_INVALID(fl_manager_options_set_tls_client_cert_pem(NULL, "c", "k"), "opts is NULL");
    CHECK_INVALID(fl_manager_options_set_tls_insecure(NULL, true), "opts is NULL");
    CHECK_ST(fl_manager_options_new(&o), FL_OK);
    CHECK_INVALID(fl_manager_options_set_key_prefix(o, NULL), "prefix is NULL");
    CHECK_INVALID(fl_manager_options_set_tls_ca_file(o, NULL), "path is NULL");
    CHECK_INVALID(fl_manager_options_set_tls_ca_pem(o, NULL), "pem is NULL");
    CHECK_INVALID(fl_manager_options_set_tls_client_cert_files(o, "/c", NULL), "key_path is NULL");
    CHECK_INVALID(fl_manager_options_set_tls_client_cert_files(o, NULL, "/k"), "cert_path is NULL");
    CHECK_INVALID(fl_manager_options_set_tls_client_cert_pem(o, NULL, "k"), "cert_pem is NULL");
    CHECK_INVALID(fl_manager_options_set_tls_client_cert_pem(o, "c", NULL), "key_pem is NULL");

    /* TLS options without a rediss:// server, or with a file that cannot be read. */
    {
        fl_manager_options *t = NULL;
        const char *tls_url[] = {"rediss://127.0.0.1:1"};
        CHECK_ST(fl_manager_options_new(&t), FL_OK);
        CHECK_ST(fl_manager_options_set_tls_insecure(t, true), FL_OK);
        CHECK_INVALID(fl_manager_new(good, 1, t, &m), "rediss://");
        CHECK_ST(fl_manager_options_set_tls_ca_file(t, "/nonexistent/ca.pem"), FL_OK);
        CHECK_INVALID(fl_manager_new(tls_url, 1, t, &m), "/nonexistent/ca.pem");
        fl_manager_options_free(t);
        t = NULL;
        CHECK_ST(fl_manager_options_new(&t), FL_OK);
        CHECK_ST(fl_manager_options_set_tls_client_cert_files(t, "/nonexistent/client.crt",
                                                               "/nonexistent/client.key"), FL_OK);
        CHECK_INVALID(fl_manager_new(tls_url, 1, t, &m), "/nonexistent/client.crt");
        CHECK_ST(fl_manager_options_set_tls_client_cert_pem(t, "not a certificate", "not a key"), FL_OK);
        CHECK(fl_manager_new(tls_url, 1, t, &m) == FL_INVALID_ARGUMENT);
        fprintf(stderr, "  e.g. %s\n", fl_last_error_message());
        fl_manager_options_free(t);
    }

    CHECK_ST(fl_manager_options_set_drift_factor(o, 0.5), FL_OK);
    CHECK_INVALID(fl_manager_new(good, 1, o, &m), "drift_factor");
    CHECK_ST(fl_manager_options_set_drift_factor(o, -0.1), FL_OK);
    CHECK_INVALID(fl_manager_new(good, 1, o, &m), "drift_factor");
    CHECK_ST(fl_manager_options_set_drift_factor(o, 0.01), FL_OK);

    CHECK_ST(fl_manager_options_set_retry_delay_ms(o, 0), FL_OK);
    CHECK_INVALID(fl_manager_new(good, 1, o, &m), "retry_delay");
    CHECK_ST(fl_manager_options_set_retry_delay_ms(o, 100), FL_OK);
    CHECK_ST(fl_manager_options_set_retry_jitter_ms(o, 500), FL_OK);
    CHECK_INVALID(fl_manager_new(good, 1, o, &m), "retry_jitter");
    CHECK_ST(fl_manager_options_set_retry_jitter_ms(o, 50), FL_OK);
    CHECK_ST(fl_manager_options_set_server_timeout_ms(o, 0), FL_OK);
    CHECK_INVALID(fl_manager_new(good, 1, o, &m), "server_timeout");
    CHECK_ST(fl_manager_options_set_server_timeout_ms(o, 500), FL_OK);

    memset(long_prefix, 'p', sizeof long_prefix - 1);
    long_prefix[sizeof long_prefix - 1] = 0;
    CHECK_ST(fl_manager_options_set_key_prefix(o, long_prefix), FL_OK);
    CHECK_INVALID(fl_manager_new(good, 1, o, &m), "prefix");
    CHECK(m == SENTINEL); /* never written on failure */

    CHECK_ST(fl_manager_options_set_key_prefix(o, "ok:"), FL_OK);
    m = NULL;
    CHECK_ST(fl_manager_new(good, 1, o, &m), FL_OK);
    CHECK(m != NULL);
    fl_manager_free(m);
    fl_manager_options_free(o);
}

static void test_lock_calls_reject_bad_input(void) {
    fl_manager *m = single_manager();
    fl_lock *l = SENTINEL;
    const char *s = SENTINEL;
    uint64_t u = 7;
    bool b = true;
    char long_name[1100], long_token[600];
    memset(long_name, 'n', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = 0;
    memset(long_token, 't', sizeof long_token - 1);
    long_token[sizeof long_token - 1] = 0;

    CHECK_INVALID(fl_lock_acquire(NULL, "n", 1000, 0, &l), "manager is NULL");
    CHECK_INVALID(fl_lock_acquire(m, NULL, 1000, 0, &l), "name is NULL");
    CHECK_INVALID(fl_lock_acquire(m, "n", 1000, 0, NULL), "out");
    CHECK_INVALID(fl_lock_acquire(m, "", 1000, 0, &l), "must not be empty");
    CHECK_INVALID(fl_lock_acquire(m, long_name, 1000, 0, &l), "limit is 1024");
    CHECK_INVALID(fl_lock_acquire(m, "fencelock:{1}:fence", 1000, 0, &l), "reserved");
    CHECK_INVALID(fl_lock_acquire(m, "n", 0, 0, &l), "ttl");
    CHECK_INVALID(fl_lock_acquire(m, "n", UINT64_MAX, 0, &l), "ttl");
    /* Never grantable with the drift rule: refused naming the minimum, not "held by another". */
    CHECK_INVALID(fl_lock_acquire(m, "n", 2, 0, &l), "at least 3 ms");
    CHECK_INVALID(fl_lock_acquire(m, "n", 1000, -2, &l), "wait_ms");
    CHECK_INVALID(fl_lock_acquire(m, "n", 1000, INT64_MIN, &l), "wait_ms");

    CHECK_INVALID(fl_lock_acquire_with_token(m, "n", NULL, 1000, 0, &l), "token is NULL");
    CHECK_INVALID(fl_lock_acquire_with_token(m, "n", "", 1000, 0, &l), "token");
    CHECK_INVALID(fl_lock_acquire_with_token(m, "n", long_token, 1000, 0, &l), "limit is 512");
    CHECK_INVALID(fl_lock_acquire_with_token(NULL, "n", "t", 1000, 0, &l), "manager is NULL");
    CHECK_INVALID(fl_lock_acquire_with_token(m, NULL, "t", 1000, 0, &l), "name is NULL");
    CHECK_INVALID(fl_lock_acquire_with_token(m, "n", "t", 0, 0, &l), "ttl");
    CHECK_INVALID(fl_lock_acquire_with_token(m, "n", "t", 1000, -5, &l), "wait_ms");
    CHECK_INVALID(fl_lock_acquire_with_token(m, "n", "t", 1000, 0, NULL), "out");

    CHECK_INVALID(fl_lock_try_acquire(NULL, "n", 1000, &l), "manager is NULL");
    CHECK_INVALID(fl_lock_try_acquire(m, NULL, 1000, &l), "name is NULL");
    CHECK_INVALID(fl_lock_try_acquire(m, "n", 0, &l), "ttl");
    CHECK_INVALID(fl_lock_try_acquire(m, "", 1000, &l), "empty");
    CHECK_INVALID(fl_lock_try_acquire(m, "n", 1000, NULL), "out");

    CHECK_INVALID(fl_release_by_token(NULL, "n", "t"), "manager is NULL");
    CHECK_INVALID(fl_release_by_token(m, NULL, "t"), "name is NULL");
    CHECK_INVALID(fl_release_by_token(m, "n", NULL), "token is NULL");
    CHECK_INVALID(fl_release_by_token(m, "", "t"), "empty");
    CHECK_INVALID(fl_release_by_token(m, "n", ""), "token");

    CHECK_INVALID(fl_lock_extend(NULL, 1000), "lock is NULL");
    CHECK_INVALID(fl_lock_release(NULL), "lock is NULL");
    CHECK_INVALID(fl_lock_detach(NULL), "lock is NULL");
    CHECK_INVALID(fl_lock_name(NULL, &s), "lock is NULL");
    CHECK_INVALID(fl_lock_token(NULL, &s), "lock is NULL");
    CHECK_INVALID(fl_lock_fencing_token(NULL, &u), "lock is NULL");
    CHECK_INVALID(fl_lock_validity_ms(NULL, &u), "lock is NULL");
    CHECK_INVALID(fl_lock_is_lost(NULL, &b), "lock is NULL");
    CHECK(l == SENTINEL && s == SENTINEL && u == 7 && b == true);

    /* NULL out-pointers on a real lock, and a bad TTL for extend. */
    l = NULL;
    CHECK_ST(fl_lock_acquire(m, fresh_name("bad-out"), 10000, 0, &l), FL_OK);
    CHECK_INVALID(fl_lock_name(l, NULL), "out");
    CHECK_INVALID(fl_lock_token(l, NULL), "out");
    CHECK_INVALID(fl_lock_fencing_token(l, NULL), "out");
    CHECK_INVALID(fl_lock_validity_ms(l, NULL), "out");
    CHECK_INVALID(fl_lock_is_lost(l, NULL), "out");
    CHECK_INVALID(fl_lock_extend(l, 0), "ttl");
    CHECK_ST(fl_lock_release(l), FL_OK);
    fl_lock_free(l);

    CHECK_INVALID(fl_with_lock(m, "n", 1000, 0, NULL, NULL), "callback is NULL");
    fl_manager_free(m);
}

static void test_acquire_query_extend_release(void) {
    fl_manager *m = single_manager();
    fl_lock *l = NULL;
    const char *name = fresh_name("basic"), *tok = NULL, *nm = NULL;
    char val[256];
    uint64_t fence = 0, fence2 = 0, valid = 0;
    bool lost = true;

    CHECK_ST(fl_lock_acquire(m, name, 10000, 0, &l), FL_OK);
    CHECK(l != NULL);
    CHECK_ST(fl_lock_name(l, &nm), FL_OK);
    CHECK(nm && strcmp(nm, name) == 0);
    CHECK_ST(fl_lock_token(l, &tok), FL_OK);
    CHECK(tok && strlen(tok) == 16 + 1 + 36); /* the manager's wake id, '.', a UUID */
    /* The Redis value of the lock key is exactly the token: the classic pattern's layout. */
    CHECK(raw2(ports[0], val, sizeof val, "GET", name) == '$' && strcmp(val, tok) == 0);
    CHECK_ST(fl_lock_fencing_token(l, &fence), FL_OK);
    CHECK(fence > 0);
    CHECK_ST(fl_lock_validity_ms(l, &valid), FL_OK);
    CHECK(valid > 0 && valid <= 10000);
    CHECK_ST(fl_lock_is_lost(l, &lost), FL_OK);
    CHECK(!lost);

    CHECK_ST(fl_lock_extend(l, 60000), FL_OK);
    CHECK_ST(fl_lock_validity_ms(l, &valid), FL_OK);
    CHECK(valid > 10000 && valid <= 60000);
    CHECK(raw2(ports[0], val, sizeof val, "PTTL", name) == ':' && atol(val) > 10000);

    CHECK_ST(fl_lock_release(l), FL_OK);
    CHECK(raw2(ports[0], val, sizeof val, "GET", name) == '$' && strcmp(val, "(nil)") == 0);
    /* Released, not freed: still readable; a second release or an extend is a usage error. */
    CHECK_ST(fl_lock_validity_ms(l, &valid), FL_OK);
    CHECK(valid == 0);
    CHECK_ST(fl_lock_is_lost(l, &lost), FL_OK);
    CHECK(!lost);
    CHECK_ST(fl_lock_token(l, &tok), FL_OK);
    CHECK(strlen(tok) == 16 + 1 + 36);
    CHECK_INVALID(fl_lock_release(l), "already released");
    CHECK_INVALID(fl_lock_extend(l, 1000), "already released");
    CHECK_INVALID(fl_lock_detach(l), "already released");
    fl_lock_free(l);

    /* Fencing tokens grow with every acquisition of a name. */
    l = NULL;
    CHECK_ST(fl_lock_acquire(m, name, 10000, -1, &l), FL_OK);
    CHECK_ST(fl_lock_fencing_token(l, &fence2), FL_OK);
    CHECK(fence2 > fence);
    fl_lock_free(l); /* released in the background */
    fl_manager_free(m);
}

static void test_try_acquire_and_wait_limits(void) {
    fl_manager *m = single_manager();
    fl_lock *held = NULL, *other = SENTINEL;
    const char *name = fresh_name("try");
    long long t0;

    CHECK_ST(fl_lock_try_acquire(m, name, 10000, &held), FL_OK);
    CHECK_ST(fl_lock_try_acquire(m, name, 10000, &other), FL_NOT_ACQUIRED);
    CHECK(strstr(fl_last_error_message(), "held by another") != NULL);
    CHECK(other == SENTINEL);
    CHECK_ST(fl_lock_acquire(m, name, 10000, 0, &other), FL_NOT_ACQUIRED);
    CHECK(other == SENTINEL);
    CHECK(strncmp(fl_last_error_message(), "not acquired: lock \"try-", 24) == 0);
    CHECK(strstr(fl_last_error_message(), "is held by another owner") != NULL);
    fprintf(stderr, "  e.g. %s\n", fl_last_error_message());
    t0 = now_ms();
    CHECK_ST(fl_lock_acquire(m, name, 10000, 300, &other), FL_NOT_ACQUIRED);
    CHECK(other == SENTINEL);
    CHECK(now_ms() - t0 >= 200 && now_ms() - t0 < 5000);
    CHECK_ST(fl_lock_release(held), FL_OK);
    fl_lock_free(held);
    other = NULL;
    CHECK_ST(fl_lock_try_acquire(m, name, 10000, &other), FL_OK);
    CHECK_ST(fl_lock_release(other), FL_OK);
    fl_lock_free(other);
    fl_manager_free(m);
}

/* fl_lock_acquire_interruptible: a forever-wait that the caller's callback stops. */
static bool interrupt_after_calls(void *user_data) {
    int *calls = user_data;
    return ++*calls >= 4; /* about 200 ms */
}
static bool never_interrupt(void *user_data) {
    (void)user_data;
    return false;
}

static void test_interruptible_acquire(void) {
    fl_manager *m = single_manager();
    fl_lock *held = NULL, *l = SENTINEL;
    const char *name = fresh_name("interrupt"), *tok = NULL;
    char val[128];
    int calls = 0;
    long long t0;

    CHECK_INVALID(fl_lock_acquire_interruptible(m, name, NULL, 1000, -1, NULL, NULL, &l),
                  "interrupted is NULL");
    CHECK_INVALID(fl_lock_acquire_interruptible(NULL, name, NULL, 1000, -1, never_interrupt, NULL, &l),
                  "manager is NULL");
    CHECK_INVALID(fl_lock_acquire_interruptible(m, NULL, NULL, 1000, -1, never_interrupt, NULL, &l),
                  "name is NULL");
    CHECK_INVALID(fl_lock_acquire_interruptible(m, name, "", 1000, -1, never_interrupt, NULL, &l),
                  "token");
    CHECK_INVALID(fl_lock_acquire_interruptible(m, name, NULL, 0, -1, never_interrupt, NULL, &l),
                  "ttl");
    CHECK_INVALID(fl_lock_acquire_interruptible(m, name, NULL, 1000, -9, never_interrupt, NULL, &l),
                  "wait_ms");
    CHECK_INVALID(fl_lock_acquire_interruptible(m, name, NULL, 1000, -1, never_interrupt, NULL, NULL),
                  "out");

    CHECK_ST(fl_lock_acquire(m, name, 30000, 0, &held), FL_OK);
    t0 = now_ms();
    CHECK_ST(fl_lock_acquire_interruptible(m, name, NULL, 10000, -1, interrupt_after_calls, &calls, &l),
             FL_CANCELLED);
    CHECK(l == SENTINEL);
    CHECK(calls == 4);
    CHECK(now_ms() - t0 < 5000);
    CHECK(strstr(fl_last_error_message(), "interrupted") != NULL);
    CHECK_ST(fl_lock_release(held), FL_OK);
    fl_lock_free(held);
    /* The cancelled waiter gives its place up in the background: a release before that hands
     * the lock to it, and its undo releases it there. Either way nothing stays locked (wait
     * for it: slow under valgrind). */
    t0 = now_ms();
    while (!(raw2(ports[0], val, sizeof val, "GET", name) == '$' && strcmp(val, "(nil)") == 0) &&
           now_ms() - t0 < 10000)
        sleep_ms(10);
    CHECK(raw2(ports[0], val, sizeof val, "GET", name) == '$' && strcmp(val, "(nil)") == 0);

    /* Not interrupted: acquires, with the caller's token. */
    l = NULL;
    CHECK_ST(fl_lock_acquire_interruptible(m, name, "req-9", 10000, -1, never_interrupt, NULL, &l), FL_OK);
    CHECK_ST(fl_lock_token(l, &tok), FL_OK);
    CHECK(strcmp(tok, "req-9") == 0);
    CHECK_ST(fl_lock_release(l), FL_OK);
    fl_lock_free(l);
    fl_manager_free(m);
}

static void test_interop_with_the_classic_set_nx_lock(void) {
    fl_manager *m = single_manager();
    fl_lock *l = SENTINEL;
    const char *name = fresh_name("classic");
    const char *set_nx[] = {"SET", name, "jedis-request-id", "NX", "PX", "30000"};
    char val[256];

    CHECK(raw_cmd(ports[0], val, sizeof val, 6, set_nx) == '+');
    CHECK_ST(fl_lock_try_acquire(m, name, 10000, &l), FL_NOT_ACQUIRED);
    CHECK(l == SENTINEL);
    CHECK_ST(fl_release_by_token(m, name, "not-the-id"), FL_NOT_HELD);
    CHECK(raw2(ports[0], val, sizeof val, "GET", name) == '$' &&
          strcmp(val, "jedis-request-id") == 0);
    CHECK_ST(fl_release_by_token(m, name, "jedis-request-id"), FL_OK);
    l = NULL;
    CHECK_ST(fl_lock_try_acquire(m, name, 10000, &l), FL_OK);
    /* And the other way round: a classic SET NX fails while fencelock holds it. */
    CHECK(raw_cmd(ports[0], val, sizeof val, 6, set_nx) == '$' && strcmp(val, "(nil)") == 0);
    CHECK_ST(fl_lock_release(l), FL_OK);
    fl_lock_free(l);
    fl_manager_free(m);
}

static void test_caller_token_release_by_token_and_detach(void) {
    fl_manager *m = single_manager();
    fl_lock *l = NULL, *again = NULL;
    const char *name = fresh_name("token"), *tok = NULL;
    char val[256];

    CHECK_ST(fl_lock_acquire_with_token(m, name, "req-1", 10000, 0, &l), FL_OK);
    CHECK_ST(fl_lock_token(l, &tok), FL_OK);
    CHECK(strcmp(tok, "req-1") == 0);
    /* The same token again is refused, as SET NX with a request id is, and each server says
       what it answered; re-entry only when asked for. */
    again = SENTINEL;
    CHECK_ST(fl_lock_acquire_with_token(m, name, "req-1", 20000, 0, &again), FL_NOT_ACQUIRED);
    CHECK(again == SENTINEL);
    CHECK(strstr(fl_last_error_message(), "reentrant") != NULL);
    {
        const char *server = NULL, *detail = NULL;
        uint32_t outcome = 99;
        CHECK(fl_last_error_server_count() == 1);
        CHECK_ST(fl_last_error_server(0, &server, &outcome, &detail), FL_OK);
        CHECK(outcome == FL_SERVER_HELD);
        CHECK(strcmp(fl_server_outcome_str(outcome), "held") == 0);
        CHECK(strstr(server, "127.0.0.1:") != NULL);
        CHECK(strstr(detail, "this token") != NULL);
        CHECK_ST(fl_last_error_server(1, &server, &outcome, &detail), FL_INVALID_ARGUMENT);
        CHECK_ST(fl_last_error_server(0, NULL, NULL, NULL), FL_OK);
    }
    CHECK_INVALID(fl_lock_acquire_with_flags(m, name, "req-1", 20000, 0, 0x10, &again), "unknown acquire flags");
    CHECK(fl_last_error_server_count() == 0);
    CHECK_ST(fl_lock_acquire_with_flags(m, name, "req-1", 20000, 0, FL_ACQUIRE_REENTRANT, &again), FL_OK);
    CHECK(raw2(ports[0], val, sizeof val, "PTTL", name) == ':' && atol(val) > 10000);
    fl_lock_detach(again);
    fl_lock_free(again);
    again = SENTINEL;
    CHECK_ST(fl_lock_acquire_with_token(m, name, "req-2", 10000, 0, &again), FL_NOT_ACQUIRED);
    CHECK(again == SENTINEL);

    /* Detach: the handle goes, the lock stays until released by token. */
    CHECK_ST(fl_lock_detach(l), FL_OK);
    CHECK_INVALID(fl_lock_detach(l), "already released");
    CHECK_INVALID(fl_lock_release(l), "already released");
    fl_lock_free(l);
    CHECK(raw2(ports[0], val, sizeof val, "GET", name) == '$' && strcmp(val, "req-1") == 0);
    CHECK_ST(fl_release_by_token(m, name, "req-2"), FL_NOT_HELD);
    CHECK(strstr(fl_last_error_message(), "another") != NULL);
    CHECK_ST(fl_release_by_token(m, name, "req-1"), FL_OK);
    CHECK(raw2(ports[0], val, sizeof val, "GET", name) == '$' && strcmp(val, "(nil)") == 0);
    CHECK_ST(fl_release_by_token(m, name, "req-1"), FL_NOT_HELD);
    fl_manager_free(m);
}

static void test_key_prefix_and_options(void) {
    fl_manager_options *o = NULL;
    fl_manager *m = NULL;
    fl_lock *l = NULL;
    const char *u[] = {urls[0]};
    const char *name = fresh_name("pfx"), *tok = NULL;
    char key[256], val[256];

    CHECK_ST(fl_manager_options_new(&o), FL_OK);
    CHECK_ST(fl_manager_options_set_key_prefix(o, "app:"), FL_OK);
    CHECK_ST(fl_manager_options_set_retry_delay_ms(o, 50), FL_OK);
    CHECK_ST(fl_manager_options_set_retry_jitter_ms(o, 10), FL_OK);
    CHECK_ST(fl_manager_options_set_drift_factor(o, 0.02), FL_OK);
    CHECK_ST(fl_manager_options_set_server_timeout_ms(o, 800), FL_OK);
    CHECK_ST(fl_manager_new(u, 1, o, &m), FL_OK);
    fl_manager_options_free(o); /* not kept by the manager */
    CHECK_ST(fl_lock_acquire(m, name, 10000, 0, &l), FL_OK);
    CHECK_ST(fl_lock_token(l, &tok), FL_OK);
    snprintf(key, sizeof key, "app:%s", name);
    CHECK(raw2(ports[0], val, sizeof val, "GET", key) == '$' && strcmp(val, tok) == 0);
    CHECK(raw2(ports[0], val, sizeof val, "GET", name) == '$' && strcmp(val, "(nil)") == 0);
    CHECK_ST(fl_lock_release(l), FL_OK);
    fl_lock_free(l);
    fl_manager_free(m);
}

static void test_free_without_release_releases_in_background(void) {
    fl_manager *m = single_manager();
    fl_lock *l = NULL, *next = NULL;
    const char *name = fresh_name("drop");
    CHECK_ST(fl_lock_acquire(m, name, 60000, 0, &l), FL_OK);
    fl_lock_free(l);
    /* Without the background release this would wait 60 s and fail. */
    CHECK_ST(fl_lock_acquire(m, name, 10000, 5000, &next), FL_OK);
    CHECK_ST(fl_lock_release(next), FL_OK);
    fl_lock_free(next);
    fl_manager_free(m);
}

static void test_auto_extend_keeps_an_explicit_lock_alive(void) {
    fl_manager *m = single_manager();
    fl_lock *l = NULL;
    const char *name = fresh_name("auto"), *tok = NULL;
    char val[128];
    bool lost = true;
    uint64_t valid = 0;
    long long t0;

    CHECK_INVALID(fl_lock_auto_extend(NULL, 0), "lock is NULL");
    CHECK_ST(fl_lock_acquire(m, name, 800, 0, &l), FL_OK);
    CHECK_ST(fl_lock_token(l, &tok), FL_OK);
    CHECK_ST(fl_lock_auto_extend(l, 0), FL_OK);
    /* Three TTLs later it is still ours. */
    t0 = now_ms();
    while (now_ms() - t0 < 2400) {
        sleep_ms(50);
        if (raw2(ports[0], val, sizeof val, "GET", name) != '$' || strcmp(val, tok) != 0) break;
    }
    CHECK(now_ms() - t0 >= 2400);
    CHECK_ST(fl_lock_is_lost(l, &lost), FL_OK);
    CHECK(!lost);
    CHECK_ST(fl_lock_validity_ms(l, &valid), FL_OK);
    CHECK(valid > 0);
    CHECK_ST(fl_lock_release(l), FL_OK);
    CHECK_INVALID(fl_lock_auto_extend(l, 0), "already released");
    fl_lock_free(l);

    /* With a maximum hold time it stops extending, and the lock runs out. */
    l = NULL;
    name = fresh_name("auto-max");
    CHECK_ST(fl_lock_acquire(m, name, 600, 0, &l), FL_OK);
    CHECK_ST(fl_lock_auto_extend(l, 900), FL_OK);
    t0 = now_ms();
    lost = false;
    while (!lost && now_ms() - t0 < 6000) {
        sleep_ms(20);
        CHECK_ST(fl_lock_is_lost(l, &lost), FL_OK);
    }
    CHECK(lost);
    CHECK(now_ms() - t0 >= 700); /* outlived its first TTL: extended at least once */
    /* Validity ends a little before the key expires on the server (the drift allowance):
     * wait for the key itself to go, proving the extension stopped. */
    while (raw2(ports[0], val, sizeof val, "GET", name) == '$' && strcmp(val, "(nil)") != 0 &&
           now_ms() - t0 < 6000)
        sleep_ms(20);
    CHECK(strcmp(val, "(nil)") == 0);
    CHECK_ST(fl_lock_release(l), FL_NOT_HELD);
    fl_lock_free(l);
    fl_manager_free(m);
}

static void test_lock_outlives_its_manager(void) {
    fl_manager *m = single_manager();
    fl_lock *l = NULL;
    CHECK_ST(fl_lock_acquire(m, fresh_name("outlive"), 10000, 0, &l), FL_OK);
    fl_manager_free(m);
    CHECK_ST(fl_lock_extend(l, 10000), FL_OK);
    CHECK_ST(fl_lock_release(l), FL_OK);
    fl_lock_free(l);
}

static void test_lost_lock_is_reported(void) {
    fl_manager *m = single_manager();
    fl_lock *l = NULL;
    const char *name = fresh_name("lost");
    char val[64];
    bool lost = false;
    uint64_t valid = 1;
    long long t0;

    /* Deleted behind its back: extend says not held and marks it lost. */
    CHECK_ST(fl_lock_acquire(m, name, 10000, 0, &l), FL_OK);
    CHECK(raw2(ports[0], val, sizeof val, "DEL", name) == ':' && strcmp(val, "1") == 0);
    CHECK_ST(fl_lock_extend(l, 10000), FL_NOT_HELD);
    CHECK_ST(fl_lock_is_lost(l, &lost), FL_OK);
    CHECK(lost);
    CHECK_ST(fl_lock_validity_ms(l, &valid), FL_OK);
    CHECK(valid == 0);
    CHECK_ST(fl_lock_release(l), FL_NOT_HELD);
    CHECK(strstr(fl_last_error_message(), "gone") != NULL || strstr(fl_last_error_message(), "expired") != NULL);
    fl_lock_free(l);

    /* Taken by another token after expiry: release says not held, leaves the other alone. */
    l = NULL;
    name = fresh_name("lost-expired");
    CHECK_ST(fl_lock_acquire(m, name, 1000, 0, &l), FL_OK);
    t0 = now_ms();
    lost = false;
    while (!lost && now_ms() - t0 < 5000) {
        sleep_ms(20);
        CHECK_ST(fl_lock_is_lost(l, &lost), FL_OK);
    }
    CHECK(lost);
    CHECK(raw3(ports[0], val, sizeof val, "SET", name, "someone-else") == '+');
    CHECK_ST(fl_lock_release(l), FL_NOT_HELD);
    CHECK(raw2(ports[0], val, sizeof val, "GET", name) == '$' && strcmp(val, "someone-else") == 0);
    fl_lock_free(l);
    fl_manager_free(m);
}

/* What an fl_lock_on_lost callback saw. */
struct lost_seen {
    atomic_int calls;
    atomic_int reason;
    atomic_int on_caller_thread;
    pthread_t caller;
    uint64_t fencing;
};

static void on_lost_cb(const fl_lock *lock, void *user_data) {
    struct lost_seen *s = user_data;
    fl_lost_reason why = FL_LOST_NONE;
    fl_lock_lost_reason(lock, &why);
    fl_lock_fencing_token(lock, &s->fencing);
    atomic_store(&s->reason, (int)why);
    atomic_store(&s->on_caller_thread, pthread_equal(pthread_self(), s->caller) ? 1 : 0);
    atomic_fetch_add(&s->calls, 1);
}

/* Polls until the callback was called (or 5 s passed). */
static void wait_called(struct lost_seen *s) {
    long long t0 = now_ms();
    while (atomic_load(&s->calls) == 0 && now_ms() - t0 < 5000) sleep_ms(10);
}

static void test_on_lost_callback_reports_why_once(void) {
    fl_manager *m = single_manager();
    fl_lock *l = NULL;
    const char *name = fresh_name("on-lost");
    char val[64];
    struct lost_seen seen = {0};
    fl_lost_reason why = FL_LOST_EXPIRED;
    uint64_t fencing = 0;
    seen.caller = pthread_self();

    /* Taken behind an auto-extended holder: called once, on another thread, with TAKEN. */
    CHECK_ST(fl_lock_acquire(m, name, 600, 0, &l), FL_OK);
    CHECK_ST(fl_lock_auto_extend(l, 0), FL_OK);
    CHECK_ST(fl_lock_on_lost(l, on_lost_cb, &seen), FL_OK);
    CHECK_ST(fl_lock_lost_reason(l, &why), FL_OK);
    CHECK(why == FL_LOST_NONE);
    CHECK(raw3(ports[0], val, sizeof val, "SET", name, "someone-else") == '+');
    wait_called(&seen);
    CHECK(atomic_load(&seen.calls) == 1);
    CHECK(atomic_load(&seen.reason) == FL_LOST_TAKEN);
    CHECK(atomic_load(&seen.on_caller_thread) == 0);
    CHECK_ST(fl_lock_fencing_token(l, &fencing), FL_OK);
    CHECK(seen.fencing == fencing);
    sleep_ms(300);
    CHECK(atomic_load(&seen.calls) == 1); /* once */
    CHECK_ST(fl_lock_release(l), FL_NOT_HELD);
    CHECK_ST(fl_lock_lost_reason(l, &why), FL_OK);
    CHECK(why == FL_LOST_TAKEN); /* still known after the release */
    CHECK(strcmp(fl_lost_reason_str(why), "taken") == 0);
    CHECK_INVALID(fl_lock_on_lost(l, on_lost_cb, &seen), "already released");
    fl_lock_free(l);

    /* Registered after the loss (validity already ran out): still called, with EXPIRED. */
    memset(&seen, 0, sizeof seen);
    seen.caller = pthread_self();
    l = NULL;
    CHECK_ST(fl_lock_acquire(m, fresh_name("on-lost-late"), 100, 0, &l), FL_OK);
    sleep_ms(250);
    CHECK_ST(fl_lock_on_lost(l, on_lost_cb, &seen), FL_OK);
    wait_called(&seen);
    CHECK(atomic_load(&seen.calls) == 1);
    CHECK(atomic_load(&seen.reason) == FL_LOST_EXPIRED);
    fl_lock_free(l);

    /* Released, or freed, first: never called. */
    memset(&seen, 0, sizeof seen);
    l = NULL;
    CHECK_ST(fl_lock_acquire(m, fresh_name("on-lost-released"), 200, 0, &l), FL_OK);
    CHECK_ST(fl_lock_on_lost(l, on_lost_cb, &seen), FL_OK);
    CHECK_ST(fl_lock_release(l), FL_OK);
    fl_lock_free(l);
    l = NULL;
    CHECK_ST(fl_lock_acquire(m, fresh_name("on-lost-freed"), 200, 0, &l), FL_OK);
    CHECK_ST(fl_lock_on_lost(l, on_lost_cb, &seen), FL_OK);
    fl_lock_free(l);
    sleep_ms(500); /* past both TTLs */
    CHECK(atomic_load(&seen.calls) == 0);

    CHECK_INVALID(fl_lock_on_lost(NULL, on_lost_cb, &seen), "lock is NULL");
    l = NULL;
    CHECK_ST(fl_lock_acquire(m, fresh_name("on-lost-null"), 1000, 0, &l), FL_OK);
    CHECK_INVALID(fl_lock_on_lost(l, NULL, &seen), "callback is NULL");
    CHECK_INVALID(fl_lock_lost_reason(l, NULL), "out");
    CHECK(strcmp(fl_lost_reason_str(99), "unknown") == 0);
    CHECK_ST(fl_lock_release(l), FL_OK);
    fl_lock_free(l);
    fl_manager_free(m);
}

static void test_is_held_and_extend_by_token(void) {
    fl_manager *m = single_manager();
    fl_lock *l = NULL;
    const char *name = fresh_name("held");
    const char *handed = fresh_name("handed");
    char val[64], token[128];
    const char *tok = NULL;
    bool held = false;
    fl_lost_reason why = FL_LOST_NONE;
    uint64_t validity = 0;

    CHECK_ST(fl_lock_acquire(m, name, 10000, 0, &l), FL_OK);
    CHECK_ST(fl_lock_is_held(l, &held), FL_OK);
    CHECK(held);
    CHECK(raw3(ports[0], val, sizeof val, "SET", name, "someone-else") == '+');
    CHECK_ST(fl_lock_is_lost(l, &held), FL_OK);
    CHECK(!held); /* this process cannot know */
    CHECK_ST(fl_lock_is_held(l, &held), FL_OK);
    CHECK(!held);
    CHECK_ST(fl_lock_lost_reason(l, &why), FL_OK);
    CHECK(why == FL_LOST_TAKEN);
    CHECK(raw2(ports[0], val, sizeof val, "GET", name) == '$' && strcmp(val, "someone-else") == 0);
    CHECK_INVALID(fl_lock_is_held(l, NULL), "out");
    CHECK_INVALID(fl_lock_is_held(NULL, &held), "lock is NULL");
    fl_lock_free(l);

    /* Extend by name and token: a detached lock kept alive from elsewhere. */
    l = NULL;
    CHECK_ST(fl_lock_acquire(m, handed, 2000, 0, &l), FL_OK);
    CHECK_ST(fl_lock_token(l, &tok), FL_OK);
    snprintf(token, sizeof token, "%s", tok);
    CHECK_ST(fl_lock_detach(l), FL_OK);
    CHECK_ST(fl_lock_is_held(l, &held), FL_OK);
    CHECK(!held); /* detached: no call */
    fl_lock_free(l);
    CHECK_ST(fl_extend_by_token(m, handed, token, 30000, &validity), FL_OK);
    /* Additive: 20 s more than what is left on the server. */
    l = NULL;
    CHECK_ST(fl_lock_acquire(m, fresh_name("added"), 10000, 0, &l), FL_OK);
    {
        const char *added = NULL;
        CHECK_ST(fl_lock_name(l, &added), FL_OK);
        CHECK(raw3(ports[0], val, sizeof val, "PEXPIRE", added, "4000") == ':');
        CHECK_ST(fl_lock_extend_by(l, 20000), FL_OK);
        CHECK(raw2(ports[0], val, sizeof val, "PTTL", added) == ':' && atol(val) > 23000 && atol(val) <= 24000);
        CHECK_ST(fl_lock_release(l), FL_OK);
        CHECK_INVALID(fl_lock_extend_by(l, 1000), "already released");
    }
    fl_lock_free(l);
    CHECK(validity > 29000 && validity <= 30000);
    CHECK(raw2(ports[0], val, sizeof val, "PTTL", handed) == ':' && atol(val) > 29000);
    CHECK_ST(fl_extend_by_token(m, handed, "not-the-token", 30000, NULL), FL_NOT_HELD);
    CHECK_INVALID(fl_extend_by_token(m, handed, token, 2, NULL), "at least 3 ms");
    CHECK_INVALID(fl_extend_by_token(m, NULL, token, 1000, NULL), "name");
    CHECK_ST(fl_release_by_token(m, handed, token), FL_OK);
    CHECK_ST(fl_extend_by_token(m, handed, token, 30000, NULL), FL_NOT_HELD);
    CHECK(strstr(fl_last_error_message(), "gone") != NULL);
    fl_manager_free(m);
}

static void test_redis_error_and_unavailable(void) {
    fl_manager *m = single_manager(), *dead = NULL;
    fl_lock *l = SENTINEL;
    const char *name = fresh_name("list");
    char val[64], dead_url[64];
    const char *u[1];

    CHECK(raw3(ports[0], val, sizeof val, "RPUSH", name, "x") == ':');
    CHECK_ST(fl_lock_acquire(m, name, 1000, 0, &l), FL_REDIS_ERROR);
    CHECK(strstr(fl_last_error_message(), "WRONGTYPE") != NULL);
    CHECK(l == SENTINEL);
    fl_manager_free(m);

    snprintf(dead_url, sizeof dead_url, "redis://127.0.0.1:%d", dead_port());
    u[0] = dead_url;
    CHECK_ST(fl_manager_new(u, 1, NULL, &dead), FL_OK); /* nothing contacted yet */
    CHECK_ST(fl_lock_acquire(dead, "x", 1000, 0, &l), FL_UNAVAILABLE);
    CHECK(strstr(fl_last_error_message(), "127.0.0.1") != NULL);
    CHECK_ST(fl_lock_try_acquire(dead, "x", 1000, &l), FL_UNAVAILABLE);
    CHECK_ST(fl_release_by_token(dead, "x", "t"), FL_UNAVAILABLE);
    CHECK(l == SENTINEL);
    fl_manager_free(dead);
}

/* TLS: rediss:// to a server whose certificate is signed by a CA of the test's own. */
static void test_tls_options(void) {
    const char *port = getenv("FL_TEST_TLS_PORT"), *ca = getenv("FL_TEST_TLS_CA");
    char url[64], pem[8192];
    const char *u[1];
    fl_manager_options *o = NULL;
    fl_manager *m = NULL;
    fl_lock *l = NULL;
    size_t n;
    FILE *f;
    if (!port || !ca || !*port) {
        fprintf(stderr, "  (skipped: no TLS server; tests/run.sh starts one when openssl exists,\n"
                        "   except for the valgrind run)\n");
        return;
    }
    snprintf(url, sizeof url, "rediss://127.0.0.1:%s", port);
    u[0] = url;

    /* The system's roots do not know the test CA: refused, and the message says why. */
    CHECK_ST(fl_manager_new(u, 1, NULL, &m), FL_OK);
    CHECK_ST(fl_lock_acquire(m, "tls", 5000, 0, &l), FL_UNAVAILABLE);
    CHECK(strstr(fl_last_error_message(), "certificate") != NULL);
    fl_manager_free(m);

    /* Trusting the CA file. */
    m = NULL;
    CHECK_ST(fl_manager_options_new(&o), FL_OK);
    CHECK_ST(fl_manager_options_set_tls_ca_file(o, ca), FL_OK);
    CHECK_ST(fl_manager_new(u, 1, o, &m), FL_OK);
    CHECK_ST(fl_lock_acquire(m, "tls", 5000, 2000, &l), FL_OK);
    CHECK_ST(fl_lock_release(l), FL_OK);
    fl_lock_free(l);
    fl_manager_free(m);
    fl_manager_options_free(o);

    /* The same CA as a PEM document. */
    f = fopen(ca, "r");
    CHECK(f != NULL);
    if (!f) return;
    n = fread(pem, 1, sizeof pem - 1, f);
    pem[n] = 0;
    fclose(f);
    o = NULL;
    m = NULL;
    l = NULL;
    CHECK_ST(fl_manager_options_new(&o), FL_OK);
    CHECK_ST(fl_manager_options_set_tls_ca_pem(o, pem), FL_OK);
    CHECK_ST(fl_manager_new(u, 1, o, &m), FL_OK);
    CHECK_ST(fl_lock_acquire(m, "tls", 5000, 2000, &l), FL_OK);
    CHECK_ST(fl_lock_release(l), FL_OK);
    fl_lock_free(l);
    fl_manager_free(m);
    fl_manager_options_free(o);

    /* Insecure mode: any certificate. */
    o = NULL;
    m = NULL;
    l = NULL;
    CHECK_ST(fl_manager_options_new(&o), FL_OK);
    CHECK_ST(fl_manager_options_set_tls_insecure(o, true), FL_OK);
    CHECK_ST(fl_manager_new(u, 1, o, &m), FL_OK);
    CHECK_ST(fl_lock_acquire(m, "tls", 5000, 2000, &l), FL_OK);
    CHECK_ST(fl_lock_release(l), FL_OK);
    fl_lock_free(l);
    fl_manager_free(m);
    fl_manager_options_free(o);
}

/* fl_manager_options_set_connect_timeout_ms: NULL-safe, range checked by fl_manager_new, and
 * a manager with it works. */
static void test_connect_timeout_option(void) {
    fl_manager_options *o = NULL;
    fl_manager *m = SENTINEL;
    fl_lock *l = NULL;
    const char *u[1];
    const char *t = getenv("FL_TEST_SERVER_TIMEOUT_MS");
    u[0] = urls[0];
    CHECK_INVALID(fl_manager_options_set_connect_timeout_ms(NULL, 100), "opts is NULL");
    CHECK_ST(fl_manager_options_new(&o), FL_OK);
    CHECK_ST(fl_manager_options_set_connect_timeout_ms(o, 0), FL_OK); /* recorded only */
    CHECK_INVALID(fl_manager_new(u, 1, o, &m), "connect_timeout");
    CHECK(m == SENTINEL);
    CHECK_ST(fl_manager_options_set_connect_timeout_ms(o, 3600001), FL_OK);
    CHECK_INVALID(fl_manager_new(u, 1, o, &m), "connect_timeout");
    CHECK_ST(fl_manager_options_set_connect_timeout_ms(o, t && *t ? 10000 : 1000), FL_OK);
    if (t && *t) CHECK_ST(fl_manager_options_set_server_timeout_ms(o, (uint64_t)atol(t)), FL_OK);
    m = NULL;
    CHECK_ST(fl_manager_new(u, 1, o, &m), FL_OK);
    fl_manager_options_free(o);
    CHECK_ST(fl_lock_acquire(m, fresh_name("connect-timeout"), 5000, 2000, &l), FL_OK);
    CHECK_ST(fl_lock_release(l), FL_OK);
    fl_lock_free(l);
    fl_manager_free(m);
}

/* fl_manager_options_set_refused_attempts: a wait without limit on an address nobody listens
 * at ends with FL_UNAVAILABLE after that many attempts (default 10), saying so. */
static void test_refused_attempts_option(void) {
    fl_manager_options *o = NULL;
    fl_manager *m = NULL;
    fl_lock *l = SENTINEL;
    char dead_url[64];
    const char *u[1];
    snprintf(dead_url, sizeof dead_url, "redis://127.0.0.1:%d", dead_port());
    u[0] = dead_url;
    CHECK_INVALID(fl_manager_options_set_refused_attempts(NULL, 3), "opts is NULL");
    CHECK_ST(fl_manager_new(u, 1, NULL, &m), FL_OK);
    CHECK_ST(fl_lock_acquire(m, "nobody-listens", 1000, -1, &l), FL_UNAVAILABLE);
    CHECK(strstr(fl_last_error_message(), "refused the connection on 10 attempts in a row") != NULL);
    fl_manager_free(m);
    CHECK_ST(fl_manager_options_new(&o), FL_OK);
    CHECK_ST(fl_manager_options_set_refused_attempts(o, 3), FL_OK);
    m = NULL;
    CHECK_ST(fl_manager_new(u, 1, o, &m), FL_OK);
    fl_manager_options_free(o);
    CHECK_ST(fl_lock_acquire(m, "nobody-listens", 1000, -1, &l), FL_UNAVAILABLE);
    CHECK(strstr(fl_last_error_message(), "on 3 attempts in a row") != NULL);
    CHECK(l == SENTINEL);
    fl_manager_free(m);
}

/* ACL users: the right password works; a wrong one is FL_UNAVAILABLE saying authentication
 * failed and naming the server, never showing the password. */
static void test_acl_user_and_wrong_password(void) {
    static const char *const setuser[] = {"ACL", "SETUSER", "fl-c-user", "on", ">right-pw-42",
                                          "~*", "&*", "+@all"};
    static const char *const deluser[] = {"ACL", "DELUSER", "fl-c-user"};
    const char *secret = "wr0ng-c-s3cret";
    char val[256], url[160], hostport[64];
    const char *u[1];
    fl_manager *m = NULL;
    fl_lock *l = SENTINEL;
    CHECK(raw_cmd(ports[0], val, sizeof val, 8, (const char **)setuser) == '+');
    u[0] = url;

    snprintf(url, sizeof url, "redis://fl-c-user:right-pw-42@127.0.0.1:%d", ports[0]);
    m = manager_over(u, 1);
    l = NULL;
    CHECK_ST(fl_lock_acquire(m, fresh_name("acl"), 5000, 2000, &l), FL_OK);
    CHECK_ST(fl_lock_release(l), FL_OK);
    fl_lock_free(l);
    fl_manager_free(m);

    snprintf(hostport, sizeof hostport, "127.0.0.1:%d", ports[0]);
    snprintf(url, sizeof url, "redis://fl-c-user:%s@127.0.0.1:%d", secret, ports[0]);
    m = manager_over(u, 1);
    l = SENTINEL;
    CHECK_ST(fl_lock_acquire(m, fresh_name("acl-wrong"), 5000, 0, &l), FL_UNAVAILABLE);
    CHECK(l == SENTINEL);
    CHECK(strstr(fl_last_error_message(), "authentication failed") != NULL);
    CHECK(strstr(fl_last_error_message(), hostport) != NULL);
    CHECK(strstr(fl_last_error_message(), secret) == NULL);
    CHECK_ST(fl_release_by_token(m, "acl-wrong", "t"), FL_UNAVAILABLE);
    CHECK(strstr(fl_last_error_message(), secret) == NULL);
    fl_manager_free(m);

    /* Password only (the default user has none here: also refused), and a bad URL. */
    snprintf(url, sizeof url, "redis://:%s@127.0.0.1:%d", secret, ports[0]);
    m = manager_over(u, 1);
    CHECK_ST(fl_lock_try_acquire(m, "acl-wrong", 5000, &l), FL_UNAVAILABLE);
    CHECK(strstr(fl_last_error_message(), secret) == NULL);
    fl_manager_free(m);
    snprintf(url, sizeof url, "redis://fl-c-user:%s@127.0.0.1:99999", secret);
    m = SENTINEL;
    CHECK_ST(fl_manager_new(u, 1, NULL, &m), FL_INVALID_ARGUMENT);
    CHECK(strstr(fl_last_error_message(), secret) == NULL);
    CHECK(m == SENTINEL);

    /* The password as an option, for a URL with the user only; an empty one is refused. */
    {
        fl_manager_options *o = NULL;
        CHECK_ST(fl_manager_options_new(&o), FL_OK);
        CHECK_ST(fl_manager_options_set_password(o, NULL), FL_INVALID_ARGUMENT);
        CHECK_ST(fl_manager_options_set_password(o, "right-pw-42"), FL_OK);
        snprintf(url, sizeof url, "redis://fl-c-user@127.0.0.1:%d", ports[0]);
        m = NULL;
        CHECK_ST(fl_manager_new(u, 1, o, &m), FL_OK);
        l = NULL;
        CHECK_ST(fl_lock_acquire(m, fresh_name("acl-option"), 5000, 2000, &l), FL_OK);
        CHECK_ST(fl_lock_release(l), FL_OK);
        fl_lock_free(l);
        fl_manager_free(m);
        CHECK_ST(fl_manager_options_set_password(o, ""), FL_OK);
        m = SENTINEL;
        CHECK_ST(fl_manager_new(u, 1, o, &m), FL_INVALID_ARGUMENT);
        CHECK(strstr(fl_last_error_message(), "password is empty") != NULL);
        CHECK(m == SENTINEL);
        fl_manager_options_free(o);
    }

    CHECK(raw_cmd(ports[0], val, sizeof val, 3, (const char **)deluser) == ':');
}

/* fl_set_event_callback */

struct events_seen {
    pthread_mutex_t mu;
    char log[32768]; /* "level message fields\n" per event, cut when full */
    size_t len;
    int calls;
    int bad_level;
    int reentry_checked;
    fl_status reentry_status;
};

static void on_event(fl_event_level level, const char *message, const char *fields, void *user_data) {
    struct events_seen *seen = user_data;
    pthread_mutex_lock(&seen->mu);
    seen->calls++;
    if (level > FL_EVENT_ERROR || !message || !fields) seen->bad_level++;
    if (seen->len < sizeof seen->log) {
        int n = snprintf(seen->log + seen->len, sizeof seen->log - seen->len, "%u %s %s\n",
                         (unsigned)level, message ? message : "(null)", fields ? fields : "(null)");
        if (n > 0) seen->len += (size_t)n;
        if (seen->len > sizeof seen->log - 1) seen->len = sizeof seen->log - 1;
    }
    if (!seen->reentry_checked) {
        /* Not allowed from inside the callback: refused, not a deadlock. */
        seen->reentry_checked = 1;
        seen->reentry_status = fl_set_event_callback(NULL, NULL, 0);
    }
    pthread_mutex_unlock(&seen->mu);
}

/* Whether the events log holds `needle`, waiting up to ms for it. */
static bool events_contain(struct events_seen *seen, const char *needle, long ms) {
    long long until = now_ms() + ms;
    for (;;) {
        bool found;
        pthread_mutex_lock(&seen->mu);
        found = strstr(seen->log, needle) != NULL;
        pthread_mutex_unlock(&seen->mu);
        if (found || now_ms() > until) return found;
        sleep_ms(10);
    }
}

static void test_event_callback(void) {
    static struct events_seen seen;
    fl_manager *m = single_manager();
    fl_lock *l = NULL;
    const char *name = fresh_name("observed"), *token = NULL;
    char want[160], val[64], tok[128];
    bool lost = false;
    long long until;
    int calls;

    memset(&seen, 0, sizeof seen);
    pthread_mutex_init(&seen.mu, NULL);
    CHECK_INVALID(fl_set_event_callback(on_event, &seen, 5), "min_level");
    CHECK_INVALID(fl_set_event_callback(on_event, &seen, 0xFFFFFFFFu), "min_level");
    CHECK_ST(fl_set_event_callback(on_event, &seen, FL_EVENT_DEBUG), FL_OK);

    CHECK_ST(fl_lock_acquire(m, name, 800, 2000, &l), FL_OK);
    CHECK_ST(fl_lock_token(l, &token), FL_OK);
    snprintf(tok, sizeof tok, "%s", token ? token : "?");
    CHECK_ST(fl_lock_auto_extend(l, 0), FL_OK);
    snprintf(want, sizeof want, "1 acquired lock=\"%s\" attempts=", name);
    CHECK(events_contain(&seen, want, 5000));

    /* Taken away behind the holder's back: the auto-extension finds it lost. */
    CHECK(raw2(ports[0], val, sizeof val, "DEL", name) == ':');
    until = now_ms() + 5000;
    while (!lost && now_ms() < until) {
        sleep_ms(20);
        CHECK_ST(fl_lock_is_lost(l, &lost), FL_OK);
    }
    CHECK(lost);
    snprintf(want, sizeof want, "3 lock lost lock=\"%s\"", name);
    CHECK(events_contain(&seen, want, 5000));
    CHECK_ST(fl_lock_release(l), FL_NOT_HELD);
    fl_lock_free(l);

    pthread_mutex_lock(&seen.mu);
    CHECK(strstr(seen.log, tok) == NULL); /* never the token */
    CHECK(strstr(seen.log, "0 acquire attempt") == NULL); /* trace is below the level */
    CHECK(seen.bad_level == 0);
    CHECK(seen.reentry_checked && seen.reentry_status == FL_INVALID_ARGUMENT);
    pthread_mutex_unlock(&seen.mu);

    /* Trace level adds every attempt. */
    CHECK_ST(fl_set_event_callback(on_event, &seen, FL_EVENT_TRACE), FL_OK);
    l = NULL;
    CHECK_ST(fl_lock_acquire(m, name, 2000, 2000, &l), FL_OK);
    CHECK_ST(fl_lock_release(l), FL_OK);
    fl_lock_free(l);
    snprintf(want, sizeof want, "0 acquire attempt lock=\"%s\"", name);
    CHECK(events_contain(&seen, want, 5000));

    /* Unregistered: once the call returns, the callback is never called again. */
    CHECK_ST(fl_set_event_callback(NULL, NULL, 12345), FL_OK);
    pthread_mutex_lock(&seen.mu);
    calls = seen.calls;
    pthread_mutex_unlock(&seen.mu);
    l = NULL;
    CHECK_ST(fl_lock_acquire(m, name, 2000, 2000, &l), FL_OK);
    CHECK_ST(fl_lock_release(l), FL_OK);
    fl_lock_free(l);
    sleep_ms(50);
    pthread_mutex_lock(&seen.mu);
    CHECK(seen.calls == calls);
    pthread_mutex_unlock(&seen.mu);
    CHECK_ST(fl_set_event_callback(NULL, NULL, 0), FL_OK); /* unregistering twice is fine */
    fl_manager_free(m);
    pthread_mutex_destroy(&seen.mu);
}

/* fl_set_metric_callback */

struct metrics_seen {
    pthread_mutex_t mu;
    char log[65536]; /* "name instrument value label=value ...\n" per sample of `name` */
    size_t len;
    const char *lock; /* only samples whose name label is this are logged */
    int calls;
    int bad;
    fl_status reentry_status;
    int reentry_checked;
};

static void on_metric(const char *name, fl_metric_instrument instrument, double value,
                      const char *const *label_names, const char *const *label_values,
                      size_t label_count, void *user_data) {
    struct metrics_seen *seen = user_data;
    bool mine = false;
    size_t i;
    pthread_mutex_lock(&seen->mu);
    seen->calls++;
    if (!name || instrument > FL_METRIC_GAUGE || (label_count && (!label_names || !label_values))) seen->bad++;
    for (i = 0; i < label_count; i++) {
        if (strcmp(label_names[i], "name") == 0 && strcmp(label_values[i], seen->lock) == 0) mine = true;
    }
    if (mine && seen->len < sizeof seen->log - 256) {
        int n = snprintf(seen->log + seen->len, sizeof seen->log - seen->len, "%s %u %g", name,
                         (unsigned)instrument, value);
        if (n > 0) seen->len += (size_t)n;
        for (i = 0; i < label_count && seen->len < sizeof seen->log - 128; i++) {
            n = snprintf(seen->log + seen->len, sizeof seen->log - seen->len, " %s=%s",
                         label_names[i], label_values[i]);
            if (n > 0) seen->len += (size_t)n;
        }
        seen->log[seen->len++] = '\n';
        seen->log[seen->len] = '\0';
    }
    if (!seen->reentry_checked) {
        seen->reentry_checked = 1;
        seen->reentry_status = fl_set_metric_callback(NULL, NULL);
    }
    pthread_mutex_unlock(&seen->mu);
}

static void test_metric_callback(void) {
    static struct metrics_seen seen;
    const char *u[] = {urls[0]};
    fl_manager *m = NULL;
    fl_manager_options *o = NULL;
    fl_lock *l = NULL, *other = NULL;
    const char *name = fresh_name("measured");
    const char *t = getenv("FL_TEST_SERVER_TIMEOUT_MS");
    int calls;

    memset(&seen, 0, sizeof seen);
    pthread_mutex_init(&seen.mu, NULL);
    seen.lock = name;
    CHECK_ST(fl_manager_options_new(&o), FL_OK);
    CHECK_INVALID(fl_manager_options_add_metric_name(o, NULL), "name");
    CHECK_INVALID(fl_manager_options_add_metric_name(NULL, name), "opts");
    CHECK_ST(fl_manager_options_add_metric_name(o, name), FL_OK);
    if (t && *t) CHECK_ST(fl_manager_options_set_server_timeout_ms(o, (uint64_t)atol(t)), FL_OK);
    CHECK_ST(fl_manager_new(u, 1, o, &m), FL_OK);
    fl_manager_options_free(o);
    CHECK_ST(fl_set_metric_callback(on_metric, &seen), FL_OK);

    CHECK_ST(fl_lock_acquire(m, name, 10000, 2000, &l), FL_OK);
    CHECK_ST(fl_lock_try_acquire(m, name, 10000, &other), FL_NOT_ACQUIRED);
    CHECK_ST(fl_lock_extend(l, 10000), FL_OK);
    CHECK_ST(fl_lock_release(l), FL_OK);
    fl_lock_free(l);

    pthread_mutex_lock(&seen.mu);
    CHECK(strstr(seen.log, "fencelock_acquire_wait_seconds 1 ") != NULL);
    CHECK(strstr(seen.log, " kind=mutex outcome=acquired name=") != NULL);
    CHECK(strstr(seen.log, " kind=mutex outcome=not_acquired name=") != NULL);
    CHECK(strstr(seen.log, "fencelock_acquire_attempts 1 1 kind=mutex outcome=acquired") != NULL);
    CHECK(strstr(seen.log, "fencelock_extensions_total 0 1 kind=mutex result=ok name=") != NULL);
    CHECK(strstr(seen.log, " kind=mutex outcome=released name=") != NULL);
    CHECK(seen.bad == 0);
    CHECK(seen.reentry_checked && seen.reentry_status == FL_INVALID_ARGUMENT);
    pthread_mutex_unlock(&seen.mu);

    /* Unregistered: once the call returns, the callback is never called again. */
    CHECK_ST(fl_set_metric_callback(NULL, NULL), FL_OK);
    pthread_mutex_lock(&seen.mu);
    calls = seen.calls;
    pthread_mutex_unlock(&seen.mu);
    l = NULL;
    CHECK_ST(fl_lock_acquire(m, name, 2000, 2000, &l), FL_OK);
    CHECK_ST(fl_lock_release(l), FL_OK);
    fl_lock_free(l);
    pthread_mutex_lock(&seen.mu);
    CHECK(seen.calls == calls);
    pthread_mutex_unlock(&seen.mu);
    fl_manager_free(m);
    pthread_mutex_destroy(&seen.mu);
}

/* fl_with_lock */

struct scope_state {
    int calls;
    int port;
    const char *name;
    uint64_t fence;
    bool lost_inside;
    bool held_throughout;
    long hold_ms;
    bool delete_key;
};

static void scope_cb(const fl_lock *lock, void *user_data) {
    struct scope_state *s = user_data;
    const char *tok = NULL;
    char val[128];
    uint64_t valid = 0;
    long long t0 = now_ms();
    s->calls++;
    fl_lock_fencing_token(lock, &s->fence);
    fl_lock_token(lock, &tok);
    fl_lock_validity_ms(lock, &valid);
    s->held_throughout = valid > 0;
    if (s->delete_key) {
        raw2(s->port, val, sizeof val, "DEL", s->name);
        /* The auto-extension notices within ttl/3 or so; wait for it, bounded. */
        while (!s->lost_inside && now_ms() - t0 < 5000) {
            sleep_ms(20);
            fl_lock_is_lost(lock, &s->lost_inside);
        }
        return;
    }
    while (now_ms() - t0 < s->hold_ms) {
        sleep_ms(50);
        if (raw2(s->port, val, sizeof val, "GET", s->name) != '$' || strcmp(val, tok) != 0)
            s->held_throughout = false;
    }
    fl_lock_is_lost(lock, &s->lost_inside);
}

static void test_with_lock_runs_the_callback_holding_the_lock(void) {
    fl_manager *m = single_manager();
    fl_lock *other = NULL;
    struct scope_state s;
    char val[64];

    memset(&s, 0, sizeof s);
    s.port = ports[0];
    s.name = fresh_name("scope");
    /* Held for 3x its TTL: only the auto-extension keeps it. */
    s.hold_ms = 2400;
    CHECK_ST(fl_with_lock(m, s.name, 800, -1, scope_cb, &s), FL_OK);
    CHECK(s.calls == 1);
    CHECK(s.fence > 0);
    CHECK(s.held_throughout);
    CHECK(!s.lost_inside);
    CHECK(raw2(ports[0], val, sizeof val, "GET", s.name) == '$' && strcmp(val, "(nil)") == 0);

    /* Not acquired: the callback is not called. */
    CHECK_ST(fl_lock_acquire(m, s.name, 10000, 0, &other), FL_OK);
    CHECK_ST(fl_with_lock(m, s.name, 1000, 0, scope_cb, &s), FL_NOT_ACQUIRED);
    CHECK(s.calls == 1);
    CHECK_ST(fl_lock_release(other), FL_OK);
    fl_lock_free(other);
    CHECK_INVALID(fl_with_lock(m, NULL, 1000, 0, scope_cb, &s), "name is NULL");
    CHECK_INVALID(fl_with_lock(NULL, "x", 1000, 0, scope_cb, &s), "manager is NULL");
    CHECK_INVALID(fl_with_lock(m, "x", 0, 0, scope_cb, &s), "ttl");
    CHECK_INVALID(fl_with_lock(m, "x", 1000, -3, scope_cb, &s), "wait_ms");
    CHECK(s.calls == 1);
    fl_manager_free(m);
}

static void test_with_lock_reports_a_lost_lock(void) {
    fl_manager *m = single_manager();
    struct scope_state s;
    memset(&s, 0, sizeof s);
    s.port = ports[0];
    s.name = fresh_name("scope-lost");
    s.delete_key = true;
    CHECK_ST(fl_with_lock(m, s.name, 900, 0, scope_cb, &s), FL_NOT_HELD);
    CHECK(strstr(fl_last_error_message(), "lost") != NULL);
    CHECK(s.calls == 1);
    CHECK(s.lost_inside);
    fl_manager_free(m);
}

/* Mutual exclusion among threads sharing one manager. */

#define N_THREADS 6
#define N_ROUNDS 8

struct excl_state {
    fl_manager *m;
    const char *name;
    atomic_int inside;
    atomic_int max_inside;
    atomic_int counter; /* read-sleep-write under the lock: a lost update shows a breach */
    atomic_int errors;
    atomic_ullong last_fence;
    atomic_int fence_regressions;
};

static void *excl_worker(void *arg) {
    struct excl_state *s = arg;
    int i;
    for (i = 0; i < N_ROUNDS; i++) {
        fl_lock *l = NULL;
        uint64_t fence = 0;
        int now, v;
        if (fl_lock_acquire(s->m, s->name, 10000, -1, &l) != FL_OK) {
            fprintf(stderr, "worker acquire: %s\n", fl_last_error_message());
            atomic_fetch_add(&s->errors, 1);
            continue;
        }
        now = atomic_fetch_add(&s->inside, 1) + 1;
        if (now > atomic_load(&s->max_inside)) atomic_store(&s->max_inside, now);
        fl_lock_fencing_token(l, &fence);
        if (fence <= atomic_load(&s->last_fence)) atomic_fetch_add(&s->fence_regressions, 1);
        atomic_store(&s->last_fence, fence);
        v = atomic_load(&s->counter);
        sleep_ms(2);
        atomic_store(&s->counter, v + 1);
        atomic_fetch_sub(&s->inside, 1);
        if (fl_lock_release(l) != FL_OK) atomic_fetch_add(&s->errors, 1);
        fl_lock_free(l);
    }
    return NULL;
}

static void test_threads_exclude_each_other(void) {
    struct excl_state s;
    pthread_t t[N_THREADS];
    int i;
    memset(&s, 0, sizeof s);
    s.m = single_manager();
    s.name = fresh_name("threads");
    atomic_init(&s.inside, 0);
    atomic_init(&s.max_inside, 0);
    atomic_init(&s.counter, 0);
    atomic_init(&s.errors, 0);
    atomic_init(&s.last_fence, 0);
    atomic_init(&s.fence_regressions, 0);
    for (i = 0; i < N_THREADS; i++) CHECK(pthread_create(&t[i], NULL, excl_worker, &s) == 0);
    for (i = 0; i < N_THREADS; i++) pthread_join(t[i], NULL);
    CHECK(atomic_load(&s.errors) == 0);
    CHECK(atomic_load(&s.max_inside) == 1);
    CHECK(atomic_load(&s.counter) == N_THREADS * N_ROUNDS);
    CHECK(atomic_load(&s.fence_regressions) == 0);
    fl_manager_free(s.m);
}

/* Each thread has its own last error. */
static void *error_thread(void *arg) {
    char *seen = arg;
    fl_lock *l = NULL;
    fl_lock_acquire(NULL, "x", 1000, 0, &l); /* "manager is NULL" on this thread */
    snprintf(seen, 128, "%s", fl_last_error_message());
    return NULL;
}

static void test_last_error_is_per_thread(void) {
    pthread_t t;
    char seen[128] = "";
    char small[8];
    size_t n;
    fl_lock *l = NULL;
    CHECK_INVALID(fl_lock_acquire((fl_manager *)NULL, NULL, 1000, 0, &l), "manager is NULL");
    CHECK_INVALID(fl_lock_extend(NULL, 5), "lock is NULL");
    CHECK(pthread_create(&t, NULL, error_thread, seen) == 0);
    pthread_join(t, NULL);
    CHECK(strstr(seen, "manager is NULL") != NULL);
    CHECK(strstr(fl_last_error_message(), "lock is NULL") != NULL); /* ours, untouched */
    n = fl_last_error_copy(small, sizeof small);
    CHECK(n == strlen(fl_last_error_message()));
    CHECK(strlen(small) == sizeof small - 1 && strncmp(small, fl_last_error_message(), 7) == 0);
    CHECK(fl_last_error_copy(NULL, 0) == n);
}

/* Mutual exclusion among processes: each child makes its own manager after fork(). */

#define N_PROCS 4
#define N_PROC_ROUNDS 5

static int child_main(const char *name, const char *path) {
    fl_manager *m = single_manager();
    int i, bad = 0;
    if (!m) return 2;
    for (i = 0; i < N_PROC_ROUNDS; i++) {
        fl_lock *l = NULL;
        char buf[32] = "";
        int fd, v;
        ssize_t r;
        if (fl_lock_acquire(m, name, 10000, -1, &l) != FL_OK) {
            bad++;
            continue;
        }
        /* Critical section: read the counter file, pause, write it back plus one. */
        fd = open(path, O_RDWR);
        r = read(fd, buf, sizeof buf - 1);
        v = r > 0 ? atoi(buf) : 0;
        sleep_ms(3);
        snprintf(buf, sizeof buf, "%d\n", v + 1);
        if (lseek(fd, 0, SEEK_SET) != 0 || write(fd, buf, strlen(buf)) < 0) bad++;
        close(fd);
        if (fl_lock_release(l) != FL_OK) bad++;
        fl_lock_free(l);
    }
    fl_manager_free(m);
    return bad ? 1 : 0;
}

static void test_processes_exclude_each_other(void) {
    char path[] = "/tmp/fencelock-c-counter-XXXXXX";
    const char *name = fresh_name("procs");
    pid_t kids[N_PROCS];
    int i, fd = mkstemp(path), status;
    char buf[32] = "";
    CHECK(fd >= 0);
    CHECK(write(fd, "0\n", 2) == 2);
    close(fd);
    fflush(NULL);
    for (i = 0; i < N_PROCS; i++) {
        kids[i] = fork();
        if (kids[i] == 0) exit(child_main(name, path));
        CHECK(kids[i] > 0);
    }
    for (i = 0; i < N_PROCS; i++) {
        CHECK(waitpid(kids[i], &status, 0) == kids[i]);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    fd = open(path, O_RDONLY);
    CHECK(read(fd, buf, sizeof buf - 1) > 0);
    close(fd);
    CHECK(atoi(buf) == N_PROCS * N_PROC_ROUNDS);
    unlink(path);
}

/* Redlock over three servers; then one is killed and the quorum (2 of 3) still works. */
static void test_redlock_survives_one_server_killed(void) {
    fl_manager *m = redlock_manager(), *m2 = redlock_manager();
    fl_lock *l = NULL, *other = SENTINEL;
    const char *name = fresh_name("redlock"), *tok = NULL;
    char val[128];
    uint64_t f1 = 0, f2 = 0;
    int i;
    long long t0;

    CHECK_ST(fl_lock_acquire(m, name, 10000, 0, &l), FL_OK);
    CHECK_ST(fl_lock_token(l, &tok), FL_OK);
    for (i = 1; i <= 3; i++)
        CHECK(raw2(ports[i], val, sizeof val, "GET", name) == '$' && strcmp(val, tok) == 0);
    CHECK_ST(fl_lock_fencing_token(l, &f1), FL_OK);
    CHECK_ST(fl_lock_try_acquire(m2, name, 10000, &other), FL_NOT_ACQUIRED);
    CHECK(other == SENTINEL);
    CHECK_ST(fl_lock_release(l), FL_OK);
    fl_lock_free(l);

    CHECK(kill_pid > 0 && kill(kill_pid, SIGKILL) == 0);
    t0 = now_ms();
    while (raw1(ports[3], val, sizeof val, "PING") != '!' && now_ms() - t0 < 5000) sleep_ms(10);
    CHECK(raw1(ports[3], val, sizeof val, "PING") == '!');

    l = NULL;
    CHECK_ST(fl_lock_acquire(m, name, 10000, 2000, &l), FL_OK);
    CHECK_ST(fl_lock_fencing_token(l, &f2), FL_OK);
    CHECK(f2 > f1);
    other = SENTINEL;
    CHECK_ST(fl_lock_try_acquire(m2, name, 10000, &other), FL_NOT_ACQUIRED);
    CHECK(other == SENTINEL);
    CHECK_ST(fl_lock_extend(l, 10000), FL_OK);
    CHECK_ST(fl_lock_release(l), FL_OK);
    fl_lock_free(l);

    /* The scoped form too. */
    {
        struct scope_state s;
        memset(&s, 0, sizeof s);
        s.port = ports[1];
        s.name = name;
        s.hold_ms = 100;
        CHECK_ST(fl_with_lock(m2, name, 5000, 2000, scope_cb, &s), FL_OK);
        CHECK(s.calls == 1 && s.fence > f2);
    }
    fl_manager_free(m);
    fl_manager_free(m2);
}

/* Inspection without acquiring (issue 22): the quorum's view; a classic SET NX PX counts. */
/* Who holds a lock: a manager with a holder label leaves a note; fl_manager_holder reads it. */
static void test_holder_label_and_inspection(void) {
    const char *u[] = {urls[0]};
    fl_manager *labelled = NULL, *defaulted = NULL, *plain = single_manager(), *bad = NULL;
    fl_manager_options *o = NULL;
    fl_lock *l = NULL;
    fl_holder h;
    const char *name = fresh_name("who");
    uint64_t fence = 0;
    char expected[64];

    CHECK_ST(fl_manager_options_new(&o), FL_OK);
    CHECK_INVALID(fl_manager_options_set_holder(NULL, "x"), "opts");
    CHECK_ST(fl_manager_options_set_holder(o, "two\nlines"), FL_OK);
    CHECK_INVALID(fl_manager_new(u, 1, o, &bad), "control characters");
    CHECK_ST(fl_manager_options_set_holder(o, "batch-7 (nightly)"), FL_OK);
    CHECK_ST(fl_manager_new(u, 1, o, &labelled), FL_OK);
    CHECK_ST(fl_manager_options_set_holder(o, NULL), FL_OK);
    CHECK_ST(fl_manager_new(u, 1, o, &defaulted), FL_OK);
    fl_manager_options_free(o);

    CHECK_INVALID(fl_manager_holder(plain, name, NULL), "out");
    memset(&h, 0xff, sizeof h);
    CHECK_ST(fl_manager_holder(plain, name, &h), FL_OK);
    CHECK(!h.held && !h.noted && h.label[0] == 0);

    CHECK_ST(fl_lock_acquire(labelled, name, 5000, 0, &l), FL_OK);
    CHECK_ST(fl_lock_fencing_token(l, &fence), FL_OK);
    CHECK_ST(fl_manager_holder(plain, name, &h), FL_OK);
    CHECK(h.held && h.noted && h.remaining_ms > 3000 && h.remaining_ms <= 5000);
    CHECK(strcmp(h.label, "batch-7 (nightly)") == 0);
    CHECK(h.fencing_token == fence && h.since_ms > 1700000000000LL);
    CHECK_ST(fl_lock_release(l), FL_OK);
    fl_lock_free(l);

    CHECK_ST(fl_lock_acquire(defaulted, name, 5000, 0, &l), FL_OK);
    CHECK_ST(fl_manager_holder(plain, name, &h), FL_OK);
    snprintf(expected, sizeof expected, ":%ld", (long)getpid());
    CHECK(h.noted && strlen(h.label) > strlen(expected));
    CHECK(strcmp(h.label + strlen(h.label) - strlen(expected), expected) == 0);
    CHECK_ST(fl_lock_release(l), FL_OK);
    fl_lock_free(l);

    /* Without a label: held, no note. */
    CHECK_ST(fl_lock_acquire(plain, name, 5000, 0, &l), FL_OK);
    CHECK_ST(fl_manager_holder(labelled, name, &h), FL_OK);
    CHECK(h.held && !h.noted && h.label[0] == 0 && h.fencing_token == 0);
    CHECK_ST(fl_lock_release(l), FL_OK);
    fl_lock_free(l);
    /* A semaphore's noted holders: the labelled lease listed, the plain one only counted. */
    {
        fl_semaphore *ls = NULL, *ps = NULL;
        fl_lock *a = NULL, *b = NULL;
        fl_holder list[4];
        size_t count = 99;
        fl_semaphore_occupancy occ;
        const char *sname = fresh_name("who-sem");
        CHECK_ST(fl_semaphore_new(labelled, sname, 3, &ls), FL_OK);
        CHECK_ST(fl_semaphore_new(plain, sname, 3, &ps), FL_OK);
        CHECK_ST(fl_semaphore_acquire(ls, 1, NULL, 5000, 0, 0, &a), FL_OK);
        CHECK_ST(fl_semaphore_acquire(ps, 1, NULL, 5000, 0, 0, &b), FL_OK);
        CHECK_ST(fl_lock_fencing_token(a, &fence), FL_OK);
        CHECK_ST(fl_semaphore_state(ps, &occ), FL_OK);
        CHECK(occ.holders == 2);
        CHECK_INVALID(fl_semaphore_holders(ps, list, 4, NULL), "count");
        CHECK_INVALID(fl_semaphore_holders(ps, NULL, 4, &count), "capacity");
        CHECK_ST(fl_semaphore_holders(ps, NULL, 0, &count), FL_OK);
        CHECK(count == 1);
        CHECK_ST(fl_semaphore_holders(ps, list, 4, &count), FL_OK);
        CHECK(count == 1 && list[0].held && list[0].noted && list[0].fencing_token == fence);
        CHECK(strcmp(list[0].label, "batch-7 (nightly)") == 0 && list[0].remaining_ms > 3000);
        CHECK_ST(fl_lock_release(a), FL_OK);
        CHECK_ST(fl_lock_release(b), FL_OK);
        fl_lock_free(a);
        fl_lock_free(b);
        CHECK_ST(fl_semaphore_holders(ps, list, 4, &count), FL_OK);
        CHECK(count == 0);
        fl_semaphore_free(ls);
        fl_semaphore_free(ps);
    }
    fl_manager_free(labelled);
    fl_manager_free(defaulted);
    fl_manager_free(plain);
}

static void test_is_locked_and_remaining(void) {
    fl_manager *m = single_manager(), *r = redlock_manager();
    fl_lock *l = NULL;
    const char *name = fresh_name("inspect"), *rname = fresh_name("inspect-r");
    const char *argv[6];
    char val[64];
    bool held = true;
    int64_t left = 0;

    CHECK_ST(fl_manager_is_locked(m, name, &held), FL_OK);
    CHECK(!held);
    CHECK_ST(fl_manager_remaining_ms(m, name, &left), FL_OK);
    CHECK(left == -1);
    CHECK_ST(fl_lock_acquire(m, name, 5000, 0, &l), FL_OK);
    CHECK_ST(fl_manager_is_locked(m, name, &held), FL_OK);
    CHECK(held);
    CHECK_ST(fl_manager_remaining_ms(m, name, &left), FL_OK);
    CHECK(left > 3000 && left <= 5000);
    CHECK_ST(fl_lock_release(l), FL_OK);
    fl_lock_free(l);
    CHECK_ST(fl_manager_is_locked(m, name, &held), FL_OK);
    CHECK(!held);

    /* A classic SET NX PX of another client counts as held; without expiry: INT64_MAX. */
    argv[0] = "SET"; argv[1] = name; argv[2] = "someone-else"; argv[3] = "NX"; argv[4] = "PX"; argv[5] = "2000";
    CHECK(raw_cmd(ports[0], val, sizeof val, 6, argv) == '+');
    CHECK_ST(fl_manager_remaining_ms(m, name, &left), FL_OK);
    CHECK(left > 500 && left <= 2000);
    argv[1] = rname;
    CHECK(raw_cmd(ports[0], val, sizeof val, 3, argv) == '+');
    CHECK_ST(fl_manager_remaining_ms(m, rname, &left), FL_OK);
    CHECK(left == INT64_MAX);

    /* Redlock: one server of three holding it is no quorum; two under one token are. */
    argv[1] = rname; argv[2] = "tok-a";
    CHECK(raw_cmd(ports[1], val, sizeof val, 6, argv) == '+');
    CHECK_ST(fl_manager_is_locked(r, rname, &held), FL_OK);
    CHECK(!held);
    argv[5] = "3000";
    CHECK(raw_cmd(ports[2], val, sizeof val, 6, argv) == '+');
    CHECK_ST(fl_manager_remaining_ms(r, rname, &left), FL_OK);
    CHECK(left > 1500 && left <= 3000); /* the quorum's guarantee: the shorter TTL */

    /* Bad input before any call; out untouched on failure. */
    held = true;
    CHECK_INVALID(fl_manager_is_locked(NULL, name, &held), "manager");
    CHECK_INVALID(fl_manager_is_locked(m, NULL, &held), "name");
    CHECK_INVALID(fl_manager_is_locked(m, name, NULL), "out");
    CHECK_INVALID(fl_manager_is_locked(m, "", &held), "empty");
    CHECK(held);
    left = 7;
    CHECK_INVALID(fl_manager_remaining_ms(m, "fencelock:{1}:fence", &left), "reserved");
    CHECK(left == 7);
    fl_manager_free(m);
    fl_manager_free(r);
}

/* ---------------------------------------------------------------- Redis Cluster */

static int cluster_ports[6];
static char cluster_url[128];

/* GET on the node that holds the key (every other node answers MOVED): '$' and the value. */
static char cluster_get(const char *key, char *val, size_t cap) {
    int i;
    for (i = 0; i < 6; i++)
        if (raw2(cluster_ports[i], val, cap, "GET", key) == '$') return '$';
    return 0;
}

static fl_manager *cluster_manager(uint32_t replica_ack) {
    const char *u[] = {cluster_url};
    fl_manager *m = NULL;
    fl_manager_options *o = NULL;
    const char *t = getenv("FL_TEST_SERVER_TIMEOUT_MS");
    CHECK_ST(fl_manager_options_new(&o), FL_OK);
    CHECK_ST(fl_manager_options_set_server_timeout_ms(o, t && *t ? (uint64_t)atol(t) : 2000), FL_OK);
    /* A cluster connection reaches every node: slow under valgrind. */
    CHECK_ST(fl_manager_options_set_connect_timeout_ms(o, 20000), FL_OK);
    if (replica_ack) CHECK_ST(fl_manager_options_set_replica_ack(o, replica_ack, 1000), FL_OK);
    CHECK_ST(fl_manager_new(u, 1, o, &m), FL_OK);
    fl_manager_options_free(o);
    return m;
}

static void test_a_cluster_is_one_server(void) {
    fl_manager *m = cluster_manager(0), *m2 = cluster_manager(0);
    fl_lock *l = NULL, *other = SENTINEL;
    const char *names[] = {fresh_name("cluster"), "{tag}c-lock", "c-open{", "}{c-x"};
    const char *tok = NULL;
    char val[256];
    uint64_t f1 = 0, f2 = 0;
    size_t i;

    for (i = 0; i < sizeof names / sizeof names[0]; i++) {
        l = NULL;
        CHECK_ST(fl_lock_acquire(m, names[i], 10000, 2000, &l), FL_OK);
        CHECK_ST(fl_lock_token(l, &tok), FL_OK);
        CHECK(cluster_get(names[i], val, sizeof val) == '$' && strcmp(val, tok) == 0);
        CHECK_ST(fl_lock_fencing_token(l, &f1), FL_OK);
        other = SENTINEL;
        CHECK_ST(fl_lock_try_acquire(m2, names[i], 10000, &other), FL_NOT_ACQUIRED);
        CHECK(other == SENTINEL);
        CHECK_ST(fl_lock_extend(l, 30000), FL_OK);
        CHECK_ST(fl_lock_release(l), FL_OK);
        CHECK(cluster_get(names[i], val, sizeof val) == '$' && strcmp(val, "(nil)") == 0);
        fl_lock_free(l);
        l = NULL;
        CHECK_ST(fl_lock_acquire(m2, names[i], 10000, 2000, &l), FL_OK);
        CHECK_ST(fl_lock_fencing_token(l, &f2), FL_OK);
        CHECK(f2 > f1);
        CHECK_ST(fl_lock_release(l), FL_OK);
        fl_lock_free(l);
    }
    fl_manager_free(m);
    fl_manager_free(m2);

    /* Replica acknowledgment: the replicas are in sync, so every write is acknowledged. */
    m = cluster_manager(1);
    l = NULL;
    CHECK_ST(fl_lock_acquire(m, names[0], 10000, 2000, &l), FL_OK);
    CHECK_ST(fl_lock_extend(l, 10000), FL_OK);
    CHECK_ST(fl_lock_release(l), FL_OK);
    fl_lock_free(l);
    fl_manager_free(m);

    /* A cluster URL with a database is refused at once, without its password. */
    {
        const char *bad[] = {"redis+cluster://u:hunter2-secret@127.0.0.1:7000/2"};
        m = SENTINEL;
        CHECK_ST(fl_manager_new(bad, 1, NULL, &m), FL_INVALID_ARGUMENT);
        CHECK(m == SENTINEL);
        CHECK(strstr(fl_last_error_message(), "no database") != NULL);
        CHECK(strstr(fl_last_error_message(), "hunter2-secret") == NULL);
    }
}

static void test_acquire_many_takes_every_name_or_none(void) {
    fl_manager *m = single_manager();
    fl_lock *l = NULL, *other = SENTINEL;
    const char *names[] = {fresh_name("many-a"), fresh_name("many-b"), fresh_name("many-c")};
    const char *tok = NULL, *n = NULL;
    char val[256];
    uint64_t f0 = 0, f2 = 0;
    size_t count = 0;

    CHECK_ST(fl_lock_acquire_many(m, names, 3, NULL, 10000, 0, 0, &l), FL_OK);
    CHECK_ST(fl_lock_token(l, &tok), FL_OK);
    CHECK(raw2(ports[0], val, sizeof val, "GET", names[2]) == '$' && strcmp(val, tok) == 0);
    CHECK_ST(fl_lock_name_count(l, &count), FL_OK);
    CHECK(count == 3);
    CHECK_ST(fl_lock_name_at(l, 1, &n), FL_OK);
    CHECK(strcmp(n, names[1]) == 0);
    CHECK_ST(fl_lock_name(l, &n), FL_OK);
    CHECK(strcmp(n, names[0]) == 0);
    CHECK_ST(fl_lock_fencing_token_at(l, 0, &f0), FL_OK);
    CHECK_ST(fl_lock_fencing_token_at(l, 2, &f2), FL_OK);
    CHECK(f0 > 0 && f2 > 0);
    CHECK_INVALID(fl_lock_name_at(l, 3, &n), "out of range");
    CHECK_INVALID(fl_lock_fencing_token_at(l, 3, &f0), "out of range");
    /* Another lock on an overlapping set takes none of its names. */
    {
        const char *overlap[] = {fresh_name("many-free"), names[1]};
        CHECK_ST(fl_lock_acquire_many(m, overlap, 2, NULL, 10000, 0, 0, &other), FL_NOT_ACQUIRED);
        CHECK(other == SENTINEL);
        CHECK(fl_last_error_server_count() == 1);
        CHECK(raw2(ports[0], val, sizeof val, "GET", overlap[0]) == '$' && strcmp(val, "(nil)") == 0);
    }
    CHECK_ST(fl_lock_extend(l, 20000), FL_OK);
    CHECK(raw2(ports[0], val, sizeof val, "PTTL", names[1]) == ':' && atol(val) > 15000);
    CHECK_ST(fl_lock_release(l), FL_OK);
    CHECK(raw2(ports[0], val, sizeof val, "GET", names[0]) == '$' && strcmp(val, "(nil)") == 0);
    fl_lock_free(l);

    /* Bad input, before any call. */
    {
        const char *twice[] = {names[0], names[0]};
        const char *with_null[] = {names[0], NULL};
        CHECK_INVALID(fl_lock_acquire_many(m, twice, 2, NULL, 1000, 0, 0, &other), "given twice");
        CHECK_INVALID(fl_lock_acquire_many(m, with_null, 2, NULL, 1000, 0, 0, &other), "names[1]");
        CHECK_INVALID(fl_lock_acquire_many(m, NULL, 2, NULL, 1000, 0, 0, &other), "names is NULL");
        CHECK_INVALID(fl_lock_acquire_many(m, names, 0, NULL, 1000, 0, 0, &other), "1 to 64 names");
        CHECK_INVALID(fl_lock_acquire_many(m, names, 65, NULL, 1000, 0, 0, &other), "1 to 64 names");
        CHECK_INVALID(fl_lock_acquire_many(m, names, 2, NULL, 1000, 0, 0x8, &other), "unknown acquire flags");
        CHECK(other == SENTINEL);
    }
    fl_manager_free(m);
}

/* The coordination family (issue 34): fl_semaphore and fl_rwlock; their leases are fl_locks. */
static void test_semaphore_limit_kinds_and_state(void) {
    fl_manager *m = single_manager();
    fl_semaphore *s = NULL, *other_limit = NULL, *bad = SENTINEL;
    fl_lock *two = NULL, *one = NULL, *none = SENTINEL, *plain = SENTINEL;
    fl_semaphore_occupancy st;
    uint32_t kind = 99, permits = 99;
    uint64_t f1 = 0, f2 = 0;
    const char *name = fresh_name("sem");

    CHECK_INVALID(fl_semaphore_new(m, name, 0, &bad), "limit");
    CHECK_INVALID(fl_semaphore_new(m, "", 2, &bad), "empty");
    CHECK_INVALID(fl_semaphore_new(NULL, name, 2, &bad), "manager");
    CHECK(bad == SENTINEL);
    CHECK_ST(fl_semaphore_new(m, name, 3, &s), FL_OK);
    CHECK_INVALID(fl_semaphore_acquire(s, 4, NULL, 10000, 0, 0, &none), "permits");
    CHECK_INVALID(fl_semaphore_acquire(s, 1, NULL, 10000, 0, 0x8, &none), "unknown acquire flags");
    CHECK_ST(fl_semaphore_acquire(s, 2, NULL, 10000, 0, 0, &two), FL_OK);
    CHECK_ST(fl_lock_kind(two, &kind, &permits), FL_OK);
    CHECK(kind == FL_KIND_SEMAPHORE && permits == 2);
    CHECK_ST(fl_semaphore_try_acquire(s, 2, 10000, &none), FL_NOT_ACQUIRED);
    CHECK(none == SENTINEL);
    CHECK_ST(fl_semaphore_try_acquire(s, 1, 10000, &one), FL_OK);
    CHECK_ST(fl_lock_fencing_token(two, &f2), FL_OK);
    CHECK_ST(fl_lock_fencing_token(one, &f1), FL_OK);
    CHECK(f1 > f2);
    CHECK_ST(fl_semaphore_state(s, &st), FL_OK);
    CHECK(st.limit == 3 && st.held == 3 && st.holders == 2 && st.waiters == 0);
    /* Another limit while permits are held, and another kind on the name. */
    CHECK_ST(fl_semaphore_new(m, name, 5, &other_limit), FL_OK);
    CHECK_ST(fl_semaphore_acquire(other_limit, 1, NULL, 10000, 0, 0, &none), FL_INVALID_ARGUMENT);
    CHECK(strstr(fl_last_error_message(), "limit 3") != NULL);
    CHECK_ST(fl_lock_acquire(m, name, 10000, 0, &plain), FL_WRONG_KIND);
    CHECK(strstr(fl_last_error_message(), "as a semaphore") != NULL);
    CHECK(plain == SENTINEL);
    {
        const char *tok = NULL;
        uint64_t validity = 0;
        CHECK_ST(fl_lock_token(one, &tok), FL_OK);
        CHECK_ST(fl_semaphore_extend_by_token(s, tok, 20000, &validity), FL_OK);
        CHECK(validity > 15000 && validity <= 20000);
        CHECK_ST(fl_semaphore_extend_by_token(s, "nobody", 20000, NULL), FL_NOT_HELD);
    }
    CHECK_ST(fl_lock_release(two), FL_OK);
    CHECK_ST(fl_lock_release(one), FL_OK);
    CHECK_ST(fl_semaphore_state(s, &st), FL_OK);
    CHECK(st.held == 0 && st.holders == 0);
    fl_lock_free(two);
    fl_lock_free(one);
    fl_semaphore_free(other_limit);
    fl_semaphore_free(s);
    fl_semaphore_free(NULL);
    fl_manager_free(m);
}

struct pool {
    pthread_mutex_t mu;
    int inside, most, runs;
};

static void pool_cb(const fl_lock *lease, void *user_data) {
    struct pool *p = user_data;
    uint32_t kind = 0;
    fl_lock_kind(lease, &kind, NULL);
    pthread_mutex_lock(&p->mu);
    p->inside++;
    if (p->inside > p->most) p->most = p->inside;
    pthread_mutex_unlock(&p->mu);
    sleep_ms(20);
    pthread_mutex_lock(&p->mu);
    p->inside--;
    if (kind == FL_KIND_SEMAPHORE) p->runs++;
    pthread_mutex_unlock(&p->mu);
}

struct pool_arg {
    fl_semaphore *s;
    struct pool *pool;
    fl_status st;
};

static void *pool_worker(void *arg) {
    struct pool_arg *a = arg;
    a->st = fl_with_semaphore(a->s, 1, 10000, -1, pool_cb, a->pool);
    return NULL;
}

static void test_with_semaphore_caps_threads_at_the_limit(void) {
    fl_manager *m = single_manager();
    fl_semaphore *s = NULL;
    struct pool pool = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0};
    struct pool_arg args[5];
    pthread_t t[5];
    int i;

    CHECK_ST(fl_semaphore_new(m, fresh_name("sem-pool"), 2, &s), FL_OK);
    CHECK_INVALID(fl_with_semaphore(s, 1, 1000, 0, NULL, NULL), "callback");
    for (i = 0; i < 5; i++) {
        args[i] = (struct pool_arg){s, &pool, FL_PANIC};
        pthread_create(&t[i], NULL, pool_worker, &args[i]);
    }
    for (i = 0; i < 5; i++) {
        pthread_join(t[i], NULL);
        CHECK(args[i].st == FL_OK);
    }
    CHECK(pool.runs == 5);
    CHECK(pool.most == 2);
    fl_semaphore_free(s);
    fl_manager_free(m);
}

static void test_rwlock_readers_writer_and_upgrade(void) {
    fl_manager *m = single_manager();
    fl_rwlock *rw = NULL, *bad = SENTINEL;
    fl_lock *r1 = NULL, *r2 = NULL, *w = NULL, *none = SENTINEL;
    fl_rwlock_occupancy st;
    uint32_t kind = 99;
    uint64_t fr = 0, fw = 0;
    const char *name = fresh_name("rw");

    CHECK_INVALID(fl_rwlock_new(m, "", &bad), "empty");
    CHECK(bad == SENTINEL);
    CHECK_ST(fl_rwlock_new(m, name, &rw), FL_OK);
    CHECK_INVALID(fl_rwlock_acquire(rw, 7, NULL, 1000, 0, 0, &none), "mode");
    CHECK_ST(fl_rwlock_acquire(rw, FL_RW_READ, "reader-1", 10000, 0, 0, &r1), FL_OK);
    CHECK_ST(fl_rwlock_acquire(rw, FL_RW_READ, NULL, 10000, 0, 0, &r2), FL_OK);
    CHECK_ST(fl_lock_kind(r1, &kind, NULL), FL_OK);
    CHECK(kind == FL_KIND_READ);
    CHECK_ST(fl_rwlock_state(rw, &st), FL_OK);
    CHECK(st.readers == 2 && !st.writer);
    CHECK_ST(fl_rwlock_try_acquire(rw, FL_RW_WRITE, 10000, &none), FL_NOT_ACQUIRED);
    /* A reader asking to write with its token: refused at once, never a deadlock. */
    CHECK_ST(fl_rwlock_acquire(rw, FL_RW_WRITE, "reader-1", 10000, -1, 0, &none), FL_WRONG_KIND);
    CHECK(strstr(fl_last_error_message(), "read share") != NULL);
    CHECK(none == SENTINEL);
    CHECK_ST(fl_lock_fencing_token(r2, &fr), FL_OK);
    CHECK_ST(fl_rwlock_extend_by_token(rw, "reader-1", 20000, NULL), FL_OK);
    CHECK_ST(fl_lock_release(r1), FL_OK);
    CHECK_ST(fl_rwlock_release_by_token(rw, "reader-1"), FL_NOT_HELD);
    CHECK_ST(fl_lock_release(r2), FL_OK);
    CHECK_ST(fl_rwlock_acquire(rw, FL_RW_WRITE, NULL, 10000, 0, 0, &w), FL_OK);
    CHECK_ST(fl_lock_fencing_token(w, &fw), FL_OK);
    CHECK(fw > fr);
    CHECK_ST(fl_rwlock_state(rw, &st), FL_OK);
    CHECK(st.readers == 0 && st.writer);
    CHECK_ST(fl_rwlock_try_acquire(rw, FL_RW_READ, 10000, &none), FL_NOT_ACQUIRED);
    /* A reader's forever-wait behind the writer, stopped by the caller's callback. */
    {
        int calls = 0;
        CHECK_INVALID(fl_rwlock_acquire_interruptible(rw, FL_RW_READ, NULL, 10000, -1, NULL, NULL, &none),
                      "interrupted");
        CHECK_ST(fl_rwlock_acquire_interruptible(rw, FL_RW_READ, NULL, 10000, -1, interrupt_after_calls, &calls,
                                                 &none),
                 FL_CANCELLED);
        CHECK(calls >= 4 && none == SENTINEL);
    }
    CHECK_ST(fl_lock_release(w), FL_OK);
    {
        fl_lock *r3 = NULL;
        CHECK_ST(fl_rwlock_acquire_interruptible(rw, FL_RW_READ, NULL, 10000, -1, never_interrupt, NULL, &r3),
                 FL_OK);
        CHECK_ST(fl_lock_release(r3), FL_OK);
        fl_lock_free(r3);
    }
    fl_lock_free(r1);
    fl_lock_free(r2);
    fl_lock_free(w);
    fl_rwlock_free(rw);
    fl_rwlock_free(NULL);
    fl_manager_free(m);
}

/*
 * Leader election (issue 54): a term is a lock handle whose fencing token is the term number;
 * the leader is read at once or long-polled, each change pushed by the servers (terms of 30 s
 * and waits of 10 s: a change seen in time was not found by a timer at the term's end).
 */
static void test_election_campaign_proclaim_observe(void) {
    static fl_leader seen, now;
    fl_manager *m = single_manager();
    fl_election *e = NULL, *bad = NULL;
    fl_lock *term = NULL, *none = NULL, *plain = NULL;
    uint64_t term_number = 0;
    const char *name = fresh_name("election");
    CHECK_INVALID(fl_election_new(m, "", &bad), "name");
    CHECK_ST(fl_election_new(m, name, &e), FL_OK);
    CHECK_INVALID(fl_election_campaign(e, NULL, 30000, -1, &term), "value");
    CHECK_ST(fl_election_leader(e, &seen), FL_OK);
    CHECK(!seen.leads && seen.value_len == 0);
    CHECK_ST(fl_election_observe(e, &seen, 0, &now), FL_OK);
    CHECK(!now.leads);
    CHECK_ST(fl_election_campaign(e, "host-a:8080", 30000, -1, &term), FL_OK);
    CHECK_ST(fl_election_observe(e, &seen, 10000, &now), FL_OK);
    CHECK(now.leads && now.value_len == 11 && strcmp(now.value, "host-a:8080") == 0);
    CHECK_ST(fl_lock_fencing_token(term, &term_number), FL_OK);
    CHECK(now.fencing_token == term_number && now.remaining_ms > 0);
    CHECK(now.since_ms > 1700000000000LL);
    seen = now;
    CHECK_ST(fl_election_campaign(e, "b", 30000, 0, &none), FL_NOT_ACQUIRED);
    CHECK(none == NULL);
    CHECK_ST(fl_election_proclaim(term, "host-a:9090"), FL_OK);
    CHECK_ST(fl_election_observe(e, &seen, 10000, &seen), FL_OK);
    CHECK(seen.leads && strcmp(seen.value, "host-a:9090") == 0 && seen.fencing_token == now.fencing_token);
    {
        /* A stateful observer: the state now, a wait that runs out, then the resign. */
        fl_observer *o = NULL;
        bool reported = false;
        CHECK_ST(fl_election_observer_new(e, &o), FL_OK);
        CHECK_ST(fl_observer_next(o, 10000, &now, &reported), FL_OK);
        CHECK(reported && now.leads && strcmp(now.value, "host-a:9090") == 0);
        CHECK_ST(fl_observer_next(o, 20, &now, &reported), FL_OK);
        CHECK(!reported);
        CHECK_ST(fl_lock_release(term), FL_OK);
        CHECK_ST(fl_observer_next(o, 10000, &now, &reported), FL_OK);
        CHECK(reported && !now.leads);
        CHECK_INVALID(fl_observer_next(o, -2, &now, &reported), "wait");
        fl_observer_free(o);
    }
    CHECK_ST(fl_election_observe(e, &seen, 10000, &now), FL_OK);
    CHECK(!now.leads);
    fl_lock_free(term);
    CHECK_ST(fl_lock_acquire(m, fresh_name("plain"), 30000, 0, &plain), FL_OK);
    CHECK_INVALID(fl_election_proclaim(plain, "x"), "not an election's term");
    fl_lock_free(plain);
    fl_election_free(e);
    fl_manager_free(m);
}

int main(void) {
    const char *p = getenv("FL_TEST_PORTS"), *k = getenv("FL_TEST_KILL_PID");
    int i;
    if (!p || sscanf(p, "%d %d %d %d", &ports[0], &ports[1], &ports[2], &ports[3]) != 4) {
        fprintf(stderr, "set FL_TEST_PORTS to four redis-server ports (tests/run.sh does)\n");
        return 2;
    }
    for (i = 0; i < 4; i++) snprintf(urls[i], sizeof urls[i], "redis://127.0.0.1:%d", ports[i]);
    kill_pid = k ? (pid_t)atol(k) : 0;
    {
        const char *c = getenv("FL_TEST_CLUSTER_PORTS");
        if (!c || sscanf(c, "%d %d %d %d %d %d", &cluster_ports[0], &cluster_ports[1], &cluster_ports[2],
                         &cluster_ports[3], &cluster_ports[4], &cluster_ports[5]) != 6) {
            fprintf(stderr, "set FL_TEST_CLUSTER_PORTS to a cluster's six ports (tests/run.sh does)\n");
            return 2;
        }
        snprintf(cluster_url, sizeof cluster_url, "redis+cluster://127.0.0.1:%d,127.0.0.1:%d", cluster_ports[0],
                 cluster_ports[1]);
    }
    fprintf(stderr, "fencelock %s\n", fl_version());

    run_test("version_and_status_names", test_version_and_status_names);
    run_test("election_campaign_proclaim_observe", test_election_campaign_proclaim_observe);
    run_test("free_functions_accept_null", test_free_functions_accept_null);
    run_test("manager_new_rejects_bad_input", test_manager_new_rejects_bad_input);
    run_test("lock_calls_reject_bad_input", test_lock_calls_reject_bad_input);
    run_test("acquire_query_extend_release", test_acquire_query_extend_release);
    run_test("try_acquire_and_wait_limits", test_try_acquire_and_wait_limits);
    run_test("interruptible_acquire", test_interruptible_acquire);
    run_test("interop_with_the_classic_set_nx_lock", test_interop_with_the_classic_set_nx_lock);
    run_test("caller_token_release_by_token_and_detach", test_caller_token_release_by_token_and_detach);
    run_test("key_prefix_and_options", test_key_prefix_and_options);
    run_test("free_without_release_releases_in_background", test_free_without_release_releases_in_background);
    run_test("auto_extend_keeps_an_explicit_lock_alive", test_auto_extend_keeps_an_explicit_lock_alive);
    run_test("lock_outlives_its_manager", test_lock_outlives_its_manager);
    run_test("lost_lock_is_reported", test_lost_lock_is_reported);
    run_test("on_lost_callback_reports_why_once", test_on_lost_callback_reports_why_once);
    run_test("is_held_and_extend_by_token", test_is_held_and_extend_by_token);
    run_test("redis_error_and_unavailable", test_redis_error_and_unavailable);
    run_test("tls_options", test_tls_options);
    run_test("connect_timeout_option", test_connect_timeout_option);
    run_test("refused_attempts_option", test_refused_attempts_option);
    run_test("acl_user_and_wrong_password", test_acl_user_and_wrong_password);
    run_test("event_callback", test_event_callback);
    run_test("metric_callback", test_metric_callback);
    run_test("with_lock_runs_the_callback_holding_the_lock", test_with_lock_runs_the_callback_holding_the_lock);
    run_test("with_lock_reports_a_lost_lock", test_with_lock_reports_a_lost_lock);
    run_test("last_error_is_per_thread", test_last_error_is_per_thread);
    run_test("threads_exclude_each_other", test_threads_exclude_each_other);
    run_test("processes_exclude_each_other", test_processes_exclude_each_other);
    run_test("redlock_survives_one_server_killed", test_redlock_survives_one_server_killed);
    run_test("a_cluster_is_one_server", test_a_cluster_is_one_server);
    run_test("is_locked_and_remaining", test_is_locked_and_remaining);
    run_test("holder_label_and_inspection", test_holder_label_and_inspection);
    run_test("acquire_many_takes_every_name_or_none", test_acquire_many_takes_every_name_or_none);
    run_test("semaphore_limit_kinds_and_state", test_semaphore_limit_kinds_and_state);
    run_test("with_semaphore_caps_threads_at_the_limit", test_with_semaphore_caps_threads_at_the_limit);
    run_test("rwlock_readers_writer_and_upgrade", test_rwlock_readers_writer_and_upgrade);

    return summary();
}
