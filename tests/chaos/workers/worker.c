/* A worker in C for the cross-language fault tests (tests/chaos/tests/mixed.rs,
 * mixed_faults.rs) and the demo (ci/demo.sh), built against the INSTALLED libfencelock:
 *
 *   cc worker.c $(pkg-config --cflags --libs fencelock) -o worker-c
 *   worker-c --servers URL[,URL...] --names A[,B...] --rounds N --hold-ms N --holder ID
 *            [--ttl-ms N] [--wait-ms N] [--server-timeout-ms N] [--duration-ms N]
 *            [--lease semaphore:LIMIT:COUNT | --lease rw:N | --lease election]
 *   worker-c hold --servers URL[,URL...] --name NAME --ttl-ms N [--wait-ms N]
 *            [--server-timeout-ms N] [--auto-extend] [--store URL --resource R --value V]
 *
 * Same protocol as worker.py: one `HOLD name=.. token=.. start_us=.. end_us=.. validity_us=..
 * holder=..` line per hold (start right after acquire returned, validity read after it, end
 * before release; wall-clock microseconds), `FAIL kind=K took_ms=N` per failed acquisition,
 * `RFAIL kind=K` per failed release, then `DONE acquired=N failed=M`; a lock whose validity
 * does not cover the hold plus SLACK_MS is released unused, with a `SHORT name=..
 * validity_us=.. holder=..` line. `--lease` as worker.py's: permits of a semaphore, or read
 * shares of a read-write lock with one write every N rounds, the kind ending the HOLD lines.
 *
 * `hold` is the interactive mode of `chaos-worker hold` (fencelock_chaos::paused has the
 * protocol): `ACQUIRED token=T start_us=S validity_us=V pid=P`, then stdin commands `WRITE`
 * (fenced store: the Lua check-and-set of fencelock_chaos::store byte for byte, with the
 * fencing token; unfenced store: a plain SET; both on the redis-server at --store, over a
 * plain socket) -> `WROTE fenced=accepted|rejected unfenced=written lost=BOOL end_us=E`
 * (`lost`: fl_lock_is_lost, read before the writes), and `RELEASE` -> `RELEASED
 * result=ok|KIND end_us=E`, then exit. A failed acquire: `ERROR kind=K message=...`, exit 2. */
#define _POSIX_C_SOURCE 200809L
#include <fencelock.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MAX_LIST 32
/* Room, past the hold, that the validity must leave before the worker uses a lock (a late
 * wake-up on a busy machine), as in worker.py. */
#define SLACK_MS 50

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
    case FL_WRONG_KIND: return "wrong_kind";
    default: return "error";
    }
}

