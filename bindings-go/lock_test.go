//go:build cgo && linux && amd64

package fencelock_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencelock/fencelock/bindings-go"
	"github.com/fencelock/fencelock/bindings-go/internal/testredis"
)

func manager(t testing.TB, s *testredis.Server, opts ...fencelock.ManagerOption) *fencelock.Manager {
	t.Helper()
	m, err := fencelock.NewManager([]string{s.URL()}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

func TestAcquireExtendRelease(t *testing.T) {
	s := testredis.Start(t)
	m := manager(t, s)
	ctx := context.Background()
	lock, err := m.Acquire(ctx, "invoices", fencelock.TTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if lock.Name() != "invoices" || lock.FencingToken() == 0 || lock.Token() == "" {
		t.Fatalf("name %q, fencing token %d, token %q", lock.Name(), lock.FencingToken(), lock.Token())
	}
	if v := lock.Validity(); v <= 9*time.Second || v > 10*time.Second {
		t.Fatalf("validity %v", v)
	}
	if got, _ := s.Do("GET", "invoices"); got != lock.Token() {
		t.Fatalf("the key holds %q, the lock's token is %q", got, lock.Token())
	}
	if err := lock.Extend(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	pttl, _ := s.Do("PTTL", "invoices")
	if ms, _ := strconv.Atoi(strings.TrimPrefix(pttl, ":")); ms <= 50000 || ms > 60000 {
		t.Fatalf("PTTL after extending to a minute: %s", pttl)
	}
	if err := lock.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Do("EXISTS", "invoices"); got != ":0" {
		t.Fatalf("released, the key exists: %s", got)
	}
	if err := lock.Release(ctx); !errors.Is(err, fencelock.ErrInvalidArgument) {
		t.Fatalf("a second release: %v", err)
	}
	if lock.Validity() != 0 {
		t.Fatal("a released lock has validity")
	}
	next, err := m.Acquire(ctx, "invoices")
	if err != nil {
		t.Fatal(err)
	}
	if next.FencingToken() <= lock.FencingToken() {
		t.Fatalf("fencing tokens %d then %d", lock.FencingToken(), next.FencingToken())
	}
	_ = next.Release(ctx)
}

func TestTryAcquireOnAHeldNameIsNotAcquired(t *testing.T) {
	s := testredis.Start(t)
	m := manager(t, s)
	ctx := context.Background()
	held, err := m.Acquire(ctx, "held")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(ctx)
	lock, err := m.TryAcquire(ctx, "held")
	if lock != nil || !errors.Is(err, fencelock.ErrNotAcquired) {
		t.Fatalf("TryAcquire on a held name: %v, %v", lock, err)
	}
	var e *fencelock.Error
	if !errors.As(err, &e) || e.Kind != fencelock.KindNotAcquired || len(e.Servers) != 1 || e.Servers[0].Outcome != "held" {
		t.Fatalf("the error: %#v", e)
	}
	start := time.Now()
	_, err = m.Acquire(ctx, "held", fencelock.Wait(300*time.Millisecond))
	if !errors.Is(err, fencelock.ErrNotAcquired) || time.Since(start) < 300*time.Millisecond {
		t.Fatalf("a wait limit: %v after %v", err, time.Since(start))
	}
}

func TestBadInputFailsBeforeAnyNetworkCall(t *testing.T) {
	nowhere := "redis://127.0.0.1:" + strconv.Itoa(testredis.FreePort(t))
	m, err := fencelock.NewManager([]string{nowhere})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	for _, c := range []struct {
		name string
		opts []fencelock.AcquireOption
		want string
	}{
		{"", nil, "name"},
		{"x", []fencelock.AcquireOption{fencelock.TTL(-time.Second)}, "ttl"},
		{"x", []fencelock.AcquireOption{fencelock.Wait(-time.Second)}, "wait"},
		{"x", []fencelock.AcquireOption{fencelock.Reentrant()}, "Token"},
		{"x", []fencelock.AcquireOption{fencelock.Token("")}, "token"},
	} {
		_, err := m.Acquire(ctx, c.name, c.opts...)
		if !errors.Is(err, fencelock.ErrInvalidArgument) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Acquire(%q): %v, want an invalid argument naming %s", c.name, err, c.want)
		}
	}
	for _, bad := range [][]string{nil, {"http://x"}, {"redis://u:s3cr3t@127.0.0.1:99999"}} {
		_, err := fencelock.NewManager(bad)
		if !errors.Is(err, fencelock.ErrInvalidArgument) || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("NewManager(%q): %v", bad, err)
		}
	}
	_, err = fencelock.NewManager([]string{nowhere}, fencelock.WithDriftFactor(0.7))
	if !errors.Is(err, fencelock.ErrInvalidArgument) || !strings.Contains(err.Error(), "drift_factor") {
		t.Errorf("a bad drift factor: %v", err)
	}
	m.Close()
	if _, err := m.Acquire(ctx, "x"); !errors.Is(err, fencelock.ErrInvalidArgument) {
		t.Errorf("after Close: %v", err)
	}
}

func TestNobodyListeningIsUnavailable(t *testing.T) {
	nowhere := "redis://127.0.0.1:" + strconv.Itoa(testredis.FreePort(t))
	m, err := fencelock.NewManager([]string{nowhere}, fencelock.WithRefusedAttempts(2))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	_, err = m.Acquire(context.Background(), "x")
	var e *fencelock.Error
	if !errors.Is(err, fencelock.ErrUnavailable) || !errors.As(err, &e) || !strings.Contains(e.Message, "on 2 attempts in a row") {
		t.Fatalf("%v", err)
	}
}

// A cancelled context ends a wait at once with ctx.Err() and leaves nothing in line: the
// holder's release then leaves the name free.
func TestACancelledContextEndsTheWaitAndLeavesNothing(t *testing.T) {
	s := testredis.Start(t)
	m := manager(t, s)
	bg := context.Background()
	held, err := m.Acquire(bg, "cancel-me")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(bg)
	result := make(chan error, 1)
	go func() {
		_, err := m.Acquire(ctx, "cancel-me")
		result <- err
	}()
	time.Sleep(200 * time.Millisecond) // in line by now; an early cancel is tested too below
	cancel()
	start := time.Now()
	select {
	case err := <-result:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the cancelled wait did not return")
	}
	t.Logf("returned %v after the cancel", time.Since(start))
	if err := held.Release(bg); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if n, _ := s.Do("ZCARD", queueKey(s, "cancel-me")); n == ":0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the cancelled waiter's place is still in line")
		}
		time.Sleep(10 * time.Millisecond)
	}
	lock, err := m.TryAcquire(bg, "cancel-me")
	if err != nil {
		t.Fatalf("free after the cancelled wait: %v", err)
	}
	_ = lock.Release(bg)
	if _, err := m.Acquire(ctx, "cancel-me"); !errors.Is(err, context.Canceled) {
		t.Fatalf("an ended context: %v", err)
	}
}

