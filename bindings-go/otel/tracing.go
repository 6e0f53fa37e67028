// Package otel makes OpenTelemetry spans of fencelock's trace spans (docs/observability.md,
// "Traces"): "fencelock.acquire" around each acquire call and "fencelock.hold" from the
// grant to the end of the hold, each a child of the span in the context the call was given,
// with the same attributes as in the other languages and their real start and end times:
//
//	stop, err := fencelockotel.Trace(otel.GetTracerProvider())
//	...
//	defer stop()
//
// The outcomes "error" (an acquire call) and "lost" (a hold) set the span's status to Error;
// a wait limit or a refused single try is not an error. Its own module, so that the fencelock
// package itself requires nothing.
package otel

import (
	"github.com/fencelock/fencelock/bindings-go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Trace makes the spans with the tracer "fencelock" of provider, from now on (one provider
// per process: a second Trace takes the spans over). stop ends it: no span is made after it
// returns.
func Trace(provider trace.TracerProvider) (stop func() error, err error) {
	tracer := provider.Tracer("fencelock")
	if err := fencelock.SetSpanHandler(func(s fencelock.Span) { record(tracer, s) }); err != nil {
		return nil, err
	}
	return func() error { return fencelock.SetSpanHandler(nil) }, nil
}

// failures are the outcomes that set a span's status to Error, with its description (as in
// Python and Node).
var failures = map[string]string{
	"error": "the acquire call failed",
	"lost":  "the lock was lost while held",
}

// record makes one span, already ended, under its parent.
func record(tracer trace.Tracer, s fencelock.Span) {
	attrs := make([]attribute.KeyValue, 0, len(s.Attributes))
	failure := ""
	for _, a := range s.Attributes {
		switch v := a.Value.(type) {
		case string:
			attrs = append(attrs, attribute.String(a.Key, v))
			if a.Key == "outcome" {
				failure = failures[v]
			}
		case uint64:
			attrs = append(attrs, attribute.Int64(a.Key, int64(v)))
		case bool:
			attrs = append(attrs, attribute.Bool(a.Key, v))
		}
	}
	_, span := tracer.Start(s.Parent, s.Name, trace.WithTimestamp(s.Start),
		trace.WithAttributes(attrs...), trace.WithSpanKind(trace.SpanKindInternal))
	if failure != "" {
		span.SetStatus(codes.Error, failure)
	}
	span.End(trace.WithTimestamp(s.End))
}
