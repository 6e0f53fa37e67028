//go:build cgo && linux && amd64

package fencelock

/*
#include "glue.h"
*/
import "C"

import (
	"sync"
	"unsafe"
)

// Instrument is how a measurement is reported.
type Instrument int

const (
	// Counter: a count that only grows; a sample's value is the amount added.
	Counter Instrument = iota
	// Histogram: a distribution; a sample's value is one observation.
	Histogram
	// Gauge: a level that goes up and down; a sample's value is a change, +1 or -1.
	Gauge
)

// Measure is one of fencelock's measurements (the table of docs/observability.md), the same
// in every language: what exporters declare (bindings-go/prometheus does).
type Measure struct {
	Name       string
	Instrument Instrument
	// Unit is "seconds", or "1" for a count.
	Unit string
	Help string
	// Labels are the labels' names, in the order a Sample's values follow.
	Labels []string
	// Buckets are a histogram's bucket upper bounds (none for a counter or a gauge).
	Buckets []float64
}

// Sample is one measurement taken: never a token, a password or a server's address.
type Sample struct {
	Measure *Measure
	Value   float64
	// LabelValues follow Measure.Labels.
	LabelValues []string
}

var measures = sync.OnceValue(func() []Measure {
	n := int(C.fl_metric_count())
	out := make([]Measure, n)
	for i := range out {
		var d C.fl_metric_description
		if C.fl_metric_describe(C.size_t(i), &d) != C.FL_OK {
			continue
		}
		m := Measure{
			Name:       C.GoString(d.name),
			Instrument: Instrument(d.instrument),
			Unit:       C.GoString(d.unit),
			Help:       C.GoString(d.help),
		}
		for _, l := range unsafe.Slice(d.label_names, int(d.label_count)) {
			m.Labels = append(m.Labels, C.GoString(l))
		}
		if d.bucket_count > 0 {
			for _, b := range unsafe.Slice(d.buckets, int(d.bucket_count)) {
				m.Buckets = append(m.Buckets, float64(b))
			}
		}
		out[i] = m
	}
	return out
})

// Measures lists every measurement fencelock takes.
func Measures() []Measure { return measures() }

var samples struct {
	mu      sync.RWMutex
	handler func(Sample)
	byName  map[string]*Measure
}

// SetSampleHandler makes every sample of fencelock's measurements go to handler (nil: none,
// and measuring costs nothing), replacing any handler set before. handler runs on the
// library's threads, possibly several at once: it must be safe for concurrent use and return
// quickly. For exporters; bindings-go/prometheus is one.
func SetSampleHandler(handler func(Sample)) error {
	samples.mu.Lock()
	if samples.byName == nil {
		samples.byName = map[string]*Measure{}
		all := measures()
		for i := range all {
			samples.byName[all[i].Name] = &all[i]
		}
	}
	samples.handler = handler
	samples.mu.Unlock()
	// Outside the lock: the library waits for a sample being delivered, which takes it.
	on := C.int(0)
	if handler != nil {
		on = 1
	}
	return call(func() C.fl_status { return C.fencelock_go_set_samples(on) })
}

//export fencelockGoSample
func fencelockGoSample(name *C.char, value C.double, values **C.char, count C.size_t) {
	samples.mu.RLock()
	defer samples.mu.RUnlock()
	m := samples.byName[C.GoString(name)]
	if samples.handler == nil || m == nil {
		return
	}
	s := Sample{Measure: m, Value: float64(value)}
	for _, v := range unsafe.Slice(values, int(count)) {
		s.LabelValues = append(s.LabelValues, C.GoString(v))
	}
	samples.handler(s)
}
