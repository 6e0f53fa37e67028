/*
 * A worker pool capped at N across processes and machines: at most 2 of 6 threads call the
 * rate-limited API at once. fl_semaphore is a counting semaphore held on the Redis servers:
 * every process (and language) using the name shares the limit; waiters are served first
 * come, first served; fl_with_semaphore keeps the permit alive while the callback runs.
 * Exits 1 if more than 2 ran at once (which must not happen).
 *
 * Build: cc worker_pool.c $(pkg-config --cflags --libs fencelock) -lpthread -o worker_pool
 * Run:   ./worker_pool redis://127.0.0.1:6379
 */
#define _POSIX_C_SOURCE 200809L
#include <fencelock.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#define WORKERS 6
#define LIMIT 2

static pthread_mutex_t count_mutex = PTHREAD_MUTEX_INITIALIZER;
static int inside, most;

static void call_api(const fl_lock *permit, void *user_data) {
    uint64_t token = 0;
    struct timespec pause = {0, 50 * 1000000L};
    fl_lock_fencing_token(permit, &token);
    pthread_mutex_lock(&count_mutex);
    inside++;
    if (inside > most) most = inside;
    pthread_mutex_unlock(&count_mutex);
    printf("worker %d: calling the API (fencing token %" PRIu64 ")\n", *(int *)user_data, token);
    nanosleep(&pause, NULL);
    pthread_mutex_lock(&count_mutex);
    inside--;
    pthread_mutex_unlock(&count_mutex);
}

struct worker {
    fl_semaphore *api;
    int id;
    uint32_t status;
};

static void *worker_main(void *arg) {
    struct worker *w = arg;
    /* One permit, 10 s TTL (auto-extended), waiting as long as it takes. */
    w->status = fl_with_semaphore(w->api, 1, 10000, -1, call_api, &w->id);
    return NULL;
}

int main(int argc, char **argv) {
    const char *url = argc > 1 ? argv[1] : "redis://127.0.0.1:6379";
    fl_manager_options *opts = NULL;
    fl_manager *manager = NULL;
    fl_semaphore *api = NULL;
    struct worker workers[WORKERS];
    pthread_t threads[WORKERS];
    fl_semaphore_occupancy state;
    int i, failed = 0;

    if (fl_manager_options_new(&opts) != FL_OK || fl_manager_options_set_key_prefix(opts, "example:") != FL_OK ||
        fl_manager_new(&url, 1, opts, &manager) != FL_OK ||
        fl_semaphore_new(manager, "rate-limited-api", LIMIT, &api) != FL_OK) {
        fprintf(stderr, "setup failed: %s\n", fl_last_error_message());
        return 1;
    }
    fl_manager_options_free(opts);
    for (i = 0; i < WORKERS; i++) {
        workers[i] = (struct worker){api, i, FL_OK};
        pthread_create(&threads[i], NULL, worker_main, &workers[i]);
    }
    for (i = 0; i < WORKERS; i++) {
        pthread_join(threads[i], NULL);
        if (workers[i].status != FL_OK) {
            fprintf(stderr, "worker %d: %s\n", i, fl_status_str(workers[i].status));
            failed = 1;
        }
    }
    printf("%d workers ran, at most %d at once\n", WORKERS, most);
    if (fl_semaphore_state(api, &state) == FL_OK)
        printf("after: %" PRIu64 " permits held, %" PRIu64 " waiting\n", state.held, state.waiters);
    fl_semaphore_free(api);
    fl_manager_free(manager);
    return failed || most > LIMIT ? 1 : 0;
}
