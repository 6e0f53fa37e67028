/*
 * fl_with_lock: run a function while holding a lock that is extended automatically, and
 * learn afterwards whether the lock held throughout. The fencing token goes with every write
 * to the protected storage (here a toy "storage" that rejects stale tokens).
 *
 * Build: cc with_lock.c $(pkg-config --cflags --libs fencelock) -o with_lock
 * Run:   ./with_lock redis://127.0.0.1:6379 [redis://... redis://...]   (several = Redlock)
 */
#define _POSIX_C_SOURCE 200809L
#include <fencelock.h>

#include <inttypes.h>
#include <stdio.h>
#include <time.h>

/* The storage remembers the largest fencing token it has seen and rejects smaller ones. */
struct storage {
    uint64_t max_token_seen;
    int balance;
};

static int storage_write(struct storage *s, uint64_t token, int delta) {
    if (token < s->max_token_seen) return -1; /* a holder whose lock expired: rejected */
    s->max_token_seen = token;
    s->balance += delta;
    return 0;
}

struct job {
    struct storage *storage;
    int steps_done;
};

static void work(const fl_lock *lock, void *user_data) {
    struct job *job = user_data;
    uint64_t token = 0;
    int i;
    fl_lock_fencing_token(lock, &token);
    printf("holding the lock, fencing token %" PRIu64 "\n", token);
    for (i = 0; i < 5; i++) {
        bool lost = false;
        struct timespec pause = {0, 300 * 1000000L};
        /* Longer than the TTL in total: the automatic extension keeps the lock. */
        nanosleep(&pause, NULL);
        fl_lock_is_lost(lock, &lost);
        if (lost) {
            printf("lock lost: stopping\n");
            return;
        }
        if (storage_write(job->storage, token, 10) != 0) {
            printf("storage rejected a stale token\n");
            return;
        }
        job->steps_done++;
    }
}

int main(int argc, char **argv) {
    const char *default_url = "redis://127.0.0.1:6379";
    const char *const *urls = argc > 1 ? (const char *const *)(argv + 1) : &default_url;
    size_t n = argc > 1 ? (size_t)(argc - 1) : 1;
    fl_manager *m = NULL;
    struct storage storage = {0, 0};
    struct job job = {&storage, 0};
    fl_status st;

    if (fl_manager_new(urls, n, NULL, &m) != FL_OK) {
        fprintf(stderr, "fl_manager_new: %s\n", fl_last_error_message());
        return 1;
    }
    /* TTL 1 s, wait up to 10 s for the lock. */
    st = fl_with_lock(m, "nightly-report", 1000, 10000, work, &job);
    switch (st) {
    case FL_OK:
        printf("done: %d steps under the lock, balance %d\n", job.steps_done, storage.balance);
        break;
    case FL_NOT_ACQUIRED:
        printf("someone else is running the report: %s\n", fl_last_error_message());
        break;
    case FL_NOT_HELD:
        printf("the lock was lost while working; the work is suspect: %s\n",
               fl_last_error_message());
        break;
    default:
        fprintf(stderr, "fl_with_lock: %s (%s)\n", fl_status_str(st), fl_last_error_message());
    }
    fl_manager_free(m);
    return st == FL_OK && job.steps_done == 5 ? 0 : 1;
}
