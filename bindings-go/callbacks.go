//go:build cgo && linux && amd64

package fencelock

/*
#include "glue.h"
*/
import "C"

import (
	"context"
	"runtime/cgo"
)

// outcome is what an acquisition's completion callback reports.
type outcome struct {
	lock *C.fl_lock
	err  error
}

// fencelockGoDone is an acquisition's completion, called once on a thread of the library's,
// or inside the start call on the goroutine's own thread when it needed no wait
// (FL_ACQUIRE_INLINE): it hands the outcome (and the error, read on this thread) to the
// waiting goroutine.
//
//export fencelockGoDone
func fencelockGoDone(status C.fl_status, lock *C.fl_lock, handle C.uintptr_t) {
	h := cgo.Handle(handle)
	done := h.Value().(chan outcome)
	h.Delete()
	done <- outcome{lock: lock, err: lastError(status)}
}

// fencelockGoLost is a lock's loss, called once on a thread of the library's.
//
//export fencelockGoLost
func fencelockGoLost(handle C.uintptr_t) {
	cgo.Handle(handle).Value().(*lostSignal).fire()
}

// startFunc starts one acquisition whose completion goes to the handle.
type startFunc func(handle C.uintptr_t, out **C.fl_pending) C.fl_status

// started is an acquisition under way: its handle and where its outcome arrives.
type started struct {
	pending *C.fl_pending
	done    chan outcome
}

// begin starts an acquisition whose completion callback sends its outcome (the wait runs in
// the library: a waiting goroutine holds no OS thread), under ctx's span when spans are
// wanted (spans.go).
func begin(ctx context.Context, start startFunc) (started, error) {
	done := make(chan outcome, 1)
	h := cgo.NewHandle(done)
	var pending *C.fl_pending
	parent := traceParent(ctx)
	err := call(func() C.fl_status {
		if parent == 0 {
			return start(C.uintptr_t(h), &pending)
		}
		// On this thread (call locks it): the number goes to this start call only.
		C.fl_trace_next(C.uint64_t(parent))
		defer C.fl_trace_next(0)
		return start(C.uintptr_t(h), &pending)
	})
	if err != nil {
		forgetParent(parent)
		h.Delete() // never started: the callback will not come
		return started{}, err
	}
	return started{pending, done}, nil
}

// wait waits for a started acquisition. A context that ends first cancels it in the library
// (its place in line given up, whatever it won released) and returns ctx.Err(); a lock that
// won the race with the cancellation is released.
func (s started) wait(ctx context.Context) (*C.fl_lock, error) {
	defer C.fl_pending_free(s.pending)
	select {
	case o := <-s.done:
		return o.lock, o.err
	case <-ctx.Done():
		C.fl_pending_cancel(s.pending)
		if o := <-s.done; o.lock != nil {
			// Freeing a held lock releases it in the background.
			C.fl_lock_free(o.lock)
		}
		return nil, ctx.Err()
	}
}
