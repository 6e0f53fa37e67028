// A worker in Go for the cross-language fault tests (tests/chaos/tests/mixed.rs,
// mixed_faults.rs, partitions.rs, soak.rs) and the demo (ci/demo.sh), on the Go binding
// (bindings-go), built by tests/chaos/workers/build.sh into target/mixed/worker-go:
//
//	worker-go --servers URL[,URL...] --names A[,B...] --rounds N --hold-ms N --holder ID
//	          [--ttl-ms N] [--wait-ms N] [--server-timeout-ms N] [--duration-ms N]
//	          [--lease semaphore:LIMIT:COUNT | --lease rw:N | --lease election]
//	worker-go hold --servers URL[,URL...] --name NAME --ttl-ms N [--wait-ms N]
//	          [--server-timeout-ms N] [--auto-extend] [--store URL --resource R --value V]
//
// The same protocol as worker.py, line for line (its docstring has the whole of it): one
// `HOLD name=.. token=.. start_us=.. end_us=.. validity_us=.. holder=..` line per hold (with
// the lease's kind fields under --lease), `SHORT` for a lock given back unused because too
// little validity was left, `FAIL kind=K took_ms=N`, `RFAIL kind=K`, and `DONE acquired=N
// failed=M`; `hold` prints `ACQUIRED token=T start_us=S validity_us=V pid=P` and obeys WRITE
// and RELEASE on stdin. Wall-clock microseconds, the clock every process on the machine shares.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/fencelock/fencelock/bindings-go"
)

// slackMs is the room, past the hold, that the validity must leave before the worker uses a
// lock.
const slackMs = 50

func main() {
	args := os.Args[1:]
	hold := len(args) > 0 && args[0] == "hold"
	if hold {
		args = args[1:]
	}
	a, err := parse(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker-go:", err)
		os.Exit(64)
	}
	if hold {
		os.Exit(holdMode(a))
	}
	os.Exit(contend(a))
}

type options map[string]string

// parse reads `--key value` pairs; `--auto-extend` alone stands for "true".
func parse(args []string) (options, error) {
	out := options{}
	for i := 0; i < len(args); i++ {
		k := args[i]
		if !strings.HasPrefix(k, "--") {
			return nil, fmt.Errorf("unexpected argument %s", k)
		}
		if k == "--auto-extend" {
			out["auto-extend"] = "true"
			continue
		}
		if i+1 >= len(args) {
			return nil, fmt.Errorf("%s needs a value", k)
		}
		out[k[2:]] = args[i+1]
		i++
	}
	return out, nil
}

func (a options) need(k string) string {
	v, ok := a[k]
	if !ok {
		fmt.Fprintf(os.Stderr, "worker-go: --%s is required\n", k)
		os.Exit(64)
	}
	return v
}

func (a options) num(k string, dflt int64) int64 {
	v, ok := a[k]
	if !ok {
		return dflt
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		fmt.Fprintf(os.Stderr, "worker-go: --%s: %v\n", k, err)
		os.Exit(64)
	}
	return n
}

// servers splits on commas; a part that does not start a URL continues the previous one (a
// cluster URL names several nodes).
func servers(v string) []string {
	var out []string
	for _, part := range strings.Split(v, ",") {
		if len(out) > 0 && !strings.Contains(part, "://") {
			out[len(out)-1] += "," + part
		} else {
			out = append(out, part)
		}
	}
	return out
}

func manager(a options, serverTimeoutMs int64) (*fencelock.Manager, error) {
	opts := []fencelock.ManagerOption{fencelock.WithRetryDelay(50 * time.Millisecond)}
	if serverTimeoutMs > 0 {
		opts = append(opts, fencelock.WithServerTimeout(time.Duration(serverTimeoutMs)*time.Millisecond))
	}
	return fencelock.NewManager(servers(a.need("servers")), opts...)
}

func nowUs() int64 { return time.Now().UnixMicro() }

// kind is the protocol's name of an error's kind (worker.py's).
func kind(err error) string {
	var e *fencelock.Error
	if !errors.As(err, &e) {
		return "error:" + strings.ReplaceAll(err.Error(), " ", "_")
	}
	switch e.Kind {
	case fencelock.KindLockLost:
		return "not_held"
	case fencelock.KindRedis:
		return "redis_error"
	}
	return string(e.Kind)
}

type acquireFunc func(ctx context.Context, ttl, wait time.Duration) (*fencelock.Lock, error)

