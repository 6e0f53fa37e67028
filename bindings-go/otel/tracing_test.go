package otel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencelock/fencelock/bindings-go"
	"github.com/fencelock/fencelock/bindings-go/internal/testredis"
	fencelockotel "github.com/fencelock/fencelock/bindings-go/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// ended waits (a bound for a hang) until the exporter has n spans.
func ended(t *testing.T, exp *tracetest.InMemoryExporter, n int) tracetest.SpanStubs {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(exp.GetSpans()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d spans after 10 s, want %d: %v", len(exp.GetSpans()), n, exp.GetSpans())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return exp.GetSpans()
}

func attr(s tracetest.SpanStub, key string) attribute.Value {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value
		}
	}
	return attribute.Value{}
}

func TestSpansAreChildrenOfTheCallersSpanWithTheirAttributes(t *testing.T) {
	url := testredis.Start(t).URL()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	stop, err := fencelockotel.Trace(tp)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	m, err := fencelock.NewManager([]string{url})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()

	ctx, request := tp.Tracer("test").Start(context.Background(), "request")
	lock, err := m.Acquire(ctx, "traced", fencelock.TTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.TryAcquire(ctx, "traced"); !errors.Is(err, fencelock.ErrNotAcquired) {
		t.Fatalf("TryAcquire of a held lock: %v", err)
	}
	if err := lock.Release(ctx); err != nil {
		t.Fatal(err)
	}
	request.End()
	// request, two acquire calls, one hold.
	got := ended(t, exp, 4)
	byName := map[string][]tracetest.SpanStub{}
	for _, s := range got {
		byName[s.Name] = append(byName[s.Name], s)
	}
	if len(byName["fencelock.acquire"]) != 2 || len(byName["fencelock.hold"]) != 1 {
		t.Fatalf("spans: %v", byName)
	}
	for _, s := range append(byName["fencelock.acquire"], byName["fencelock.hold"]...) {
		if s.Parent.SpanID() != request.SpanContext().SpanID() || s.SpanContext.TraceID() != request.SpanContext().TraceID() {
			t.Fatalf("%s is not a child of the caller's span: parent %v", s.Name, s.Parent.SpanID())
		}
		if attr(s, "lock").AsString() != "traced" || attr(s, "kind").AsString() != "mutex" {
			t.Fatalf("%s attributes: %v", s.Name, s.Attributes)
		}
		if !s.StartTime.Before(s.EndTime) && !s.StartTime.Equal(s.EndTime) {
			t.Fatalf("%s ends before it starts", s.Name)
		}
		if s.Status.Code == codes.Error {
			t.Fatalf("%s: status Error for a refused try or a release", s.Name)
		}
	}
	outcomes := map[string]bool{}
	for _, s := range byName["fencelock.acquire"] {
		outcomes[attr(s, "outcome").AsString()] = true
	}
	if !outcomes["acquired"] || !outcomes["not_acquired"] {
		t.Fatalf("acquire outcomes: %v", outcomes)
	}
	hold := byName["fencelock.hold"][0]
	if attr(hold, "fencing_token").AsInt64() != int64(lock.FencingToken()) || attr(hold, "outcome").AsString() != "released" {
		t.Fatalf("hold attributes: %v (token %d)", hold.Attributes, lock.FencingToken())
	}
}

func TestALostHoldIsAnErrorAndStopEndsTheSpans(t *testing.T) {
	srv := testredis.Start(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	stop, err := fencelockotel.Trace(tp)
	if err != nil {
		t.Fatal(err)
	}
	m, err := fencelock.NewManager([]string{srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx, request := tp.Tracer("test").Start(context.Background(), "request")
	lock, err := m.Acquire(ctx, "taken-away", fencelock.TTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	// Another owner takes the name: the extension finds it gone and the hold is lost.
	if _, err := srv.Do("SET", "taken-away", "someone-else"); err != nil {
		t.Fatal(err)
	}
	if err := lock.Extend(ctx, 10*time.Second); !errors.Is(err, fencelock.ErrLockLost) {
		t.Fatalf("extending a lock taken away: %v", err)
	}
	// The hold ends when the handle lets the lock go.
	if err := lock.Release(ctx); !errors.Is(err, fencelock.ErrLockLost) {
		t.Fatalf("releasing a lock taken away: %v", err)
	}
	request.End()
	var hold tracetest.SpanStub
	for _, s := range ended(t, exp, 3) {
		if s.Name == "fencelock.hold" {
			hold = s
		}
	}
	if hold.Status.Code != codes.Error || attr(hold, "outcome").AsString() != "lost" {
		t.Fatalf("a lost hold: status %v, attributes %v", hold.Status, hold.Attributes)
	}

	if err := stop(); err != nil {
		t.Fatal(err)
	}
	exp.Reset()
	lock, err = m.Acquire(context.Background(), "after-stop")
	if err != nil {
		t.Fatal(err)
	}
	_ = lock.Release(context.Background())
	if n := len(exp.GetSpans()); n != 0 {
		t.Fatalf("%d spans made after stop", n)
	}
}
