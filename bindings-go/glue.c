// The C side of the callbacks: libfencelock calls these with the user_data it was given, a
// cgo.Handle, and they call the Go functions of callbacks.go. A handle travels as uintptr_t,
// never as a Go pointer.
#include "glue.h"
#include "_cgo_export.h"

static void go_done(fl_status status, fl_lock *lock, void *user_data) {
    fencelockGoDone(status, lock, (uintptr_t)user_data);
}

static void go_lost(const fl_lock *lock, void *user_data) {
    (void)lock;
    fencelockGoLost((uintptr_t)user_data);
}

fl_status fencelock_go_lock_start(const fl_manager *m, const char *name, const char *token,
                                  uint64_t ttl_ms, int64_t wait_ms, uint32_t flags,
                                  uintptr_t handle, fl_pending **out) {
    return fl_lock_acquire_start(m, name, token, ttl_ms, wait_ms, flags, go_done,
                                 (void *)handle, out);
}

fl_status fencelock_go_semaphore_start(const fl_semaphore *s, uint32_t count, const char *token,
                                       uint64_t ttl_ms, int64_t wait_ms, uint32_t flags,
                                       uintptr_t handle, fl_pending **out) {
    return fl_semaphore_acquire_start(s, count, token, ttl_ms, wait_ms, flags, go_done,
                                      (void *)handle, out);
}

fl_status fencelock_go_rwlock_start(const fl_rwlock *rw, uint32_t mode, const char *token,
                                    uint64_t ttl_ms, int64_t wait_ms, uint32_t flags,
                                    uintptr_t handle, fl_pending **out) {
    return fl_rwlock_acquire_start(rw, mode, token, ttl_ms, wait_ms, flags, go_done,
                                   (void *)handle, out);
}

fl_status fencelock_go_on_lost(fl_lock *lock, uintptr_t handle) {
    return fl_lock_on_lost(lock, go_lost, (void *)handle);
}

static void go_event(fl_event_level level, const char *message, const char *fields, void *user_data) {
    (void)user_data;
    fencelockGoEvent((uint32_t)level, (char *)message, (char *)fields);
}

fl_status fencelock_go_set_events(uint32_t min_level) {
    return fl_set_event_callback(go_event, NULL, min_level);
}

fl_status fencelock_go_many_start(const fl_manager *m, const char *const *names, size_t n,
                                  const char *token, uint64_t ttl_ms, int64_t wait_ms,
                                  uint32_t flags, uintptr_t handle, fl_pending **out) {
    return fl_lock_acquire_many_start(m, names, n, token, ttl_ms, wait_ms, flags, go_done,
                                      (void *)handle, out);
}

static void go_sample(const char *name, fl_metric_instrument instrument, double value,
                      const char *const *label_names, const char *const *label_values,
                      size_t label_count, void *user_data) {
    (void)instrument;
    (void)label_names;
    (void)user_data;
    fencelockGoSample((char *)name, value, (char **)label_values, label_count);
}

fl_status fencelock_go_set_samples(int on) {
    return fl_set_metric_callback(on ? go_sample : NULL, NULL);
}

static void go_span(const fl_span *span, void *user_data) {
    (void)user_data;
    fencelockGoSpan((fl_span *)span);
}

fl_status fencelock_go_set_spans(int on) {
    return fl_set_span_callback(on ? go_span : NULL, NULL);
}

fl_status fencelock_go_campaign_start(const fl_election *e, const char *value, uint64_t ttl_ms,
                                      int64_t wait_ms, uint32_t flags, uintptr_t handle,
                                      fl_pending **out) {
    return fl_election_campaign_start(e, value, ttl_ms, wait_ms, flags, go_done, (void *)handle, out);
}