// leaseFor is how round r acquires name under --lease, and the kind fields of its HOLD line.
func leaseFor(m *fencelock.Manager, lease, name string, r int64) (acquireFunc, string) {
	opts := func(ttl, wait time.Duration) []fencelock.AcquireOption {
		return []fencelock.AcquireOption{fencelock.TTL(ttl), fencelock.Wait(wait)}
	}
	if rest, ok := strings.CutPrefix(lease, "semaphore:"); ok {
		p := strings.Split(rest, ":")
		limit, _ := strconv.ParseUint(p[0], 10, 32)
		count, _ := strconv.ParseUint(p[1], 10, 32)
		sem := m.Semaphore(name, uint32(limit))
		return func(ctx context.Context, ttl, wait time.Duration) (*fencelock.Lock, error) {
			return sem.Acquire(ctx, uint32(count), opts(ttl, wait)...)
		}, fmt.Sprintf(" kind=semaphore count=%d limit=%d", count, limit)
	}
	if rest, ok := strings.CutPrefix(lease, "rw:"); ok {
		every, _ := strconv.ParseInt(rest, 10, 64)
		rw := m.RWLock(name)
		if r%every == 0 {
			return func(ctx context.Context, ttl, wait time.Duration) (*fencelock.Lock, error) {
				return rw.Write(ctx, opts(ttl, wait)...)
			}, " kind=write"
		}
		return func(ctx context.Context, ttl, wait time.Duration) (*fencelock.Lock, error) {
			return rw.Read(ctx, opts(ttl, wait)...)
		}, " kind=read"
	}
	if lease == "election" {
		e := m.Election(name)
		value := fmt.Sprintf("go-%d", os.Getpid())
		return func(ctx context.Context, ttl, wait time.Duration) (*fencelock.Lock, error) {
			term, err := e.Campaign(ctx, value, opts(ttl, wait)...)
			if err != nil {
				return nil, err
			}
			return term.Lock, nil
		}, ""
	}
	return func(ctx context.Context, ttl, wait time.Duration) (*fencelock.Lock, error) {
		return m.Acquire(ctx, name, opts(ttl, wait)...)
	}, ""
}

// gate, with FENCELOCK_WORKER_GATE=1, says READY once the manager is built and waits for a
// line on stdin, so that the test starts every worker's run at the same moment.
func gate() {
	if os.Getenv("FENCELOCK_WORKER_GATE") != "1" {
		return
	}
	fmt.Println("READY")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
}

func contend(a options) int {
	names := strings.Split(a.need("names"), ",")
	rounds, _ := strconv.ParseInt(a.need("rounds"), 10, 64)
	holdMs, _ := strconv.ParseFloat(a.need("hold-ms"), 64)
	holder := a.need("holder")
	ttl := time.Duration(a.num("ttl-ms", 1000)) * time.Millisecond
	wait := time.Duration(a.num("wait-ms", 10000)) * time.Millisecond
	m, err := manager(a, a.num("server-timeout-ms", 100))
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker-go:", err)
		return 2
	}
	defer m.Close()
	gate()
	var deadline time.Time
	if d := a.num("duration-ms", 0); d > 0 {
		deadline = time.Now().Add(time.Duration(d) * time.Millisecond)
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	first := int64(crc32.ChecksumIEEE([]byte(holder)) % uint32(len(names)))
	ctx := context.Background()
	acquired, failed := 0, 0
	for r := int64(0); r < rounds && (deadline.IsZero() || time.Now().Before(deadline)); r++ {
		name := names[(first+r)%int64(len(names))]
		t0 := time.Now()
		acquire, fields := leaseFor(m, a["lease"], name, r)
		lock, err := acquire(ctx, ttl, wait)
		if err != nil {
			failed++
			fmt.Fprintf(out, "FAIL kind=%s took_ms=%d\n", kind(err), time.Since(t0).Milliseconds())
			out.Flush()
			time.Sleep(5 * time.Millisecond) // do not spin when servers refuse at once
			continue
		}
		startUs := nowUs()
		validityUs := lock.Validity().Microseconds()
		if float64(validityUs) < (holdMs+slackMs)*1000 {
			fmt.Fprintf(out, "SHORT name=%s validity_us=%d holder=%s\n", name, validityUs, holder)
			release(lock, out)
			continue
		}
		if holdMs > 0 {
			time.Sleep(time.Duration(holdMs * float64(time.Millisecond)))
		}
		endUs := nowUs()
		fmt.Fprintf(out, "HOLD name=%s token=%d start_us=%d end_us=%d validity_us=%d holder=%s%s\n",
			name, lock.FencingToken(), startUs, endUs, validityUs, holder, fields)
		acquired++
		release(lock, out)
		out.Flush()
	}
	fmt.Fprintf(out, "DONE acquired=%d failed=%d\n", acquired, failed)
	return 0
}

