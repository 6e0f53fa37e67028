package prometheus_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fencelock/fencelock/bindings-go"
	"github.com/fencelock/fencelock/bindings-go/internal/testredis"
	fencelockprom "github.com/fencelock/fencelock/bindings-go/prometheus"
	prom "github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// series finds the metric of family name whose labels include want.
func series(t *testing.T, families []*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue next
				}
			}
			return m
		}
	}
	t.Fatalf("no %s series with %v", name, want)
	return nil
}

func TestTheCollectorExportsTheSeriesOfEveryLanguage(t *testing.T) {
	url := testredis.Start(t).URL()
	reg := prom.NewRegistry()
	reg.MustRegister(fencelockprom.NewCollector())
	defer fencelock.SetSampleHandler(nil)
	m, err := fencelock.NewManager([]string{url})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	lock, err := m.Acquire(ctx, "metered")
	if err != nil {
		t.Fatal(err)
	}
	held, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if g := series(t, held, "fencelock_locks_held", map[string]string{"kind": "mutex"}).GetGauge().GetValue(); g != 1 {
		t.Fatalf("fencelock_locks_held while holding: %v", g)
	}
	if err := lock.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := m.TryAcquire(ctx, "metered-other", fencelock.TTL(time.Second)); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	wait := series(t, families, "fencelock_acquire_wait_seconds", map[string]string{"kind": "mutex", "outcome": "acquired"})
	if wait.GetHistogram().GetSampleCount() < 2 || len(wait.GetHistogram().GetBucket()) == 0 {
		t.Fatalf("fencelock_acquire_wait_seconds: %v", wait)
	}
	hold := series(t, families, "fencelock_hold_seconds", map[string]string{"outcome": "released"})
	if hold.GetHistogram().GetSampleCount() != 1 {
		t.Fatalf("fencelock_hold_seconds: %v", hold)
	}
	var names []string
	for _, f := range families {
		names = append(names, f.GetName())
		if !strings.HasPrefix(f.GetName(), "fencelock_") || f.GetHelp() == "" {
			t.Errorf("series %s, help %q", f.GetName(), f.GetHelp())
		}
	}
	t.Logf("series: %v", names)
}
