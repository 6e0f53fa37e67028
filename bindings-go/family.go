//go:build cgo && linux && amd64

package fencelock

/*
#include "glue.h"
*/
import "C"

import (
	"context"
	"unsafe"
)

// Lease is a semaphore's permits or a read-write lock's share or hold: a Lock like any other
// (fencing token, Extend, Release, Lost).
type Lease = Lock

// Semaphore is a counting semaphore: at most limit permits of a name held at any instant,
// across every process and language using the name. Its limit and counts are checked by
// Acquire, before any network call.
type Semaphore struct {
	m     *Manager
	name  string
	limit uint32
}

// Semaphore is the semaphore of limit permits on name (nothing is contacted yet).
func (m *Manager) Semaphore(name string, limit uint32) *Semaphore {
	return &Semaphore{m: m, name: name, limit: limit}
}

// Acquire acquires count permits (1 to the limit), waiting as Manager.Acquire does (the
// same options; waiters are served in the order they came).
func (s *Semaphore) Acquire(ctx context.Context, count uint32, opts ...AcquireOption) (*Lease, error) {
	return s.acquire(ctx, count, opts, nil)
}

// TryAcquire makes one attempt for count permits: ErrNotAcquired when too few are free.
func (s *Semaphore) TryAcquire(ctx context.Context, count uint32, opts ...AcquireOption) (*Lease, error) {
	zero := int64(0)
	return s.acquire(ctx, count, opts, &zero)
}

func (s *Semaphore) acquire(ctx context.Context, count uint32, opts []AcquireOption, wait *int64) (*Lease, error) {
	a, err := acquireOptions(opts)
	if err != nil {
		return nil, err
	}
	w := waitMillis(a)
	if wait != nil {
		w = *wait
	}
	cname := C.CString(s.name)
	defer C.free(unsafe.Pointer(cname))
	return s.m.lease(ctx, a, w, func(mp *C.fl_manager, l leaseArgs) C.fl_status {
		var sem *C.fl_semaphore
		if st := C.fl_semaphore_new(mp, cname, C.uint32_t(s.limit), &sem); st != C.FL_OK {
			return st
		}
		defer C.fl_semaphore_free(sem)
		return C.fencelock_go_semaphore_start(sem, C.uint32_t(count), l.token, l.ttl, l.wait, l.flags, l.handle, l.out)
	})
}

// RWLock is a fair read-write lock on a name: many readers or one writer, served in the
// order they came (a writer waiting holds new readers back).
type RWLock struct {
	m    *Manager
	name string
}

// RWLock is the read-write lock on name (nothing is contacted yet).
func (m *Manager) RWLock(name string) *RWLock {
	return &RWLock{m: m, name: name}
}

// Read acquires a read share, waiting as Manager.Acquire does.
func (r *RWLock) Read(ctx context.Context, opts ...AcquireOption) (*Lease, error) {
	return r.acquire(ctx, C.FL_RW_READ, opts)
}

// Write acquires the write hold, waiting as Manager.Acquire does.
func (r *RWLock) Write(ctx context.Context, opts ...AcquireOption) (*Lease, error) {
	return r.acquire(ctx, C.FL_RW_WRITE, opts)
}

func (r *RWLock) acquire(ctx context.Context, mode C.uint32_t, opts []AcquireOption) (*Lease, error) {
	a, err := acquireOptions(opts)
	if err != nil {
		return nil, err
	}
	cname := C.CString(r.name)
	defer C.free(unsafe.Pointer(cname))
	return r.m.lease(ctx, a, waitMillis(a), func(mp *C.fl_manager, l leaseArgs) C.fl_status {
		var rw *C.fl_rwlock
		if st := C.fl_rwlock_new(mp, cname, &rw); st != C.FL_OK {
			return st
		}
		defer C.fl_rwlock_free(rw)
		return C.fencelock_go_rwlock_start(rw, mode, l.token, l.ttl, l.wait, l.flags, l.handle, l.out)
	})
}
