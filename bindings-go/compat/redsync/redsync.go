// Package redsync is a drop-in for github.com/go-redsync/redsync/v4 on fencelock: the same
// names and options, the same pools (redsync's goredis/v9 and redigo adapters), one import
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

	mu       sync.Mutex
	urls     []string
	urlErr   error
	managers map[managerKey]*fencelock.Manager
}

// managerKey: redsync's drift and timeout factors are per mutex, fencelock's per manager.
type managerKey struct {
	drift   float64
	timeout time.Duration
}

// New makes a Redsync from connection pools made by redsync's adapters (goredis/v9, redigo)
// or URLPool. Their servers are found on first use; a pool whose server cannot be found makes
// every Lock fail, saying why.
func New(pools ...redis.Pool) *Redsync {
	return &Redsync{pools: pools, managers: map[managerKey]*fencelock.Manager{}}
}

// manager is the fencelock manager for the mutex's factors, made on first use.
func (r *Redsync) manager(m *Mutex) (*fencelock.Manager, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.urls == nil && r.urlErr == nil {
		r.urls, r.urlErr = serverURLs(r.pools)
	}
	if r.urlErr != nil {
		return nil, r.urlErr
	}
	key := managerKey{m.driftFactor, time.Duration(float64(m.expiry) * m.timeoutFactor)}
	if mgr, ok := r.managers[key]; ok {
		return mgr, nil
	}
	opts := []fencelock.ManagerOption{fencelock.WithDriftFactor(key.drift)}
	if key.timeout >= time.Millisecond {
		opts = append(opts, fencelock.WithServerTimeout(key.timeout))
	}
	mgr, err := fencelock.NewManager(r.urls, opts...)
	if err != nil {
		return nil, err
	}
	r.managers[key] = mgr
	return mgr, nil
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
		rs:            r,
	}
	for _, o := range options {
		o.Apply(m)
	}
	return m
}

func genValue() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b), nil
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

// WithSetNXOnExtend is accepted for compatibility: fencelock extends a lock only where it is
// still held, never taking it anew (a lock that expired is lost, and its fencing token says
// so to whoever acquires it next).
func WithSetNXOnExtend() Option {
	return OptionFunc(func(m *Mutex) { m.setNXOnExtend = true })
}

// errorf is a compat error of fencelock's making.
func errorf(format string, args ...any) error {
	return fmt.Errorf("redsync (fencelock): "+format, args...)
}
