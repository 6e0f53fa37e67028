// Package prometheus exports fencelock's measurements (the table of docs/observability.md,
// the same series as the Python, Node, C and Java exporters) as a Prometheus collector:
//
//	prometheus.MustRegister(fencelockprom.NewCollector())
//
// Its own module, so that the fencelock package itself requires nothing.
package prometheus

import (
	"sync"

	"github.com/fencelock/fencelock/bindings-go"
	prom "github.com/prometheus/client_golang/prometheus"
)

// Collector is a prometheus.Collector of every fencelock_* series of this process.
type Collector struct {
	mu      sync.Mutex
	vectors map[string]prom.Collector
	ordered []prom.Collector
}

// NewCollector makes the collector and starts receiving fencelock's samples (one collector
// per process: a second one takes the samples over).
func NewCollector() *Collector {
	c := &Collector{vectors: map[string]prom.Collector{}}
	for _, m := range fencelock.Measures() {
		var v prom.Collector
		switch m.Instrument {
		case fencelock.Counter:
			v = prom.NewCounterVec(prom.CounterOpts{Name: m.Name, Help: m.Help}, m.Labels)
		case fencelock.Histogram:
			v = prom.NewHistogramVec(prom.HistogramOpts{Name: m.Name, Help: m.Help, Buckets: m.Buckets}, m.Labels)
		case fencelock.Gauge:
			v = prom.NewGaugeVec(prom.GaugeOpts{Name: m.Name, Help: m.Help}, m.Labels)
		default:
			continue
		}
		c.vectors[m.Name] = v
		c.ordered = append(c.ordered, v)
	}
	_ = fencelock.SetSampleHandler(c.observe)
	return c
}

func (c *Collector) observe(s fencelock.Sample) {
	switch v := c.vectors[s.Measure.Name].(type) {
	case *prom.CounterVec:
		v.WithLabelValues(s.LabelValues...).Add(s.Value)
	case *prom.HistogramVec:
		v.WithLabelValues(s.LabelValues...).Observe(s.Value)
	case *prom.GaugeVec:
		v.WithLabelValues(s.LabelValues...).Add(s.Value)
	}
}

// Describe sends every series' description.
func (c *Collector) Describe(ch chan<- *prom.Desc) {
	for _, v := range c.ordered {
		v.Describe(ch)
	}
}

// Collect sends every series' current values.
func (c *Collector) Collect(ch chan<- prom.Metric) {
	for _, v := range c.ordered {
		v.Collect(ch)
	}
}
