//go:build cgo && linux && amd64

package fencelock

/*
#include "glue.h"
*/
import "C"

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Span is one of fencelock's trace spans, ended (docs/observability.md, "Traces"):
// "fencelock.acquire" around an acquire call, "fencelock.hold" from the grant to the end of
// the hold. For tracers: bindings-go/otel makes OpenTelemetry spans of them.
type Span struct {
	// Name is "fencelock.acquire" or "fencelock.hold".
	Name string
	// Parent is the context the acquire call was given: the span's parent.
	Parent context.Context
	// Start is when the call started (acquire) or the lock was granted (hold).
	Start time.Time
	// End is when it ended.
	End time.Time
	// Attributes are the span's attributes: lock, kind, outcome, fencing_token, ... (never a
	// token, a password or a server's address).
	Attributes []SpanAttribute
}

// SpanAttribute is one attribute of a span; Value is a string, a uint64 or a bool.
type SpanAttribute struct {
	Key   string
	Value any
}

var spans struct {
	mu      sync.RWMutex
	handler func(Span)
	// parents keeps each traced call's context under the number the library carries, until
	// the call's last span.
	parents sync.Map
	next    atomic.Uint64
}

// SetSpanHandler makes every span of fencelock's acquire calls (and of the holds they grant)
// go to handler (nil: none, and no context is kept), replacing any handler set before.
// handler runs on the library's threads, possibly several at once: it must be safe for
// concurrent use and return quickly. For tracers; bindings-go/otel is one.
func SetSpanHandler(handler func(Span)) error {
	spans.mu.Lock()
	spans.handler = handler
	spans.mu.Unlock()
	if handler == nil {
		spans.parents.Clear()
	}
	// Outside the lock: the library waits for a span being delivered, which takes it.
	on := C.int(0)
	if handler != nil {
		on = 1
	}
	return call(func() C.fl_status { return C.fencelock_go_set_spans(on) })
}

// traceParent keeps ctx under a new number when spans are wanted (0: not wanted).
func traceParent(ctx context.Context) uint64 {
	spans.mu.RLock()
	on := spans.handler != nil
	spans.mu.RUnlock()
	if !on {
		return 0
	}
	id := spans.next.Add(1)
	spans.parents.Store(id, ctx)
	return id
}

// forgetParent drops a number whose call never started.
func forgetParent(id uint64) {
	if id != 0 {
		spans.parents.Delete(id)
	}
}

//export fencelockGoSpan
func fencelockGoSpan(s *C.fl_span) {
	spans.mu.RLock()
	defer spans.mu.RUnlock()
	id := uint64(s.parent)
	parent, ok := spans.parents.Load(id)
	if s.last {
		spans.parents.Delete(id)
	}
	if spans.handler == nil || !ok {
		return
	}
	span := Span{
		Name:   C.GoString(s.name),
		Parent: parent.(context.Context),
		Start:  time.Unix(0, int64(s.start_unix_ns)),
		End:    time.Unix(0, int64(s.end_unix_ns)),
	}
	for _, a := range unsafe.Slice(s.attributes, int(s.attribute_count)) {
		attr := SpanAttribute{Key: C.GoString(a.key)}
		switch a.kind {
		case C.FL_SPAN_TEXT:
			attr.Value = C.GoString(a.text)
		case C.FL_SPAN_INT:
			attr.Value = uint64(a.number)
		default:
			attr.Value = bool(a.flag)
		}
		span.Attributes = append(span.Attributes, attr)
	}
	spans.handler(span)
}