static void usage(const char *why) {
    fprintf(stderr,
            "worker-c: %s\nusage: worker-c --servers URL[,URL] --names A[,B] --rounds N "
            "--hold-ms N --holder ID [--ttl-ms N] [--wait-ms N] [--server-timeout-ms N] "
            "[--duration-ms N]\n"
            "       worker-c hold --servers URL[,URL] --name NAME [--ttl-ms N] [--wait-ms N] "
            "[--server-timeout-ms N] [--auto-extend] [--store URL --resource R --value V]\n",
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

/* Splits a server list as split() does, except that a part that does not start a URL (no
 * "://": the host:port of a cluster URL's further nodes) continues the previous one. */
static size_t split_servers(char *s, const char **out) {
    size_t n = 0;
    for (char *tok = strtok(s, ","); tok != NULL && n < MAX_LIST; tok = strtok(NULL, ",")) {
        if (n > 0 && strstr(tok, "://") == NULL)
            tok[-1] = ','; /* the comma strtok cut: the previous URL runs on */
        else
            out[n++] = tok;
    }
    return n;
}

/* The fenced store's check-and-set, read from fenced_write.lua beside this file (shared with
 * tests/chaos/src/store.rs; the test checks its SHA1 on the store). FENCED_WRITE_FILE is set
 * by the build (tests/chaos/src/mixed.rs). */
#ifndef FENCED_WRITE_FILE
#error "compile with -DFENCED_WRITE_FILE=\"/path/to/fenced_write.lua\""
#endif
static char *read_fenced_write(void) {
    FILE *f = fopen(FENCED_WRITE_FILE, "rb");
    if (f == NULL) return NULL;
    static char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

static int write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Sends one command to the redis-server at url (redis://HOST:PORT) on a fresh connection and
 * copies the first line of its reply, without CRLF, into reply (`:1`, `+OK`, `-ERR ...`).
 * Returns 0, or -1 on a connection error (reply then says what failed). */
static int redis_call(const char *url, int argc, const char *const *args, char *reply,
                      size_t cap) {
    char host[256], port[16];
    const char *hp = strncmp(url, "redis://", 8) == 0 ? url + 8 : url;
    const char *colon = strrchr(hp, ':');
    size_t hlen = colon ? (size_t)(colon - hp) : 0, plen = colon ? strcspn(colon + 1, "/") : 0;
    if (hlen == 0 || hlen >= sizeof host || plen == 0 || plen >= sizeof port) {
        snprintf(reply, cap, "store URL without host and port: %s", url);
        return -1;
    }
    memcpy(host, hp, hlen);
    host[hlen] = '\0';
    memcpy(port, colon + 1, plen);
    port[plen] = '\0';
    struct addrinfo hints, *ai = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(host, port, &hints, &ai);
    if (rc != 0) {
        snprintf(reply, cap, "cannot resolve %s: %s", host, gai_strerror(rc));
        return -1;
    }
    int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    struct timeval timeout = {5, 0};
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout) != 0 ||
        connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        snprintf(reply, cap, "cannot connect to %s:%s", host, port);
        if (fd >= 0) close(fd);
        freeaddrinfo(ai);
        return -1;
    }
    freeaddrinfo(ai);
    char head[32];
    int failed = 0;
    snprintf(head, sizeof head, "*%d\r\n", argc);
    failed |= write_all(fd, head, strlen(head));
    for (int i = 0; i < argc; i++) {
        snprintf(head, sizeof head, "$%zu\r\n", strlen(args[i]));
        failed |= write_all(fd, head, strlen(head));
        failed |= write_all(fd, args[i], strlen(args[i]));
        failed |= write_all(fd, "\r\n", 2);
    }
    size_t got = 0;
    char *eol = NULL;
    while (!failed && eol == NULL && got + 1 < cap) {
        ssize_t r = read(fd, reply + got, cap - 1 - got);
        if (r <= 0) break;
        got += (size_t)r;
        reply[got] = '\0';
        eol = strstr(reply, "\r\n");
    }
    close(fd);
    if (eol == NULL) {
        snprintf(reply, cap, "no reply from %s:%s", host, port);
        return -1;
    }
    *eol = '\0';
    return 0;
}

/* `error:<what>` with spaces turned into underscores, as the Rust worker reports store errors. */
static const char *store_error(char *what) {
    static char out[300];
    snprintf(out, sizeof out, "error:%s", what);
    for (char *p = out; *p; p++)
        if (*p == ' ') *p = '_';
    return out;
}

static int hold(int argc, char **argv) {
    const char *servers[MAX_LIST];
    size_t nservers = 0;
    const char *name = NULL, *store = NULL, *resource = "resource", *value = "";
    uint64_t ttl_ms = 1000, server_timeout_ms = 0;
    int64_t wait_ms = 10000;
    bool auto_extend = false;
    for (int i = 0; i < argc; i++) {
        const char *flag = argv[i];
        if (!strcmp(flag, "--auto-extend")) {
            auto_extend = true;
            continue;
        }
        if (i + 1 >= argc) usage("missing value");
        const char *v = argv[++i];
        if (!strcmp(flag, "--servers")) nservers = split_servers(argv[i], servers);
        else if (!strcmp(flag, "--name")) name = v;
        else if (!strcmp(flag, "--ttl-ms")) ttl_ms = strtoull(v, NULL, 10);
        else if (!strcmp(flag, "--wait-ms")) wait_ms = strtoll(v, NULL, 10);
        else if (!strcmp(flag, "--server-timeout-ms")) server_timeout_ms = strtoull(v, NULL, 10);
        else if (!strcmp(flag, "--store")) store = v;
        else if (!strcmp(flag, "--resource")) resource = v;
        else if (!strcmp(flag, "--value")) value = v;
        else usage(flag);
    }
    if (nservers == 0 || name == NULL) usage("hold needs --servers and --name");

    fl_manager_options *opts = NULL;
    fl_manager *m = NULL;
    if (fl_manager_options_new(&opts) != FL_OK ||
        fl_manager_options_set_retry_delay_ms(opts, 50) != FL_OK ||
        (server_timeout_ms > 0 &&
         fl_manager_options_set_server_timeout_ms(opts, server_timeout_ms) != FL_OK) ||
        fl_manager_new(servers, nservers, opts, &m) != FL_OK) {
        fprintf(stderr, "worker-c: %s\n", fl_last_error_message());
        return 2;
    }
    fl_manager_options_free(opts);
    fl_lock *lock = NULL;
    fl_status st = fl_lock_acquire(m, name, ttl_ms, wait_ms, &lock);
    if (st != FL_OK) {
        printf("ERROR kind=%s message=%s\n", kind(st), fl_last_error_message());
        fflush(stdout);
        fl_manager_free(m);
        return 2;
    }
    uint64_t start_us = wall_us(), validity_ms = 0, fence = 0;
    fl_lock_validity_ms(lock, &validity_ms);
    fl_lock_fencing_token(lock, &fence);
    if (auto_extend && fl_lock_auto_extend(lock, 0) != FL_OK) {
        fprintf(stderr, "worker-c: auto-extend: %s\n", fl_last_error_message());
        return 2;
    }
    printf("ACQUIRED token=%" PRIu64 " start_us=%" PRIu64 " validity_us=%" PRIu64 " pid=%ld\n",
           fence, start_us, validity_ms * 1000u, (long)getpid());
    fflush(stdout);

    char line[256];
    while (fgets(line, sizeof line, stdin) != NULL) {
        line[strcspn(line, "\r\n")] = '\0';
        if (!strcmp(line, "WRITE")) {
            if (store == NULL) usage("WRITE needs --store");
            bool lost = false;
            fl_lock_is_lost(lock, &lost);
            char token_key[300], data_key[300], unfenced_key[300], token[32], reply[300];
            snprintf(token_key, sizeof token_key, "fenced:%s:token", resource);
            snprintf(data_key, sizeof data_key, "fenced:%s:data", resource);
            snprintf(unfenced_key, sizeof unfenced_key, "unfenced:%s", resource);
            snprintf(token, sizeof token, "%" PRIu64, fence);
            const char *script = read_fenced_write();
            if (script == NULL) {
                fprintf(stderr, "worker-c: cannot read %s\n", FENCED_WRITE_FILE);
                return 2;
            }
            const char *eval[] = {"EVAL", script, "2", token_key, data_key, token, value};
            const char *fenced;
            if (redis_call(store, 7, eval, reply, sizeof reply) != 0 || reply[0] == '-')
                fenced = store_error(reply);
            else
                fenced = !strcmp(reply, ":1") ? "accepted" : "rejected";
            printf("WROTE fenced=%s", fenced);
            const char *set[] = {"SET", unfenced_key, value};
            if (redis_call(store, 3, set, reply, sizeof reply) != 0 || reply[0] == '-')
                printf(" unfenced=%s", store_error(reply));
            else
                printf(" unfenced=written");
            printf(" lost=%s end_us=%" PRIu64 "\n", lost ? "true" : "false", wall_us());
            fflush(stdout);
        } else if (!strcmp(line, "RELEASE")) {
            uint64_t end_us = wall_us();
            st = fl_lock_release(lock);
            printf("RELEASED result=%s end_us=%" PRIu64 "\n", st == FL_OK ? "ok" : kind(st),
                   end_us);
            fflush(stdout);
            break;
        } else {
            fprintf(stderr, "worker-c: unknown command \"%s\"\n", line);
        }
    }
    fl_lock_free(lock);
    fl_manager_free(m);
    return 0;
}

/* Round `r`'s acquisition of `name` under `--lease` (NULL: a lock); its kind's fields for the
 * HOLD line go to `fields`. */
static fl_status acquire_round(fl_manager *m, const char *lease, const char *name, long r,
                               uint64_t ttl_ms, int64_t wait_ms, fl_lock **lock, char *fields,
                               size_t cap) {
    unsigned limit = 0, count = 0, every = 0;
    fl_status st;
    fields[0] = '\0';
    if (lease && sscanf(lease, "semaphore:%u:%u", &limit, &count) == 2) {
        fl_semaphore *sem = NULL;
        st = fl_semaphore_new(m, name, limit, &sem);
        if (st == FL_OK) st = fl_semaphore_acquire(sem, count, NULL, ttl_ms, wait_ms, 0, lock);
        fl_semaphore_free(sem);
        snprintf(fields, cap, " kind=semaphore count=%u limit=%u", count, limit);
        return st;
    }
    if (lease && sscanf(lease, "rw:%u", &every) == 1 && every > 0) {
        fl_rwlock *rw = NULL;
        uint32_t mode = r % (long)every == 0 ? FL_RW_WRITE : FL_RW_READ;
        st = fl_rwlock_new(m, name, &rw);
        if (st == FL_OK) st = fl_rwlock_acquire(rw, mode, NULL, ttl_ms, wait_ms, 0, lock);
        fl_rwlock_free(rw);
        snprintf(fields, cap, mode == FL_RW_WRITE ? " kind=write" : " kind=read");
        return st;
    }
    if (lease && strcmp(lease, "election") == 0) {
        fl_election *e = NULL;
        char value[32];
        snprintf(value, sizeof value, "c-%ld", (long)getpid());
        st = fl_election_new(m, name, &e);
        if (st == FL_OK) st = fl_election_campaign(e, value, ttl_ms, wait_ms, lock);
        fl_election_free(e);
        return st;
    }
    return fl_lock_acquire(m, name, ttl_ms, wait_ms, lock);
}

/* With FENCELOCK_WORKER_GATE=1: says READY once the manager is built and waits for a line on
 * stdin, so that the test starts every worker's run at the same moment. */
static void gate(void) {
    const char *on = getenv("FENCELOCK_WORKER_GATE");
    if (on == NULL || strcmp(on, "1") != 0) return;
    printf("READY\n");
    fflush(stdout);
    char line[64];
    if (fgets(line, sizeof line, stdin) == NULL) return;
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "hold")) return hold(argc - 2, argv + 2);
    const char *servers[MAX_LIST], *names[MAX_LIST];
    size_t nservers = 0, nnames = 0;
    const char *holder = NULL, *lease = NULL;
    char fields[96];
    long rounds = -1;
    double hold_ms = -1;
    uint64_t ttl_ms = 1000, server_timeout_ms = 100, duration_ms = 0;
    int64_t wait_ms = 10000;
    for (int i = 1; i < argc; i += 2) {
        const char *flag = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL) usage("missing value");
        if (!strcmp(flag, "--servers")) nservers = split_servers(argv[i + 1], servers);
        else if (!strcmp(flag, "--names")) nnames = split(argv[i + 1], names);
        else if (!strcmp(flag, "--rounds")) rounds = strtol(v, NULL, 10);
        else if (!strcmp(flag, "--hold-ms")) hold_ms = strtod(v, NULL);
        else if (!strcmp(flag, "--holder")) holder = v;
        else if (!strcmp(flag, "--ttl-ms")) ttl_ms = strtoull(v, NULL, 10);
        else if (!strcmp(flag, "--wait-ms")) wait_ms = strtoll(v, NULL, 10);
        else if (!strcmp(flag, "--server-timeout-ms")) server_timeout_ms = strtoull(v, NULL, 10);
        else if (!strcmp(flag, "--duration-ms")) duration_ms = strtoull(v, NULL, 10);
        else if (!strcmp(flag, "--lease")) lease = v;
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

    gate();
    uint64_t deadline = duration_ms > 0 ? mono_ms() + duration_ms : UINT64_MAX;
    uint32_t first = 0;
    for (const char *p = holder; *p; p++) first = first * 31u + (unsigned char)*p;
    first %= (uint32_t)nnames;
    unsigned long acquired = 0, failed = 0;
    for (long r = 0; r < rounds && mono_ms() < deadline; r++) {
        const char *name = names[(first + (unsigned long)r) % nnames];
        uint64_t t0 = mono_ms();
        fl_lock *lock = NULL;
        fl_status st = acquire_round(m, lease, name, r, ttl_ms, wait_ms, &lock, fields, sizeof fields);
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
        if ((double)validity_ms < hold_ms + SLACK_MS) {
            /* Too little validity left for the work: give the lock back unused. */
            printf("SHORT name=%s validity_us=%" PRIu64 " holder=%s\n", name,
                   validity_ms * 1000u, holder);
        } else {
            if (hold_ms > 0) sleep_ms(hold_ms);
            uint64_t end_us = wall_us();
            printf("HOLD name=%s token=%" PRIu64 " start_us=%" PRIu64 " end_us=%" PRIu64
                   " validity_us=%" PRIu64 " holder=%s%s\n",
                   name, fence, start_us, end_us, validity_ms * 1000u, holder, fields);
            acquired++;
        }
        fflush(stdout);
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
