//go:build cgo && linux && amd64

package fencelock_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencelock/fencelock/bindings-go"
	"github.com/fencelock/fencelock/bindings-go/internal/testredis"
)

// syncBuffer is a log destination written from the library's threads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A wait that makes no progress because servers do not answer is not silent: the core's
// warning reaches slog (issue 57 item 3), naming the lock and the server.
func TestAWaitThatMakesNoProgressWarnsThroughSlog(t *testing.T) {
	var out syncBuffer
	before := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&out, nil)))
	defer slog.SetDefault(before)
	port := strconv.Itoa(testredis.FreePort(t))
	// Refusals waited through (0), as for a server that does not answer.
	m, err := fencelock.NewManager([]string{"redis://127.0.0.1:" + port}, fencelock.WithRefusedAttempts(0))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	_, err = m.Acquire(context.Background(), "nobody-home", fencelock.Wait(4*time.Second))
	if !errors.Is(err, fencelock.ErrUnavailable) {
		t.Fatalf("%v", err)
	}
	logged := out.String()
	if !strings.Contains(logged, "level=WARN") || !strings.Contains(logged, "fencelock: acquire still waiting") ||
		!strings.Contains(logged, "nobody-home") || !strings.Contains(logged, "127.0.0.1:"+port) {
		t.Fatalf("the log: %q", logged)
	}
}

func TestEnableLoggingSendsDebugEvents(t *testing.T) {
	var out syncBuffer
	before := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug})))
	defer slog.SetDefault(before)
	if err := fencelock.EnableLogging(slog.LevelDebug); err != nil {
		t.Fatal(err)
	}
	defer fencelock.EnableLogging(slog.LevelWarn)
	s := testredis.Start(t)
	m := manager(t, s)
	lock, err := m.Acquire(context.Background(), "logged")
	if err != nil {
		t.Fatal(err)
	}
	_ = lock.Release(context.Background())
	logged := out.String()
	if !strings.Contains(logged, "fencelock: acquired") || !strings.Contains(logged, `lock=\"logged\"`) ||
		strings.Contains(logged, lock.Token()) {
		t.Fatalf("the log: %q", logged)
	}
}
