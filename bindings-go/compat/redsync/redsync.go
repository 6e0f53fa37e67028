// Package redsync is a drop-in for github.com/go-redsync/redsync/v4 on fencelock: the same
// names and options, the same pools (redsync's go-redis, redigo and rueidis adapters), one import
// changed. Underneath, fencelock's core takes the lock: waiters queue and are handed the lock
// in the order they came (redsync polls every 50-250 ms), every acquisition carries a fencing
// token (Mutex.FencingToken), and the values and scripts stay compatible with redsync's keys
// (the lock key is the name, its value the mutex's value). docs/migrating.md lists every
// difference.
//
//	import redsync "github.com/fencelock/fencelock/bindings-go/compat/redsync"
//
//	rs := redsync.New(goredis.NewPool(client))
//	mutex := rs.NewMutex("my-global-mutex")
//	if err := mutex.Lock(); err != nil { ... }
//	defer mutex.Unlock()
package redsync

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/fencelock/fencelock/bindings-go"
	"github.com/go-redsync/redsync/v4/redis"
)

const (
	minRetryDelayMilliSec = 50
	maxRetryDelayMilliSec = 250
)

// Redsync makes distributed mutexes over the servers of its pools (one pool: the
// single-server lock; several: Redlock with quorum n/2+1).
type Redsync struct {
	pools []redis.Pool
}

// New makes a Redsync from connection pools made by redsync's adapters (go-redis v6 to v9,
// redigo, rueidis) or URLPool. Their servers are found on first use; a pool whose server
// cannot be found makes every Lock fail, saying why.
func New(pools ...redis.Pool) *Redsync {
	return &Redsync{pools: pools}
}

// managers are the fencelock managers made for sets of pools, one per set and pair of
// factors, kept for the life of the process (as a service keeps its Redsync).
var managers struct {
	mu    sync.Mutex
	urls  map[string]urlsFound
	byKey map[managerKey]*fencelock.Manager
}

// urlsFound is what serverURLs found for a set of pools.
type urlsFound struct {
	urls []string
	err  error
	// pools are kept, so that no other pool is ever made at their addresses (poolsKey).
	pools []redis.Pool
}

// managerKey: redsync's drift and timeout factors are per mutex, fencelock's per manager.
type managerKey struct {
	pools   string
	drift   float64
	timeout time.Duration
}

// managerOf is the fencelock manager for the mutex's pools and factors, made on first use.
func managerOf(m *Mutex) (*fencelock.Manager, error) {
	managers.mu.Lock()
	defer managers.mu.Unlock()
	if managers.byKey == nil {
		managers.urls = map[string]urlsFound{}
		managers.byKey = map[managerKey]*fencelock.Manager{}
	}
	pools := poolsKey(m.pools)
	found, ok := managers.urls[pools]
	if !ok {
		found.urls, found.err = serverURLs(m.pools)
		found.pools = m.pools
		managers.urls[pools] = found
	}
	if found.err != nil {
		return nil, found.err
	}
	key := managerKey{pools, m.driftFactor, time.Duration(float64(m.expiry) * m.timeoutFactor)}
	if mgr, ok := managers.byKey[key]; ok {
		return mgr, nil
	}
	opts := []fencelock.ManagerOption{fencelock.WithDriftFactor(key.drift)}
	if key.timeout >= time.Millisecond {
		opts = append(opts, fencelock.WithServerTimeout(key.timeout))
	}
	mgr, err := fencelock.NewManager(found.urls, opts...)
	if err != nil {
		return nil, err
	}
	managers.byKey[key] = mgr
	return mgr, nil
}

// poolsKey names a set of pools by identity (a URLPool by its URL).
func poolsKey(pools []redis.Pool) string {
	var b strings.Builder
	for _, p := range pools {
		if u, ok := p.(URLPool); ok {
			fmt.Fprintf(&b, "url:%s\n", u)
			continue
		}
		v := reflect.ValueOf(p)
		if v.Kind() == reflect.Pointer {
			fmt.Fprintf(&b, "%T@%x\n", p, v.Pointer())
		} else {
			fmt.Fprintf(&b, "%T:%#v\n", p, p)
		}
	}
	return b.String()
}

