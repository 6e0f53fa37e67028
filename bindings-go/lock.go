//go:build cgo && linux && amd64

package fencelock

/*
#include "glue.h"
*/
import "C"

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/cgo"
	"sync"
	"time"
)

// Lock is a held lock (or a semaphore's permits, a read-write lock's share). Safe for
// concurrent use. Release it when done: the garbage collector does not release a Lock nobody
// references (it stays held until its TTL ends).
type Lock struct {
	mu    sync.Mutex
	ptr   *C.fl_lock // nil once released, detached or collected
	name  string
	token string
	fence uint64
	// Every name and its fencing token (one for a lock on one name).
	names  []string
	fences []uint64
	lost   *lostSignal
	// The handle through which the library signals a loss; deleted when ptr is freed.
	lostHandle cgo.Handle
	// Why it was lost, kept when ptr is freed.
	reason string
}

// lostSignal is closed once, when the lock is lost.
type lostSignal struct {
	once sync.Once
	ch   chan struct{}
}

func (s *lostSignal) fire() { s.once.Do(func() { close(s.ch) }) }

// newLock wraps a lock handle the library handed over.
func newLock(ptr *C.fl_lock) (*Lock, error) {
	var name, token *C.char
	var fence C.uint64_t
	C.fl_lock_name(ptr, &name)
	C.fl_lock_token(ptr, &token)
	C.fl_lock_fencing_token(ptr, &fence)
	l := &Lock{
		ptr:   ptr,
		name:  C.GoString(name),
		token: C.GoString(token),
		fence: uint64(fence),
		lost:  &lostSignal{ch: make(chan struct{})},
	}
	var n C.size_t
	C.fl_lock_name_count(ptr, &n)
	for i := C.size_t(0); i < n; i++ {
		var name *C.char
		var fence C.uint64_t
		C.fl_lock_name_at(ptr, i, &name)
		C.fl_lock_fencing_token_at(ptr, i, &fence)
		l.names = append(l.names, C.GoString(name))
		l.fences = append(l.fences, uint64(fence))
	}
	l.lostHandle = cgo.NewHandle(l.lost)
	if err := call(func() C.fl_status { return C.fencelock_go_on_lost(ptr, C.uintptr_t(l.lostHandle)) }); err != nil {
		l.lostHandle.Delete()
		C.fl_lock_free(ptr)
		return nil, err
	}
	runtime.SetFinalizer(l, (*Lock).collected)
	return l, nil
}

// Name is the lock's name.
func (l *Lock) Name() string { return l.name }

// Names are the lock's names (one, but for AcquireMany's), in the order given.
func (l *Lock) Names() []string { return append([]string(nil), l.names...) }

// FencingTokens are the fencing tokens of Names, in the same order.
func (l *Lock) FencingTokens() []uint64 { return append([]uint64(nil), l.fences...) }

// Token is the lock's token, the value of its Redis key (random, or the caller's): keep it
// from other owners, it is what releases the lock.
func (l *Lock) Token() string { return l.token }

// FencingToken grows with every acquisition of the name (per name, per cluster hash slot):
// send it with every write to the storage the lock protects, and have the storage reject a
// token smaller than the largest it has seen.
func (l *Lock) FencingToken() uint64 { return l.fence }

// Validity is the time the lock is still safe to use: counting down from the acquisition
// (or last extension), net of the time acquiring took and the clock drift allowance; 0 once
// released, detached, lost or expired.
func (l *Lock) Validity() time.Duration {
	var ms C.uint64_t
	l.with(func(p *C.fl_lock) error {
		C.fl_lock_validity_ms(p, &ms)
		return nil
	})
	return time.Duration(ms) * time.Millisecond
}

// Lost is closed when the lock is lost while held: an extension (Extend, or WithLock's
// automatic one) found it gone or taken, or no quorum answered before its validity ran out.
// It is never closed by a release.
func (l *Lock) Lost() <-chan struct{} { return l.lost.ch }

