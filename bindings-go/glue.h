// The C side of the Go binding's callbacks (glue.c): each starts an acquisition, or
// registers a callback, whose calls reach the Go functions of callbacks.go, events.go,
// metrics.go and spans.go with a cgo.Handle (as uintptr_t) for user data.
#ifndef FENCELOCK_GO_GLUE_H
#define FENCELOCK_GO_GLUE_H

#include <stdint.h>
#include <stdlib.h>
#include <fencelock.h>

fl_status fencelock_go_lock_start(const fl_manager *m, const char *name, const char *token,
                                  uint64_t ttl_ms, int64_t wait_ms, uint32_t flags,
                                  uintptr_t handle, fl_pending **out);
fl_status fencelock_go_many_start(const fl_manager *m, const char *const *names, size_t n,
                                  const char *token, uint64_t ttl_ms, int64_t wait_ms,
                                  uint32_t flags, uintptr_t handle, fl_pending **out);
fl_status fencelock_go_semaphore_start(const fl_semaphore *s, uint32_t count, const char *token,
                                       uint64_t ttl_ms, int64_t wait_ms, uint32_t flags,
                                       uintptr_t handle, fl_pending **out);
fl_status fencelock_go_rwlock_start(const fl_rwlock *rw, uint32_t mode, const char *token,
                                    uint64_t ttl_ms, int64_t wait_ms, uint32_t flags,
                                    uintptr_t handle, fl_pending **out);
fl_status fencelock_go_campaign_start(const fl_election *e, const char *value, uint64_t ttl_ms,
                                      int64_t wait_ms, uint32_t flags, uintptr_t handle,
                                      fl_pending **out);
fl_status fencelock_go_on_lost(fl_lock *lock, uintptr_t handle);
fl_status fencelock_go_set_events(uint32_t min_level);
fl_status fencelock_go_set_samples(int on);
fl_status fencelock_go_set_spans(int on);

#endif
