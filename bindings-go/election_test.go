//go:build cgo && linux && amd64

package fencelock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencelock/fencelock/bindings-go"
	"github.com/fencelock/fencelock/bindings-go/internal/testredis"
)

// term is longer than any wait below: a change seen within them was pushed by the servers,
// not found by a timer at the term's end.
const term = 60 * time.Second

// next is the observer's next report within 10 s (more is a hang).
func next(t *testing.T, ch <-chan *fencelock.Leader) *fencelock.Leader {
	t.Helper()
	select {
	case l, ok := <-ch:
		if !ok {
			t.Fatal("the observer's channel closed")
		}
		return l
	case <-time.After(10 * time.Second):
		t.Fatal("the observer hung")
		return nil
	}
}

func TestOnLeaderCallsBackAtEachChangeUntilItsContextEnds(t *testing.T) {
	s := testredis.Start(t)
	m := manager(t, s)
	ctx := context.Background()
	e := m.Election("on-leader")
	reports := make(chan *fencelock.Leader)
	follow, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.OnLeader(follow, func(l *fencelock.Leader) { reports <- l }) }()
	if l := next(t, reports); l != nil {
		t.Fatalf("first the state now, nobody: %+v", l)
	}
	a, err := e.Campaign(ctx, "a", fencelock.TTL(term))
	if err != nil {
		t.Fatal(err)
	}
	if l := next(t, reports); l == nil || l.Value != "a" || l.FencingToken != a.FencingToken() {
		t.Fatalf("the leader: %+v", l)
	}
	if err := a.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if l := next(t, reports); l != nil {
		t.Fatalf("resigned, nobody: %+v", l)
	}
	stop()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("OnLeader returned %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("OnLeader did not return when its context ended")
	}
}

func TestATermLeadsProclaimsAndResignsWhileObserversFollow(t *testing.T) {
	s := testredis.Start(t)
	m := manager(t, s)
	ctx := context.Background()
	e := m.Election("scheduler")
	if l, err := e.Leader(ctx); err != nil || l != nil {
		t.Fatalf("nobody leads yet: %v %v", l, err)
	}
	watch, stop := context.WithCancel(ctx)
	ch := e.Observe(watch)
	if l := next(t, ch); l != nil {
		t.Fatalf("first the state now, nobody: %+v", l)
	}
	a, err := e.Campaign(ctx, "host-a:8080", fencelock.TTL(term))
	if err != nil {
		t.Fatal(err)
	}
	l := next(t, ch)
	if l == nil || l.Value != "host-a:8080" || l.FencingToken != a.FencingToken() || l.Remaining <= 0 {
		t.Fatalf("the leader: %+v (term %d)", l, a.FencingToken())
	}
	if _, err := e.TryCampaign(ctx, "b", fencelock.TTL(term)); !errors.Is(err, fencelock.ErrNotAcquired) {
		t.Fatalf("one leader at a time: %v", err)
	}
	if err := a.Proclaim(ctx, "host-a:9090"); err != nil {
		t.Fatal(err)
	}
	if l := next(t, ch); l == nil || l.Value != "host-a:9090" || l.FencingToken != a.FencingToken() {
		t.Fatalf("a proclaimed value, same term: %+v", l)
	}
	got := make(chan *fencelock.Term, 1)
	go func() {
		b, err := e.Campaign(ctx, "b", fencelock.TTL(term))
		if err != nil {
			t.Error(err)
		}
		got <- b
	}()
	if err := a.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	b := <-got
	if b == nil || b.FencingToken() <= a.FencingToken() {
		t.Fatalf("terms grow: %v", b)
	}
	l = next(t, ch)
	if l == nil { // nobody, briefly, between the two
		l = next(t, ch)
	}
	if l == nil || l.Value != "b" {
		t.Fatalf("the next leader: %+v", l)
	}
	if err := b.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if l := next(t, ch); l != nil {
		t.Fatalf("ends on nobody: %+v", l)
	}
	stop()
	select {
	case _, ok := <-ch:
		if ok {
			for range ch {
			}
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the channel was not closed with its context")
	}
}

func TestRunLeaderCancelsItsContextWhenTheTermIsLost(t *testing.T) {
	s := testredis.Start(t)
	m := manager(t, s)
	ctx := context.Background()
	e := m.Election("runner")
	err := e.RunLeader(ctx, "r", func(ctx context.Context) error {
		l, err := e.Leader(ctx)
		if err != nil || l == nil || l.Value != "r" {
			t.Errorf("leading: %+v %v", l, err)
		}
		return nil
	}, fencelock.TTL(term))
	if err != nil {
		t.Fatal(err)
	}
	err = e.RunLeader(ctx, "doomed", func(ctx context.Context) error {
		if _, err := s.Do("DEL", "runner"); err != nil {
			t.Error(err)
		}
		<-ctx.Done()
		return ctx.Err()
	}, fencelock.TTL(600*time.Millisecond))
	if !errors.Is(err, fencelock.ErrLockLost) {
		t.Fatalf("a lost term: %v", err)
	}
	if _, err := e.Campaign(ctx, strings.Repeat("v", 16385)); !errors.Is(err, fencelock.ErrInvalidArgument) {
		t.Fatalf("a value too long: %v", err)
	}
	if _, err := e.Campaign(ctx, "v", fencelock.Token("t")); !errors.Is(err, fencelock.ErrInvalidArgument) {
		t.Fatalf("a token: %v", err)
	}
}
