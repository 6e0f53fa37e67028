//go:build cgo && linux && amd64

package fencelock

/*
#include <fencelock.h>
*/
import "C"

import (
	"context"
	"errors"
	"runtime"
)

// Kind is what went wrong, as every fencelock binding names it.
type Kind string

// The kinds of error; compare with errors.Is against the Err values below.
const (
	KindInvalidArgument Kind = "invalid_argument"
	KindNotAcquired     Kind = "not_acquired"
	KindLockLost        Kind = "lock_lost"
	KindUnavailable     Kind = "unavailable"
	KindRedis           Kind = "redis"
	KindCancelled       Kind = "cancelled"
	KindWrongKind       Kind = "wrong_kind"
	KindInternal        Kind = "internal"
)

// Sentinel errors for errors.Is: every *Error matches the one of its kind.
var (
	// ErrInvalidArgument: a bad name, TTL, URL or option, found before any network call.
	ErrInvalidArgument = errors.New("fencelock: invalid argument")
	// ErrNotAcquired: the wait ended (its limit, or a single try) while another owner held it.
	ErrNotAcquired = errors.New("fencelock: not acquired")
	// ErrLockLost: a release or extension of a lock no longer held (it expired or was taken).
	ErrLockLost = errors.New("fencelock: lock lost")
	// ErrUnavailable: too few servers answered to reach a quorum.
	ErrUnavailable = errors.New("fencelock: servers unavailable")
	// ErrRedis: a server answered with an unexpected reply (for example WRONGTYPE).
	ErrRedis = errors.New("fencelock: unexpected reply from Redis")
	// ErrWrongKind: the name is held as another kind (a lock, a semaphore, a read-write lock).
	ErrWrongKind = errors.New("fencelock: the name is held as another kind")
	// ErrInternal: a bug in fencelock, caught at the library's boundary.
	ErrInternal = errors.New("fencelock: internal error")
)

// ServerReport is what one server answered in the last attempt of a failed acquisition.
type ServerReport struct {
	// Server is host:port (or a Sentinel or Cluster label), never with a password.
	Server string
	// Outcome is "granted", "held", "unreachable", "timeout" or "error".
	Outcome string
	// Detail says what it answered.
	Detail string
}

// Error is every error this package returns (but a context's own, from a cancelled wait).
type Error struct {
	Kind    Kind
	Message string
	// Servers: per server, in the manager's order, what it answered (failed acquisitions).
	Servers []ServerReport
}

// Error is the message, prefixed "fencelock: ".
func (e *Error) Error() string { return "fencelock: " + e.Message }

// Is matches the sentinel error of the kind.
func (e *Error) Is(target error) bool {
	return target == sentinelOf(e.Kind)
}

func sentinelOf(k Kind) error {
	switch k {
	case KindInvalidArgument:
		return ErrInvalidArgument
	case KindNotAcquired:
		return ErrNotAcquired
	case KindLockLost:
		return ErrLockLost
	case KindUnavailable:
		return ErrUnavailable
	case KindRedis:
		return ErrRedis
	case KindCancelled:
		return context.Canceled
	case KindWrongKind:
		return ErrWrongKind
	}
	return ErrInternal
}

func kindOf(status C.fl_status) Kind {
	switch status {
	case C.FL_INVALID_ARGUMENT:
		return KindInvalidArgument
	case C.FL_NOT_ACQUIRED:
		return KindNotAcquired
	case C.FL_NOT_HELD:
		return KindLockLost
	case C.FL_UNAVAILABLE:
		return KindUnavailable
	case C.FL_REDIS_ERROR:
		return KindRedis
	case C.FL_CANCELLED:
		return KindCancelled
	case C.FL_WRONG_KIND:
		return KindWrongKind
	}
	return KindInternal
}

// lastError is the error of a call that returned status, read on the OS thread that made
// the call (the library keeps the last error per thread): call it with the thread locked, or
// from inside a callback, as check does.
func lastError(status C.fl_status) error {
	if status == C.FL_OK {
		return nil
	}
	e := &Error{Kind: kindOf(status), Message: C.GoString(C.fl_last_error_message())}
	n := int(C.fl_last_error_server_count())
	for i := 0; i < n; i++ {
		var server, detail *C.char
		var outcome C.uint32_t
		if C.fl_last_error_server(C.size_t(i), &server, &outcome, &detail) != C.FL_OK {
			break
		}
		e.Servers = append(e.Servers, ServerReport{
			Server:  C.GoString(server),
			Outcome: C.GoString(C.fl_server_outcome_str(outcome)),
			Detail:  C.GoString(detail),
		})
	}
	return e
}

// invalid is an argument error found on the Go side (before any call into the library).
func invalid(message string) error {
	return &Error{Kind: KindInvalidArgument, Message: message}
}

// call runs one library call and returns its error, read on the same OS thread (the library
// keeps the last error per thread; a goroutine may otherwise move between the two calls).
func call(f func() C.fl_status) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return lastError(f())
}
