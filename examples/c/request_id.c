/*
 * The classic Java pair from the Redis-lock write-ups, on fencelock:
 *
 *   boolean tryGetLock(Jedis jedis, String lockKey, String requestId, int expireTime)
 *       -> jedis.set(lockKey, requestId, "NX", "PX", expireTime) == "OK"
 *   boolean releaseLock(Jedis jedis, String lockKey, String requestId)
 *       -> EVAL "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del',
 *          KEYS[1]) else return 0 end"
 *
 * Here the request id is the lock's token: fl_lock_acquire_with_token writes it as the
 * key's value (so Jedis clients using the same key exclude us and we them), and
 * fl_release_by_token deletes the key only if it still holds that id. fencelock adds a
 * fencing token and Redlock over several servers; the shape of the calling code stays.
 *
 * Build: cc request_id.c $(pkg-config --cflags --libs fencelock) -o request_id
 * Run:   ./request_id redis://127.0.0.1:6379
 */
#include <fencelock.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* SET lockKey requestId NX PX expireTime, as one try (wait_ms = 0). */
static bool try_get_lock(fl_manager *m, const char *lock_key, const char *request_id,
                         uint64_t expire_ms) {
    fl_lock *lock = NULL;
    fl_status st = fl_lock_acquire_with_token(m, lock_key, request_id, expire_ms, 0, &lock);
    if (st != FL_OK) {
        if (st != FL_NOT_ACQUIRED) /* not just "someone else has it" */
            fprintf(stderr, "try_get_lock: %s\n", fl_last_error_message());
        return false;
    }
    /* Like the Java version, keep only the request id: the lock stays held on the servers
     * until released by id or until it expires. */
    fl_lock_detach(lock);
    fl_lock_free(lock);
    return true;
}

/* Delete lockKey only if it still holds requestId. */
static bool release_lock(fl_manager *m, const char *lock_key, const char *request_id) {
    fl_status st = fl_release_by_token(m, lock_key, request_id);
    if (st != FL_OK && st != FL_NOT_HELD)
        fprintf(stderr, "release_lock: %s\n", fl_last_error_message());
    return st == FL_OK;
}

int main(int argc, char **argv) {
    const char *url = argc > 1 ? argv[1] : "redis://127.0.0.1:6379";
    fl_manager *m = NULL;
    int failures = 0;

    if (fl_manager_new(&url, 1, NULL, &m) != FL_OK) {
        fprintf(stderr, "fl_manager_new: %s\n", fl_last_error_message());
        return 1;
    }

#define EXPECT(what, want)                                                              \
    do {                                                                                \
        bool got_ = (what);                                                             \
        printf("%-58s -> %s\n", #what, got_ ? "true" : "false");                        \
        if (got_ != (want)) failures++;                                                 \
    } while (0)

    EXPECT(try_get_lock(m, "order:42", "request-A", 10000), true);
    EXPECT(try_get_lock(m, "order:42", "request-B", 10000), false); /* A holds it */
    EXPECT(release_lock(m, "order:42", "request-B"), false);        /* not B's to release */
    EXPECT(release_lock(m, "order:42", "request-A"), true);
    EXPECT(release_lock(m, "order:42", "request-A"), false);        /* already released */
    EXPECT(try_get_lock(m, "order:42", "request-B", 10000), true);
    EXPECT(release_lock(m, "order:42", "request-B"), true);

    fl_manager_free(m);
    printf(failures ? "unexpected results: %d\n" : "all as expected\n", failures);
    return failures ? 1 : 0;
}
