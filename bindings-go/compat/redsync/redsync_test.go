package redsync_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	redsync "github.com/fencelock/fencelock/bindings-go/compat/redsync"
	"github.com/fencelock/fencelock/bindings-go/internal/testredis"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/go-redsync/redsync/v4/redis/redigo"
	redigolib "github.com/gomodule/redigo/redis"
	goredislib "github.com/redis/go-redis/v9"
)

// pools makes, for each server, the pool of redsync's adapter named by driver.
func pools(t *testing.T, driver string, servers ...*testredis.Server) []redsyncredis.Pool {
	var out []redsyncredis.Pool
	for _, s := range servers {
		addr := fmt.Sprintf("127.0.0.1:%d", s.Port)
		switch driver {
		case "goredis":
			c := goredislib.NewClient(&goredislib.Options{Addr: addr})
			t.Cleanup(func() { _ = c.Close() })
			out = append(out, goredis.NewPool(c))
		case "redigo":
			p := &redigolib.Pool{MaxIdle: 3, Dial: func() (redigolib.Conn, error) { return redigolib.Dial("tcp", addr) }}
			t.Cleanup(func() { _ = p.Close() })
			out = append(out, redigo.NewPool(p))
		}
	}
	return out
}

func TestAMutexExcludesAndIsHandedOverThroughEitherAdapter(t *testing.T) {
	for _, driver := range []string{"goredis", "redigo"} {
		t.Run(driver, func(t *testing.T) {
			servers := []*testredis.Server{testredis.Start(t), testredis.Start(t), testredis.Start(t)}
			rs := redsync.New(pools(t, driver, servers...)...)
			a := rs.NewMutex("test-redsync", redsync.WithExpiry(10*time.Second))
			if err := a.Lock(); err != nil {
				t.Fatal(err)
			}
			// The key is the name and its value the mutex's, on a quorum: as redsync's.
			held := 0
			for _, s := range servers {
				if v, _ := s.Do("GET", "test-redsync"); v == a.Value() {
					held++
				}
			}
			if held < 2 || a.Until().Before(time.Now().Add(9*time.Second)) || a.FencingToken() == 0 {
				t.Fatalf("held on %d servers, until %v, fencing token %d", held, a.Until(), a.FencingToken())
			}
			b := rs.NewMutex("test-redsync", redsync.WithTries(1))
			var taken *redsync.ErrTaken
			if err := b.TryLock(); !errors.As(err, &taken) || len(taken.Nodes) < 2 {
				t.Fatalf("TryLock on a held mutex: %v", err)
			}
			if err := b.Lock(); !errors.As(err, &taken) {
				t.Fatalf("Lock with one try on a held mutex: %v", err)
			}
			// A waiter is handed the lock by the release.
			c := rs.NewMutex("test-redsync", redsync.WithTries(100), redsync.WithRetryDelay(100*time.Millisecond))
			got := make(chan error, 1)
			go func() { got <- c.Lock() }()
			time.Sleep(200 * time.Millisecond)
			if ok, err := a.Unlock(); !ok || err != nil {
				t.Fatalf("Unlock: %v %v", ok, err)
			}
			if err := <-got; err != nil {
				t.Fatalf("the waiter: %v", err)
			}
			if c.FencingToken() <= a.FencingToken() {
				t.Fatalf("fencing tokens %d then %d", a.FencingToken(), c.FencingToken())
			}
			if ok, err := c.Valid(); !ok || err != nil {
				t.Fatalf("Valid: %v %v", ok, err)
			}
			if ok, err := c.Extend(); !ok || err != nil {
				t.Fatalf("Extend: %v %v", ok, err)
			}
			// Unlocked elsewhere by name and value.
			d := rs.NewMutex("test-redsync", redsync.WithValue(c.Value()))
			if ok, err := d.Unlock(); !ok || err != nil {
				t.Fatalf("Unlock WithValue: %v %v", ok, err)
			}
			if ok, err := c.Unlock(); ok || !errors.Is(err, redsync.ErrLockAlreadyExpired) {
				t.Fatalf("a second Unlock: %v %v", ok, err)
			}
			if ok, err := c.Extend(); ok || !errors.Is(err, redsync.ErrExtendFailed) {
				t.Fatalf("Extend of a released lock: %v %v", ok, err)
			}
		})
	}
}

