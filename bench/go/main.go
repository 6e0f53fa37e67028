// The Go benchmark's runner (bench/go.py drives it): one way of locking, one scenario, on
// the servers given; its last line of output is one JSON object.
//
//	bench-go cycle   WAY URLS SECONDS NAME                uncontended acquire + release
//	bench-go contend WAY URLS SECONDS NAME WORKERS HOLD_MS goroutines contending for one name
//	bench-go scale   WAY URLS SECONDS TASKS               goroutines on distinct names
//
// WAY: ours (the Go binding), redsync (go-redsync/redsync v4 on go-redis v9), redislock
// (bsm/redislock on go-redis v9; one server only), floor (SET NX PX and the compare-and-delete
// script over a plain socket; cycle on one server only). URLS: comma-separated redis:// URLs.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// locker is one way of taking and giving back a lock.
type locker interface {
	// lock waits for name (up to a minute) and returns its release.
	lock(ctx context.Context, name string, ttl time.Duration) (func() error, error)
	close()
}

const ttl = 10 * time.Second

func main() {
	if len(os.Args) < 6 {
		fmt.Fprintln(os.Stderr, "usage: bench-go cycle|contend|scale WAY URLS SECONDS ...")
		os.Exit(64)
	}
	scenario, way, urls := os.Args[1], os.Args[2], strings.Split(os.Args[3], ",")
	seconds, err := strconv.ParseFloat(os.Args[4], 64)
	check(err)
	l, err := newLocker(way, urls)
	check(err)
	defer l.close()
	window := time.Duration(seconds * float64(time.Second))
	var out any
	switch scenario {
	case "cycle":
		out = cycle(l, os.Args[5], window)
	case "contend":
		workers, err := strconv.Atoi(os.Args[6])
		check(err)
		holdMs, err := strconv.ParseFloat(os.Args[7], 64)
		check(err)
		out = contend(l, os.Args[5], window, time.Duration(holdMs*float64(time.Millisecond)), workers)
	case "scale":
		tasks, err := strconv.Atoi(os.Args[5])
		check(err)
		out = scale(l, window, tasks)
	default:
		check(fmt.Errorf("unknown scenario %q", scenario))
	}
	b, err := json.Marshal(out)
	check(err)
	fmt.Println(string(b))
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-go:", err)
		os.Exit(1)
	}
}

// warmup cycles, not counted: connections opened, scripts loaded, the runtime warm.
const warmup = 200

// cycle counts uncontended acquire + release cycles on one name for the window.
func cycle(l locker, name string, window time.Duration) map[string]any {
	ctx := context.Background()
	one := func() {
		release, err := l.lock(ctx, name, ttl)
		check(err)
		check(release())
	}
	for i := 0; i < warmup; i++ {
		one()
	}
	start := time.Now()
	n := 0
	for time.Since(start) < window {
		one()
		n++
	}
	return map[string]any{"cycles": n, "seconds": time.Since(start).Seconds()}
}

// contend runs workers goroutines that each take name, hold it for hold and give it back,
// for the window: each one's count, the 99th percentile of the waits, and the hand-off time
// (from a release to the next grant) at the median.
func contend(l locker, name string, window, hold time.Duration, workers int) map[string]any {
	return contendRun(l, name, window, workers, hold)
}

func contendRun(l locker, name string, window time.Duration, workers int, hold time.Duration) map[string]any {
	ctx := context.Background()
	var mu sync.Mutex
	var waits, handoffs []float64
	var released atomic.Int64 // unix ns of the last release
	counts := make([]int, workers)
	deadline := time.Now().Add(window)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for time.Now().Before(deadline) {
				t0 := time.Now()
				release, err := l.lock(ctx, name, ttl)
				if err != nil {
					continue
				}
				got := time.Now()
				gap := got.UnixNano() - released.Load()
				time.Sleep(hold)
				mu.Lock()
				waits = append(waits, got.Sub(t0).Seconds()*1e3)
				if gap > 0 && gap < int64(time.Second) {
					handoffs = append(handoffs, float64(gap)/1e6)
				}
				counts[w]++
				mu.Unlock()
				released.Store(time.Now().UnixNano())
				_ = release()
			}
		}(w)
	}
	wg.Wait()
	return map[string]any{
		"counts":            counts,
		"wait_p99_ms":       quantile(waits, 0.99),
		"handoff_median_ms": quantile(handoffs, 0.5),
		"seconds":           window.Seconds(),
	}
}

// scale runs tasks goroutines, each cycling on a name of its own, for the window.
func scale(l locker, window time.Duration, tasks int) map[string]any {
	ctx := context.Background()
	var total atomic.Int64
	deadline := time.Now().Add(window)
	var wg sync.WaitGroup
	for t := 0; t < tasks; t++ {
		wg.Add(1)
		go func(t int) {
			defer wg.Done()
			name := fmt.Sprintf("bench-go-scale-%d", t)
			for time.Now().Before(deadline) {
				release, err := l.lock(ctx, name, ttl)
				if err != nil {
					continue
				}
				if release() == nil {
					total.Add(1)
				}
			}
		}(t)
	}
	wg.Wait()
	return map[string]any{"cycles": total.Load(), "seconds": window.Seconds()}
}

func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[int(q*float64(len(s)-1))]
}
