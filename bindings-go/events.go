//go:build cgo && linux && amd64

package fencelock

/*
#include "glue.h"
*/
import "C"

import (
	"context"
	"log/slog"
	"sync"
)

// The package's events go to log/slog's default logger, message prefixed "fencelock: ",
// with the event's fields (lock="jobs" attempts=3 ...; never a token or a password) as the
// attribute "fields". By default only warnings: a wait that makes no progress because servers
// do not answer says so every 3 s, naming them and why. EnableLogging lowers the level.
var events struct {
	once sync.Once
	mu   sync.Mutex
	err  error
}

// eventLevel is the library's event level for a slog level.
func eventLevel(l slog.Level) C.uint32_t {
	switch {
	case l < slog.LevelDebug:
		return C.FL_EVENT_TRACE
	case l < slog.LevelInfo:
		return C.FL_EVENT_DEBUG
	case l < slog.LevelWarn:
		return C.FL_EVENT_INFO
	case l < slog.LevelError:
		return C.FL_EVENT_WARN
	}
	return C.FL_EVENT_ERROR
}

// EnableLogging sends fencelock's events at level or more severe (slog.LevelDebug: every
// acquisition, release and attempt; below it, trace) to slog's default logger.
func EnableLogging(level slog.Level) error {
	events.once.Do(func() {}) // the first manager keeps this level
	events.mu.Lock()
	defer events.mu.Unlock()
	return call(func() C.fl_status { return C.fencelock_go_set_events(eventLevel(level)) })
}

// warnByDefault makes the warnings reach slog from the first manager on, once per process
// (EnableLogging may have been called before).
func warnByDefault() {
	events.once.Do(func() {
		events.mu.Lock()
		defer events.mu.Unlock()
		events.err = call(func() C.fl_status { return C.fencelock_go_set_events(C.FL_EVENT_WARN) })
	})
}

//export fencelockGoEvent
func fencelockGoEvent(level C.uint32_t, message, fields *C.char) {
	l := slog.LevelError
	switch level {
	case C.FL_EVENT_TRACE:
		l = slog.LevelDebug - 4
	case C.FL_EVENT_DEBUG:
		l = slog.LevelDebug
	case C.FL_EVENT_INFO:
		l = slog.LevelInfo
	case C.FL_EVENT_WARN:
		l = slog.LevelWarn
	}
	slog.Default().Log(context.Background(), l, "fencelock: "+C.GoString(message),
		"fields", C.GoString(fields))
}
