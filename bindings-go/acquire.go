//go:build cgo && linux && amd64

package fencelock

/*
#include "glue.h"
*/
import "C"

import (
	"context"
	"errors"
	"unsafe"
)

// Acquire acquires name, waiting until it gets it, its Wait limit passes (ErrNotAcquired) or
// ctx ends (ctx.Err()). Waiters queue in the order they came, and a release hands the lock to
// the first in line; a waiting goroutine holds no OS thread. Options: TTL (default 30 s),
// Wait, Token, Reentrant.
func (m *Manager) Acquire(ctx context.Context, name string, opts ...AcquireOption) (*Lock, error) {
	a, err := acquireOptions(opts)
	if err != nil {
		return nil, err
	}
	return m.acquire(ctx, name, a, waitMillis(a))
}

// TryAcquire makes one attempt: a name another owner holds is (nil, an error matching
// ErrNotAcquired); unreachable servers are ErrUnavailable, not ErrNotAcquired.
func (m *Manager) TryAcquire(ctx context.Context, name string, opts ...AcquireOption) (*Lock, error) {
	a, err := acquireOptions(opts)
	if err != nil {
		return nil, err
	}
	return m.acquire(ctx, name, a, 0)
}

func (m *Manager) acquire(ctx context.Context, name string, a acquireSettings, wait int64) (*Lock, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	return m.lease(ctx, a, wait, func(mp *C.fl_manager, l leaseArgs) C.fl_status {
		return C.fencelock_go_lock_start(mp, cname, l.token, l.ttl, l.wait, l.flags, l.handle, l.out)
	})
}

// leaseArgs are the arguments every kind of lease's start call takes.
type leaseArgs struct {
	token  *C.char
	ttl    C.uint64_t
	wait   C.int64_t
	flags  C.uint32_t
	handle C.uintptr_t
	out    **C.fl_pending
}

// startLease is the C start call of one kind of lease (a lock, permits, a share).
type startLease func(mp *C.fl_manager, l leaseArgs) C.fl_status

// lease acquires a lease through start, waiting in this goroutine (see await).
func (m *Manager) lease(ctx context.Context, a acquireSettings, wait int64, start startLease) (*Lock, error) {
	var token *C.char
	if a.token != nil {
		token = C.CString(*a.token)
		defer C.free(unsafe.Pointer(token))
	}
	// Inline: an acquisition that needs no wait ends in the start call, on this goroutine's
	// thread (one round trip, no hand-off to a library thread and back).
	flags := C.uint32_t(C.FL_ACQUIRE_INLINE)
	if a.reentrant {
		flags |= C.FL_ACQUIRE_REENTRANT
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The manager is held only while the acquisition starts: Close may run while it waits
	// (the library then ends the wait: an error matching context.Canceled).
	var s started
	err := m.use(func(mp *C.fl_manager) error {
		var err error
		s, err = begin(ctx, func(h C.uintptr_t, out **C.fl_pending) C.fl_status {
			return start(mp, leaseArgs{token, C.uint64_t(millis(a.ttl)), C.int64_t(wait), flags, h, out})
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	ptr, err := s.wait(ctx)
	if err != nil {
		return nil, err
	}
	return newLock(ptr)
}

// waitMillis is the C wait argument of an acquisition: -1 without a Wait option.
func waitMillis(a acquireSettings) int64 {
	if a.wait == nil {
		return -1
	}
	return int64(millis(*a.wait))
}

// WithLock runs fn while holding name, kept alive in the background (extended every ttl/3)
// and released after fn returns. fn's context is cancelled when the lock is lost; WithLock
// then returns an error matching ErrLockLost (joined with fn's own error, if any).
func (m *Manager) WithLock(ctx context.Context, name string, fn func(context.Context, *Lock) error, opts ...AcquireOption) error {
	lock, err := m.Acquire(ctx, name, opts...)
	if err != nil {
		return err
	}
	if err := lock.AutoExtend(0); err != nil {
		_ = lock.Release(context.Background())
		return err
	}
	return runHeld(ctx, lock, "lock "+quote(name), func(inner context.Context) error { return fn(inner, lock) })
}

// runHeld runs fn with a context cancelled when lock is lost, then releases the lock; a loss
// while fn ran is an error matching ErrLockLost (joined with fn's own error, if any), saying
// what (the lock, or an election's term) was lost.
func runHeld(ctx context.Context, lock *Lock, what string, fn func(context.Context) error) error {
	inner, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-lock.Lost():
			cancel()
		case <-stop:
		}
	}()
	ferr := fn(inner)
	rerr := lock.Release(context.Background())
	select {
	case <-lock.Lost():
		lost := &Error{Kind: KindLockLost, Message: what + " was lost while held (" + lock.LostReason() + ")"}
		return errors.Join(ferr, lost)
	default:
	}
	if ferr != nil {
		return ferr
	}
	return rerr
}

func quote(s string) string {
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	b = append(b, s...)
	return string(append(b, '"'))
}