// NewMutex returns a mutex on name, with redsync's defaults: an 8 s expiry, 32 tries 50-250
// ms apart, drift factor 0.01, timeout factor 0.05.
func (r *Redsync) NewMutex(name string, options ...Option) *Mutex {
	m := &Mutex{
		name:   name,
		expiry: 8 * time.Second,
		tries:  32,
		delayFunc: func(tries int) time.Duration {
			return time.Duration(minRetryDelayMilliSec+(maxRetryDelayMilliSec-minRetryDelayMilliSec)/2) * time.Millisecond
		},
		genValueFunc:  genValue,
		driftFactor:   0.01,
		timeoutFactor: 0.05,
		quorum:        len(r.pools)/2 + 1,
		pools:         r.pools,
	}
	for _, o := range options {
		o.Apply(m)
	}
	return m
}

// The first 16 characters of the process's mutex values (genValue), made once.
var valuePrefix = sync.OnceValues(func() (string, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b), nil
})

// genValue makes a value as redsync's (16 random bytes, base64: 24 characters), whose first
// 16 characters (12 bytes) are the same for every value of the process and the other 8 (6
// bytes) its own. fencelock wakes a waiter on a channel named by its token's first 16
// characters: shared like this, the process's waiting Lock calls on a name share one
// subscription, as fencelock's own tokens do, instead of subscribing for every call that waits.
func genValue() (string, error) {
	prefix, err := valuePrefix()
	if err != nil {
		return "", err
	}
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return prefix + base64.StdEncoding.EncodeToString(b), nil
}

// An Option configures a mutex.
type Option interface {
	Apply(*Mutex)
}

// OptionFunc is a function that configures a mutex.
type OptionFunc func(*Mutex)

// Apply calls f(mutex).
func (f OptionFunc) Apply(mutex *Mutex) { f(mutex) }

// A DelayFunc decides the time between tries; with fencelock, the sum of the delays of a
// Lock's tries is how long it waits in line.
type DelayFunc func(tries int) time.Duration

// WithExpiry sets the lock's expiry (its TTL); default 8 s.
func WithExpiry(expiry time.Duration) Option {
	return OptionFunc(func(m *Mutex) { m.expiry = expiry })
}

// WithTries sets how many tries Lock makes; with fencelock, Lock waits in line as long as
// those tries' delays would last. Default 32.
func WithTries(tries int) Option {
	return OptionFunc(func(m *Mutex) { m.tries = tries })
}

// WithRetryDelay sets the time between tries (see DelayFunc).
func WithRetryDelay(delay time.Duration) Option {
	return OptionFunc(func(m *Mutex) { m.delayFunc = func(int) time.Duration { return delay } })
}

// WithRetryDelayFunc sets the time between tries per try (see DelayFunc).
func WithRetryDelayFunc(delayFunc DelayFunc) Option {
	return OptionFunc(func(m *Mutex) { m.delayFunc = delayFunc })
}

// WithDriftFactor sets the clock drift factor; default 0.01.
func WithDriftFactor(factor float64) Option {
	return OptionFunc(func(m *Mutex) { m.driftFactor = factor })
}

// WithTimeoutFactor sets each server call's timeout as a fraction of the expiry; default 0.05.
func WithTimeoutFactor(factor float64) Option {
	return OptionFunc(func(m *Mutex) { m.timeoutFactor = factor })
}

// WithGenValueFunc sets how a lock's value (fencelock's token) is made.
func WithGenValueFunc(genValueFunc func() (string, error)) Option {
	return OptionFunc(func(m *Mutex) { m.genValueFunc = genValueFunc })
}

// WithValue gives the mutex a value without locking, so that it can unlock or extend a lock
// taken elsewhere with that value.
func WithValue(v string) Option {
	return OptionFunc(func(m *Mutex) { m.value = v })
}

// WithFailFast is accepted for compatibility: fencelock answers as soon as the servers have
// (each call bounded by the timeout factor).
func WithFailFast(b bool) Option {
	return OptionFunc(func(m *Mutex) { m.failFast = b })
}

// WithShufflePools is accepted for compatibility: fencelock asks every server at once.
func WithShufflePools(b bool) Option {
	return OptionFunc(func(m *Mutex) { m.shuffle = b })
}

// WithSetNXOnExtend makes Extend take a lock that expired anew when nobody else took it (one
// try, with the mutex's value): a new acquisition, with a new fencing token.
func WithSetNXOnExtend() Option {
	return OptionFunc(func(m *Mutex) { m.setNXOnExtend = true })
}

// errorf is a compat error of fencelock's making.
func errorf(format string, args ...any) error {
	return fmt.Errorf("redsync (fencelock): "+format, args...)
}
