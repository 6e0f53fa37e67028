//go:build cgo && linux && amd64

package fencelock

/*
#include <stdint.h>
#include <stdlib.h>
#include <fencelock.h>
*/
import "C"

import (
	"context"
	"math"
	"time"
	"unsafe"
)

// NoExpiry is what Remaining returns for a key without expiry.
const NoExpiry = time.Duration(math.MaxInt64)

// Holder is who holds a lock, as Manager.Holder reads it.
type Holder struct {
	// Held: a quorum of the servers hold the lock; when false, the other fields are zero.
	Held bool
	// Remaining is how long it stays held at least (NoExpiry: without expiry).
	Remaining time.Duration
	// Noted: its holder left a note (a manager WithHolder); when false, the three fields
	// below are zero.
	Noted bool
	// Label is the holder's label (host:pid when it gave none).
	Label string
	// Since is when it was granted the lock, by its clock.
	Since time.Time
	// FencingToken is its fencing token.
	FencingToken uint64
}

// withName runs f with name as a C string on the live manager, within one library call.
func (m *Manager) withName(ctx context.Context, name string, f func(*C.fl_manager, *C.char) C.fl_status) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	return m.use(func(mp *C.fl_manager) error {
		return call(func() C.fl_status { return f(mp, cname) })
	})
}

// ReleaseByToken releases name if it is held with token, without a Lock (a lock acquired with
// Token and detached, or handed across processes); ErrLockLost when a quorum did not hold it
// with that token. A lock of another token is left alone.
func (m *Manager) ReleaseByToken(ctx context.Context, name, token string) error {
	ctoken := C.CString(token)
	defer C.free(unsafe.Pointer(ctoken))
	return m.withName(ctx, name, func(mp *C.fl_manager, cname *C.char) C.fl_status {
		return C.fl_release_by_token(mp, cname, ctoken)
	})
}

// ExtendByToken makes name expire ttl from now where it is held with token, without a Lock,
// and returns the validity that gives; ErrLockLost when a quorum does not hold it so.
func (m *Manager) ExtendByToken(ctx context.Context, name, token string, ttl time.Duration) (time.Duration, error) {
	if ttl <= 0 {
		return 0, invalid("ttl must be positive, got " + ttl.String())
	}
	ctoken := C.CString(token)
	defer C.free(unsafe.Pointer(ctoken))
	var validity C.uint64_t
	err := m.withName(ctx, name, func(mp *C.fl_manager, cname *C.char) C.fl_status {
		return C.fl_extend_by_token(mp, cname, ctoken, C.uint64_t(millis(ttl)), &validity)
	})
	return time.Duration(validity) * time.Millisecond, err
}

// IsHeldByToken says whether name is held with token on a quorum of the servers (read-only:
// nothing is extended or released).
func (m *Manager) IsHeldByToken(ctx context.Context, name, token string) (bool, error) {
	ctoken := C.CString(token)
	defer C.free(unsafe.Pointer(ctoken))
	var held C.bool
	err := m.withName(ctx, name, func(mp *C.fl_manager, cname *C.char) C.fl_status {
		return C.fl_manager_is_held_by_token(mp, cname, ctoken, &held)
	})
	return bool(held), err
}

// IsLocked says whether name is held: a quorum of the servers hold its key under one token
// (by fencelock, or another client's SET NX PX lock). It acquires nothing.
func (m *Manager) IsLocked(ctx context.Context, name string) (bool, error) {
	var held C.bool
	err := m.withName(ctx, name, func(mp *C.fl_manager, cname *C.char) C.fl_status {
		return C.fl_manager_is_locked(mp, cname, &held)
	})
	return bool(held), err
}

// Remaining is how long name stays held at least (0 when free, NoExpiry without expiry).
func (m *Manager) Remaining(ctx context.Context, name string) (time.Duration, error) {
	var ms C.int64_t
	err := m.withName(ctx, name, func(mp *C.fl_manager, cname *C.char) C.fl_status {
		return C.fl_manager_remaining_ms(mp, cname, &ms)
	})
	return remaining(int64(ms)), err
}

func remaining(ms int64) time.Duration {
	switch {
	case ms < 0:
		return 0
	case ms == math.MaxInt64:
		return NoExpiry
	}
	return time.Duration(ms) * time.Millisecond
}

// Holder says who holds name now: whether held and for how long, and, when its holder left a
// note (WithHolder), its label, since when and its fencing token. The token is never shown.
func (m *Manager) Holder(ctx context.Context, name string) (Holder, error) {
	var h C.fl_holder
	err := m.withName(ctx, name, func(mp *C.fl_manager, cname *C.char) C.fl_status {
		return C.fl_manager_holder(mp, cname, &h)
	})
	if err != nil || !bool(h.held) {
		return Holder{}, err
	}
	out := Holder{Held: true, Remaining: remaining(int64(h.remaining_ms)), Noted: bool(h.noted)}
	if out.Noted {
		out.Label = C.GoString(&h.label[0])
		out.Since = time.UnixMilli(int64(h.since_ms))
		out.FencingToken = uint64(h.fencing_token)
	}
	return out, nil
}
