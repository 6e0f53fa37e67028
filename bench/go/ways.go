package main

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/bsm/redislock"
	"github.com/fencelock/fencelock/bindings-go"
	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
)

func newLocker(way string, urls []string) (locker, error) {
	switch way {
	case "ours":
		m, err := fencelock.NewManager(urls)
		if err != nil {
			return nil, err
		}
		return ours{m}, nil
	case "redsync":
		var pools []redsyncPool
		var clients []*goredislib.Client
		for _, u := range urls {
			c, err := client(u)
			if err != nil {
				return nil, err
			}
			clients = append(clients, c)
			pools = append(pools, goredis.NewPool(c))
		}
		return &redsyncWay{rs: redsyncNew(pools), clients: clients}, nil
	case "redislock":
		if len(urls) != 1 {
			return nil, fmt.Errorf("redislock takes one server, got %d", len(urls))
		}
		c, err := client(urls[0])
		if err != nil {
			return nil, err
		}
		return redislockWay{client: c, locks: redislock.New(c)}, nil
	case "floor":
		return newFloor(urls)
	}
	return nil, fmt.Errorf("unknown way %q", way)
}

func client(raw string) (*goredislib.Client, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	return goredislib.NewClient(&goredislib.Options{Addr: u.Host}), nil
}

type ours struct{ m *fencelock.Manager }

func (o ours) lock(ctx context.Context, name string, ttl time.Duration) (func() error, error) {
	l, err := o.m.Acquire(ctx, name, fencelock.TTL(ttl), fencelock.Wait(time.Minute))
	if err != nil {
		return nil, err
	}
	return func() error { return l.Release(ctx) }, nil
}

func (o ours) close() { o.m.Close() }

type redsyncWay struct {
	rs      *redsync.Redsync
	clients []*goredislib.Client
}

// redsyncPool is a connection pool as redsync takes it.
type redsyncPool = redsyncredis.Pool

func redsyncNew(pools []redsyncPool) *redsync.Redsync { return redsync.New(pools...) }

func (r *redsyncWay) lock(ctx context.Context, name string, ttl time.Duration) (func() error, error) {
	// As a waiting redsync user configures it: enough tries to wait up to a minute.
	m := r.rs.NewMutex(name, redsync.WithExpiry(ttl), redsync.WithTries(600))
	if err := m.LockContext(ctx); err != nil {
		return nil, err
	}
	return func() error { _, err := m.UnlockContext(ctx); return err }, nil
}

func (r *redsyncWay) close() {
	for _, c := range r.clients {
		_ = c.Close()
	}
}

type redislockWay struct {
	client *goredislib.Client
	locks  *redislock.Client
}

func (r redislockWay) lock(ctx context.Context, name string, ttl time.Duration) (func() error, error) {
	// Waiting as redislock's README shows: a retry strategy (linear, 100 ms) under a deadline.
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	l, err := r.locks.Obtain(ctx, name, ttl, &redislock.Options{RetryStrategy: redislock.LinearBackoff(100 * time.Millisecond)})
	if err != nil {
		return nil, err
	}
	return func() error { return l.Release(context.Background()) }, nil
}

func (r redislockWay) close() { _ = r.client.Close() }
