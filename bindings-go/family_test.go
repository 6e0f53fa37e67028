//go:build cgo && linux && amd64

package fencelock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencelock/fencelock/bindings-go"
	"github.com/fencelock/fencelock/bindings-go/internal/testredis"
)

func TestASemaphoreHoldsAtMostItsLimit(t *testing.T) {
	s := testredis.Start(t)
	m := manager(t, s)
	ctx := context.Background()
	sem := m.Semaphore("pool", 3)
	two, err := sem.Acquire(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	one, err := sem.Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sem.TryAcquire(ctx, 1); !errors.Is(err, fencelock.ErrNotAcquired) {
		t.Fatalf("a fourth permit of three: %v", err)
	}
	if _, err := sem.Acquire(ctx, 4); !errors.Is(err, fencelock.ErrInvalidArgument) {
		t.Fatalf("four permits of three: %v", err)
	}
	// A waiter gets its permit when one is released.
	got := make(chan error, 1)
	go func() {
		lease, err := sem.Acquire(ctx, 1, fencelock.Wait(30*time.Second))
		if err == nil {
			err = lease.Release(ctx)
		}
		got <- err
	}()
	if err := one.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if err := two.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// The name is a semaphore's: a plain lock on it is the wrong kind.
	held, err := sem.Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(ctx)
	if _, err := m.TryAcquire(ctx, "pool"); !errors.Is(err, fencelock.ErrWrongKind) {
		t.Fatalf("a lock on a semaphore's name: %v", err)
	}
}

func TestAnRWLockHasReadersOrOneWriter(t *testing.T) {
	s := testredis.Start(t)
	m := manager(t, s)
	ctx := context.Background()
	rw := m.RWLock("config")
	r1, err := rw.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := rw.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rw.Write(ctx, fencelock.Wait(200*time.Millisecond)); !errors.Is(err, fencelock.ErrNotAcquired) {
		t.Fatalf("a writer beside readers: %v", err)
	}
	_ = r1.Release(ctx)
	_ = r2.Release(ctx)
	w, err := rw.Write(ctx, fencelock.Wait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if w.FencingToken() <= r2.FencingToken() {
		t.Fatalf("fencing tokens: reader %d, then writer %d", r2.FencingToken(), w.FencingToken())
	}
	if _, err := rw.Read(ctx, fencelock.Wait(200*time.Millisecond)); !errors.Is(err, fencelock.ErrNotAcquired) {
		t.Fatalf("a reader beside the writer: %v", err)
	}
	_ = w.Release(ctx)
}

func TestInspectionAndRequestIDs(t *testing.T) {
	s := testredis.Start(t)
	m := manager(t, s, fencelock.WithHolder("billing on host-7"))
	ctx := context.Background()
	if held, err := m.IsLocked(ctx, "report"); err != nil || held {
		t.Fatalf("IsLocked on a free name: %v %v", held, err)
	}
	lock, err := m.Acquire(ctx, "report", fencelock.Token("request-42"), fencelock.TTL(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if lock.Token() != "request-42" {
		t.Fatalf("token %q", lock.Token())
	}
	if held, err := m.IsLocked(ctx, "report"); err != nil || !held {
		t.Fatalf("IsLocked on a held name: %v %v", held, err)
	}
	if r, err := m.Remaining(ctx, "report"); err != nil || r < 15*time.Second || r > 20*time.Second {
		t.Fatalf("Remaining: %v %v", r, err)
	}
	h, err := m.Holder(ctx, "report")
	if err != nil || !h.Held || !h.Noted || h.Label != "billing on host-7" || h.FencingToken != lock.FencingToken() {
		t.Fatalf("Holder: %+v %v", h, err)
	}
	if time.Since(h.Since) > time.Minute || time.Since(h.Since) < -time.Minute {
		t.Fatalf("Holder since %v", h.Since)
	}
	if held, err := m.IsHeldByToken(ctx, "report", "request-42"); err != nil || !held {
		t.Fatalf("IsHeldByToken with its token: %v %v", held, err)
	}
	if held, err := m.IsHeldByToken(ctx, "report", "someone-else"); err != nil || held {
		t.Fatalf("IsHeldByToken with another token: %v %v", held, err)
	}
	// The request-id pattern: detach, then extend and release by name and token.
	if err := lock.Detach(); err != nil {
		t.Fatal(err)
	}
	if v, err := m.ExtendByToken(ctx, "report", "request-42", time.Minute); err != nil || v < 50*time.Second {
		t.Fatalf("ExtendByToken: %v %v", v, err)
	}
	if err := m.ReleaseByToken(ctx, "report", "someone-else"); !errors.Is(err, fencelock.ErrLockLost) {
		t.Fatalf("ReleaseByToken with another token: %v", err)
	}
	if err := m.ReleaseByToken(ctx, "report", "request-42"); err != nil {
		t.Fatal(err)
	}
	if r, err := m.Remaining(ctx, "report"); err != nil || r != 0 {
		t.Fatalf("Remaining once released: %v %v", r, err)
	}
}