func TestAnEndedContextFailsTheLock(t *testing.T) {
	s := testredis.Start(t)
	rs := redsync.New(pools(t, "goredis", s)...)
	held := rs.NewMutex("ctx")
	if err := held.Lock(); err != nil {
		t.Fatal(err)
	}
	defer held.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := rs.NewMutex("ctx").LockContext(ctx); !errors.Is(err, redsync.ErrFailed) {
		t.Fatalf("LockContext past its deadline: %v", err)
	}
}

func TestAPoolWithoutAServerSaysSo(t *testing.T) {
	rs := redsync.New(nowhere{})
	if err := rs.NewMutex("x").Lock(); err == nil || !contains(err.Error(), "URLPool") {
		t.Fatalf("%v", err)
	}
	// A URLPool names its server outright.
	s := testredis.Start(t)
	m := redsync.New(redsync.URLPool(s.URL())).NewMutex("by-url")
	if err := m.Lock(); err != nil {
		t.Fatal(err)
	}
	if ok, err := m.Unlock(); !ok || err != nil {
		t.Fatalf("%v %v", ok, err)
	}
}

type nowhere struct{}

func (nowhere) Get(context.Context) (redsyncredis.Conn, error) { return nil, errors.New("none") }

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// The values of one process share their first 16 characters (and stay redsync's 24), so that
// the process's waiting Lock calls on a name share one wake-up subscription.
func TestValuesShareTheirFirst16CharactersSoWaitersShareOneSubscription(t *testing.T) {
	s := testredis.Start(t)
	rs := redsync.New(pools(t, "goredis", s)...)
	values, prefixes := map[string]bool{}, map[string]bool{}
	for i := 0; i < 50; i++ {
		m := rs.NewMutex("values")
		if err := m.Lock(); err != nil {
			t.Fatal(err)
		}
		if v := m.Value(); len(v) != 24 {
			t.Fatalf("value %q has %d characters, redsync's 24", v, len(v))
		}
		values[m.Value()], prefixes[m.Value()[:16]] = true, true
		if ok, err := m.Unlock(); !ok || err != nil {
			t.Fatalf("Unlock: %v %v", ok, err)
		}
	}
	if len(values) != 50 || len(prefixes) != 1 {
		t.Fatalf("%d distinct values, %d distinct first 16 characters", len(values), len(prefixes))
	}
	ctx := context.Background()
	c := goredislib.NewClient(&goredislib.Options{Addr: fmt.Sprintf("127.0.0.1:%d", s.Port)})
	defer c.Close()
	subscribes := func() int {
		info, err := c.Info(ctx, "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		if i := strings.Index(info, "cmdstat_subscribe:calls="); i >= 0 {
			fmt.Sscanf(info[i+len("cmdstat_subscribe:calls="):], "%d", &n)
		}
		return n
	}
	before := subscribes()
	holder := rs.NewMutex("waits", redsync.WithExpiry(10*time.Second))
	if err := holder.Lock(); err != nil {
		t.Fatal(err)
	}
	// Six Lock calls wait in turn: each but the first is refused, waits in line and is woken
	// by the release before it.
	errs := make(chan error, 6)
	for i := 0; i < 6; i++ {
		go func() {
			m := rs.NewMutex("waits", redsync.WithExpiry(10*time.Second), redsync.WithTries(1000),
				redsync.WithRetryDelay(10*time.Millisecond))
			if err := m.Lock(); err != nil {
				errs <- err
				return
			}
			_, err := m.Unlock()
			errs <- err
		}()
	}
	inLine := func() int64 {
		keys, _ := c.Keys(ctx, "fencelock:{*}:queue:waits").Result()
		var n int64
		for _, k := range keys {
			n += c.ZCard(ctx, k).Val()
		}
		return n
	}
	for deadline := time.Now().Add(5 * time.Second); inLine() < 6; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 6 Lock calls in line", inLine())
		}
	}
	if ok, err := holder.Unlock(); !ok || err != nil {
		t.Fatalf("Unlock: %v %v", ok, err)
	}
	for i := 0; i < 6; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if sent := subscribes() - before; sent < 1 || sent > 2 {
		t.Fatalf("%d SUBSCRIBE for 6 waiting Lock calls", sent)
	}
}
