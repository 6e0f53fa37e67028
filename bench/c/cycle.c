/*
 * The Java benchmark's reference (bench/java.py): uncontended acquire + release cycles on one
 * name through libfencelock's C interface, the same calls the Java binding makes through JNA,
 * with nothing in between: fl_lock_acquire (waiting as long as it takes), fl_lock_release,
 * fl_lock_free (`ours`); and the C floor (`floor`): the least a C lock sends for the cycle,
 * SET NX PX then the compare-and-delete script by EVALSHA, over a plain blocking socket.
 *
 * Usage: cycle ours|floor URL SECONDS NAME   (URL: redis://HOST:PORT)
 * Prints one JSON object: {"impl": "c"|"c floor", "cycles": N, "seconds": S, "errors": E}.
 * Runs 2,000 cycles first (not counted) so that connections are open. Exit code 2 for bad
 * arguments, 1 when a cycle fails (its status and message on stderr).
 */
#define _POSIX_C_SOURCE 200809L
#include <fencelock.h>

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

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

/* --- the floor: a plain RESP client, enough for SET, SCRIPT LOAD and EVALSHA --------------- */

static const char RELEASE_LUA[] =
    "if redis.call(\"get\",KEYS[1])==ARGV[1] then return redis.call(\"del\",KEYS[1]) else return 0 end";

typedef struct {
    int fd;
    char buf[4096];
    size_t len, pos;
} resp;

static int resp_open(resp *r, const char *url) {
    char host[256];
    char port[16];
    struct addrinfo hints, *ai = NULL;
    int one = 1;
    if (sscanf(url, "redis://%255[^:]:%15[0-9]", host, port) != 2) return -1;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &ai) != 0) return -1;
    r->fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    if (r->fd < 0 || connect(r->fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        freeaddrinfo(ai);
        return -1;
    }
    freeaddrinfo(ai);
    setsockopt(r->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    r->len = r->pos = 0;
    return 0;
}

static int resp_byte(resp *r) {
    if (r->pos == r->len) {
        ssize_t n = read(r->fd, r->buf, sizeof r->buf);
        if (n <= 0) return -1;
        r->len = (size_t)n;
        r->pos = 0;
    }
    return (unsigned char)r->buf[r->pos++];
}

/* Sends the command and reads one reply line (a bulk reply's data into out): its type byte,
 * or -1 on a broken connection. */
static int resp_call(resp *r, int argc, const char **argv, char *out, size_t out_size) {
    char cmd[1024];
    size_t n = (size_t)snprintf(cmd, sizeof cmd, "*%d\r\n", argc);
    int i, type, c;
    long bulk;
    for (i = 0; i < argc; i++) {
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, "$%zu\r\n%s\r\n", strlen(argv[i]), argv[i]);
    }
    if (n >= sizeof cmd || write(r->fd, cmd, n) != (ssize_t)n) return -1;
    type = resp_byte(r);
    for (n = 0; (c = resp_byte(r)) >= 0 && c != '\r';) {
        if (n + 1 < out_size) out[n++] = (char)c;
    }
    if (c < 0 || resp_byte(r) != '\n') return -1;
    out[n] = 0;
    if (type == '$' && (bulk = atol(out)) >= 0) {
        for (n = 0; (long)n < bulk + 2; n++) {
            if ((c = resp_byte(r)) < 0) return -1;
            if ((long)n < bulk && n + 1 < out_size) out[n] = (char)c;
        }
        out[bulk < (long)out_size ? bulk : (long)out_size - 1] = 0;
    }
    return type;
}

typedef struct {
    resp r;
    char sha[64];
    const char *name;
    unsigned long next;
} floor_lock;

static int floor_cycle(floor_lock *f) {
    char token[32], reply[128];
    const char *set[] = {"SET", f->name, token, "NX", "PX", "10000"};
    const char *del[] = {"EVALSHA", f->sha, "1", f->name, token};
    snprintf(token, sizeof token, "%d-%lu", (int)getpid(), f->next++);
    if (resp_call(&f->r, 6, set, reply, sizeof reply) != '+') {
        fprintf(stderr, "cycle: floor: SET NX refused on a free name: %s\n", reply);
        return -1;
    }
    if (resp_call(&f->r, 5, del, reply, sizeof reply) != ':' || strcmp(reply, "1") != 0) {
        fprintf(stderr, "cycle: floor: the compare-and-delete deleted nothing: %s\n", reply);
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
    static floor_lock f;
    int is_floor;
    if (argc != 5 || (strcmp(argv[1], "ours") != 0 && strcmp(argv[1], "floor") != 0) ||
        (seconds = atof(argv[3])) <= 0) {
        fprintf(stderr, "usage: cycle ours|floor URL SECONDS NAME\n");
        return 2;
    }
    is_floor = strcmp(argv[1], "floor") == 0;
    url = argv[2];
    if (is_floor) {
        const char *load[] = {"SCRIPT", "LOAD", RELEASE_LUA};
        f.name = argv[4];
        if (resp_open(&f.r, url) != 0 || resp_call(&f.r, 3, load, f.sha, sizeof f.sha) != '$') {
            fprintf(stderr, "cycle: floor: cannot reach %s\n", url);
            return 2;
        }
    } else if (fl_manager_new(&url, 1, NULL, &manager) != FL_OK) {
        fprintf(stderr, "cycle: %s\n", fl_last_error_message());
        return 2;
    }
    for (i = 0; i < WARMUP_CYCLES; i++) {
        if ((is_floor ? floor_cycle(&f) : cycle(manager, argv[4])) != 0) return 1;
    }
    start = now_s();
    do {
        if ((is_floor ? floor_cycle(&f) : cycle(manager, argv[4])) != 0) return 1;
        cycles++;
        elapsed = now_s() - start;
    } while (elapsed < seconds);
    if (is_floor) {
        close(f.r.fd);
    } else {
        fl_manager_free(manager);
    }
    printf("{\"impl\": \"%s\", \"cycles\": %ld, \"seconds\": %.6f, \"errors\": 0}\n",
           is_floor ? "c floor" : "c", cycles, elapsed);
    return 0;
}