func release(lock *fencelock.Lock, out *bufio.Writer) {
	if err := lock.Release(context.Background()); err != nil {
		fmt.Fprintf(out, "RFAIL kind=%s\n", kind(err))
	}
}

func holdMode(a options) int {
	name := a.need("name")
	ttl := time.Duration(a.num("ttl-ms", 1000)) * time.Millisecond
	wait := time.Duration(a.num("wait-ms", 10000)) * time.Millisecond
	m, err := manager(a, a.num("server-timeout-ms", 0))
	if err != nil {
		fmt.Printf("ERROR kind=%s message=%v\n", kind(err), err)
		return 2
	}
	defer m.Close()
	ctx := context.Background()
	lock, err := m.Acquire(ctx, name, fencelock.TTL(ttl), fencelock.Wait(wait))
	if err == nil && a["auto-extend"] == "true" {
		err = lock.AutoExtend(time.Hour)
	}
	if err != nil {
		fmt.Printf("ERROR kind=%s message=%v\n", kind(err), err)
		return 2
	}
	fmt.Printf("ACQUIRED token=%d start_us=%d validity_us=%d pid=%d\n",
		lock.FencingToken(), nowUs(), lock.Validity().Microseconds(), os.Getpid())
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch command := strings.TrimSpace(in.Text()); command {
		case "WRITE":
			fmt.Println(write(lock, a.need("store"), a.resource(), a["value"]))
		case "RELEASE":
			endUs := nowUs()
			result := "ok"
			if err := lock.Release(ctx); err != nil {
				result = kind(err)
			}
			fmt.Printf("RELEASED result=%s end_us=%d\n", result, endUs)
			return 0
		default:
			fmt.Fprintf(os.Stderr, "worker-go: unknown command %q\n", command)
		}
	}
	_ = lock.Detach()
	return 0
}

func (a options) resource() string {
	if r, ok := a["resource"]; ok {
		return r
	}
	return "resource"
}

// write is the fenced write (fenced_write.lua, with the lock's fencing token) and the
// unfenced SET, on the store at url.
func write(lock *fencelock.Lock, store, resource, value string) string {
	lost := "false"
	if lock.IsLost() {
		lost = "true"
	}
	fenced := "rejected"
	_, self, _, _ := runtime.Caller(0)
	script, err := os.ReadFile(filepath.Join(workersDir(self), "fenced_write.lua"))
	if err == nil {
		var reply string
		reply, err = call(store, "EVAL", string(script), "2", "fenced:"+resource+":token",
			"fenced:"+resource+":data", strconv.FormatUint(lock.FencingToken(), 10), value)
		if reply == "1" {
			fenced = "accepted"
		}
	}
	if err != nil {
		fenced = "error:" + strings.ReplaceAll(err.Error(), " ", "_")
	}
	unfenced := "written"
	if _, err := call(store, "SET", "unfenced:"+resource, value); err != nil {
		unfenced = "error:" + strings.ReplaceAll(err.Error(), " ", "_")
	}
	return fmt.Sprintf("WROTE fenced=%s unfenced=%s lost=%s end_us=%d", fenced, unfenced, lost, nowUs())
}

// workersDir is tests/chaos/workers: $FENCELOCK_WORKERS, else this source file's parent.
func workersDir(self string) string {
	if d := os.Getenv("FENCELOCK_WORKERS"); d != "" {
		return d
	}
	return filepath.Dir(filepath.Dir(self))
}

// call sends one command to the redis-server at rawURL (redis://HOST:PORT) on a fresh
// connection and returns its reply (an integer, status or bulk string as text).
func call(rawURL string, words ...string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", err
	}
	c, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(words))
	for _, w := range words {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(w), w)
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		return "", err
	}
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	switch {
	case strings.HasPrefix(line, "-"):
		return "", errors.New(line[1:])
	case strings.HasPrefix(line, "$-1"):
		return "", nil
	case strings.HasPrefix(line, "$"):
		body, err := r.ReadString('\n')
		return strings.TrimRight(body, "\r\n"), err
	}
	return line[1:], nil
}