// IsLost says whether the lock is known to be lost: an extension found it gone or taken, no
// quorum answered in time, or its validity simply ran out (read now, not when Lost's
// callback comes). It stays true after a Release that found it lost.
func (l *Lock) IsLost() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ptr == nil {
		return l.reason != ""
	}
	var lost C.bool
	C.fl_lock_is_lost(l.ptr, &lost)
	return bool(lost)
}

// AutoExtend keeps the lock alive in the background: it is extended every ttl/3 until it is
// released or lost, and, when maxHold > 0, for at most maxHold since it was acquired (then it
// expires). A loss closes Lost. Calling it again replaces the previous setting.
func (l *Lock) AutoExtend(maxHold time.Duration) error {
	if maxHold < 0 {
		return invalid(fmt.Sprintf("maxHold must not be negative, got %v", maxHold))
	}
	return l.with(func(p *C.fl_lock) error {
		return call(func() C.fl_status { return C.fl_lock_auto_extend(p, C.uint64_t(millis(maxHold))) })
	})
}

// LostReason says why the lock was lost: "expired", "taken", "unreachable", or "" while it
// is not.
func (l *Lock) LostReason() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ptr == nil {
		return l.reason
	}
	return reasonOf(l.ptr)
}

func reasonOf(p *C.fl_lock) string {
	var r C.fl_lost_reason
	if C.fl_lock_lost_reason(p, &r) != C.FL_OK || r == C.FL_LOST_NONE {
		return ""
	}
	return C.GoString(C.fl_lost_reason_str(C.uint32_t(r)))
}

// Extend makes the lock's expiry now + ttl on the servers and recomputes its validity. A lock
// no longer held is ErrLockLost (and Lost is closed); too few servers answering is
// ErrUnavailable. The call is bounded by the per-server timeouts.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if ttl <= 0 {
		return invalid(fmt.Sprintf("ttl must be positive, got %v", ttl))
	}
	return l.with(func(p *C.fl_lock) error {
		return call(func() C.fl_status { return C.fl_lock_extend(p, C.uint64_t(millis(ttl))) })
	})
}

// Release releases the lock on every server (compare-and-delete by token), handing it to the
// first waiter in line. ErrLockLost when a quorum no longer held it: what was done under it
// was not protected. After it, whatever it returned, the lock is released for this handle.
func (l *Lock) Release(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ptr == nil {
		return l.done()
	}
	err := call(func() C.fl_status { return C.fl_lock_release(l.ptr) })
	l.free()
	return err
}

// Detach gives up this handle's hold without releasing: the lock stays held on the servers
// until its TTL ends or someone calls Manager.ReleaseByToken with its name and token.
func (l *Lock) Detach() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ptr == nil {
		return l.done()
	}
	C.fl_lock_detach(l.ptr)
	l.free()
	return nil
}

func (l *Lock) done() error {
	return invalid(fmt.Sprintf("lock %q was already released or detached", l.name))
}

// with runs f on the live handle, or returns the released error.
func (l *Lock) with(f func(*C.fl_lock) error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ptr == nil {
		return l.done()
	}
	return f(l.ptr)
}

// free frees the handle (once released or detached: it releases nothing). Holds l.mu.
func (l *Lock) free() {
	l.reason = reasonOf(l.ptr)
	C.fl_lock_free(l.ptr) // waits for a loss callback under way
	l.ptr = nil
	l.lostHandle.Delete()
	runtime.SetFinalizer(l, nil)
}

// collected is the finalizer: a Lock nobody references is not released (the drop rule of
// every fencelock binding): its hold is given up and it expires after its TTL.
func (l *Lock) collected() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ptr == nil {
		return
	}
	slog.Warn("fencelock: a Lock was garbage-collected without Release; it stays held until its TTL ends",
		"lock", l.name)
	C.fl_lock_detach(l.ptr)
	l.free()
}