// queueKey is the name's wait queue key, found on the server (core/src/keys.rs lays it out
// as fencelock:{T}:queue:name, T the slot's tag); "" when there is none.
func queueKey(s *testredis.Server, name string) string {
	keys, _ := s.Array("KEYS", "fencelock:{*}:queue:"+name)
	if len(keys) == 0 {
		return "none"
	}
	return keys[0]
}

// Thousands of goroutines waiting on one held lock hold no OS thread each: the process stays
// under 100 threads, and the holder's release hands the lock down the line.
func TestThousandsOfWaitersStayUnderAHundredThreads(t *testing.T) {
	const waiters, batch = 2000, 50
	s := testredis.Start(t)
	m := manager(t, s)
	ctx := context.Background()
	held, err := m.Acquire(ctx, "crowd")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var inside, maxInside, got int32
	// The goroutines' failures, read after they all ended (a goroutine must not fail the test
	// after it returned, as one would when a Fatalf below closes the manager under it).
	var errsMu sync.Mutex
	var errs []error
	fail := func(err error) {
		errsMu.Lock()
		errs = append(errs, err)
		errsMu.Unlock()
	}
	wait := func() {
		defer wg.Done()
		lock, err := m.Acquire(ctx, "crowd", fencelock.TTL(30*time.Second))
		if err != nil {
			fail(err)
			return
		}
		n := atomic.AddInt32(&inside, 1)
		for {
			old := atomic.LoadInt32(&maxInside)
			if n <= old || atomic.CompareAndSwapInt32(&maxInside, old, n) {
				break
			}
		}
		atomic.AddInt32(&inside, -1)
		atomic.AddInt32(&got, 1)
		if err := lock.Release(ctx); err != nil {
			fail(err)
		}
	}
	// The waiters start in batches, each in line before the next starts: a goroutine calling
	// into the library holds an OS thread for that call, and Go keeps every thread it made,
	// so 2,000 calls started at once on a busy machine leave as many threads as were in
	// flight together (115 seen once). In batches, a waiter that held its thread while it
	// waits would still show as 2,000 threads; one that does not, as at most a batch's worth.
	deadline := time.Now().Add(60 * time.Second)
	for started := 0; started < waiters; {
		for i := 0; i < batch; i++ {
			wg.Add(1)
			go wait()
		}
		started += batch
		for {
			if n, _ := s.Do("ZCARD", queueKey(s, "crowd")); n == ":"+strconv.Itoa(started) {
				break
			}
			if time.Now().After(deadline) {
				n, _ := s.Do("ZCARD", queueKey(s, "crowd"))
				t.Fatalf("not every waiter is in line: %s of %d", n, started)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	threads := osThreads(t)
	t.Logf("%d goroutines waiting, %d OS threads", waiters, threads)
	if threads >= 100 {
		t.Fatalf("%d OS threads for %d waiting goroutines", threads, waiters)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d waiters failed, the first: %v", len(errs), errs[0])
	}
	if got != waiters || maxInside != 1 {
		t.Fatalf("%d of %d acquired, at most %d inside at once", got, waiters, maxInside)
	}
}

// osThreads is the process's OS thread count (/proc/self/status).
func osThreads(t testing.TB) int {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	t.Fatal("no Threads: line in /proc/self/status")
	return 0
}

func TestWithLockCancelsItsContextWhenTheLockIsLost(t *testing.T) {
	s := testredis.Start(t)
	m := manager(t, s)
	ctx := context.Background()
	err := m.WithLock(ctx, "job", func(ctx context.Context, l *fencelock.Lock) error {
		// Someone deletes the key behind the holder's back: the next extension finds it gone.
		if _, err := s.Do("DEL", "job"); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(30 * time.Second):
			return errors.New("the context was not cancelled")
		}
	}, fencelock.TTL(600*time.Millisecond))
	if !errors.Is(err, fencelock.ErrLockLost) {
		t.Fatalf("WithLock after a loss: %v", err)
	}
	ran := false
	err = m.WithLock(ctx, "job", func(ctx context.Context, l *fencelock.Lock) error {
		ran = l.FencingToken() > 0
		return nil
	})
	if err != nil || !ran {
		t.Fatalf("WithLock: %v (ran %v)", err, ran)
	}
}

func TestAcquireManyTakesEveryNameOrNone(t *testing.T) {
	s := testredis.Start(t)
	m := manager(t, s)
	ctx := context.Background()
	both, err := m.AcquireMany(ctx, []string{"{order-42}:payment", "{order-42}:stock"})
	if err != nil {
		t.Fatal(err)
	}
	if n := both.Names(); len(n) != 2 || n[1] != "{order-42}:stock" || len(both.FencingTokens()) != 2 {
		t.Fatalf("names %v, fencing tokens %v", n, both.FencingTokens())
	}
	// One of the names held: none is taken.
	_, err = m.AcquireMany(ctx, []string{"{order-42}:stock", "{order-42}:ship"}, fencelock.Wait(0))
	if !errors.Is(err, fencelock.ErrNotAcquired) {
		t.Fatalf("a name held: %v", err)
	}
	if held, _ := m.IsLocked(ctx, "{order-42}:ship"); held {
		t.Fatal("a part was taken")
	}
	if err := both.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := m.AcquireMany(ctx, []string{"a", "a"}); !errors.Is(err, fencelock.ErrInvalidArgument) {
		t.Fatalf("a name twice: %v", err)
	}
}

// Closing the manager while a goroutine waits in Acquire ends that wait (an error matching
// context.Canceled) instead of blocking Close until the wait ends.
func TestCloseEndsAWaitInProgress(t *testing.T) {
	s := testredis.Start(t)
	holder := manager(t, s)
	ctx := context.Background()
	held, err := holder.Acquire(ctx, "closing")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(ctx)
	m, err := fencelock.NewManager([]string{s.URL()})
	if err != nil {
		t.Fatal(err)
	}
	result := make(chan error, 1)
	go func() {
		_, err := m.Acquire(ctx, "closing")
		result <- err
	}()
	time.Sleep(200 * time.Millisecond) // waiting in line by now
	closed := make(chan struct{})
	go func() { m.Close(); close(closed) }()
	select {
	case err := <-result:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("a wait ended by Close: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not end the wait")
	}
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return")
	}
}

// IsLost reads the validity now: a lock whose validity ran out is lost at once, without
// waiting for the loss callback that closes Lost.
func TestIsLostOnceTheValidityRunsOut(t *testing.T) {
	s := testredis.Start(t)
	m := manager(t, s)
	lock, err := m.Acquire(context.Background(), "short", fencelock.TTL(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if lock.IsLost() {
		t.Fatal("lost at once")
	}
	time.Sleep(400 * time.Millisecond)
	if !lock.IsLost() {
		t.Fatal("not lost once its validity ran out")
	}
	if err := lock.Release(context.Background()); !errors.Is(err, fencelock.ErrLockLost) {
		t.Fatalf("releasing an expired lock: %v", err)
	}
	if !lock.IsLost() || lock.LostReason() == "" {
		t.Fatalf("after the release: lost %v, reason %q", lock.IsLost(), lock.LostReason())
	}
}
