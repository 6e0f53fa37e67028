package redsync

import (
	"context"
	"errors"
	"time"

	"github.com/fencelock/fencelock/bindings-go"
	"github.com/go-redsync/redsync/v4/redis"
)

// A Mutex is a distributed mutual exclusion lock.
type Mutex struct {
	name   string
	expiry time.Duration

	tries     int
	delayFunc DelayFunc

	driftFactor   float64
	timeoutFactor float64

	quorum int

	genValueFunc  func() (string, error)
	value         string
	until         time.Time
	fencingToken  uint64
	shuffle       bool
	failFast      bool
	setNXOnExtend bool

	// pools are the servers' pools (redsync's field: a Mutex made without New works too).
	pools []redis.Pool
}

// Name returns the mutex's name (the Redis key).
func (m *Mutex) Name() string { return m.name }

// Value returns the current value: empty until a lock is acquired (or WithValue is used).
func (m *Mutex) Value() string { return m.value }

// Until returns when the acquired lock's validity ends: zero until a lock is acquired.
func (m *Mutex) Until() time.Time { return m.until }

// FencingToken returns the last acquisition's fencing token (0 before one): it grows with
// every acquisition of the name; a storage that rejects a token smaller than the largest it
// has seen refuses the writes of a holder whose lock expired. Not in redsync.
func (m *Mutex) FencingToken() uint64 { return m.fencingToken }

// TryLock makes one attempt: ErrTaken when another owner holds the lock.
func (m *Mutex) TryLock() error { return m.TryLockContext(context.Background()) }

// TryLockContext makes one attempt, as TryLock.
func (m *Mutex) TryLockContext(ctx context.Context) error { return m.lockContext(ctx, 1) }

// Lock locks m, waiting in line as long as its tries' delays last (redsync's tries, without
// the polling: the holder's release hands the lock to the first in line). It fails with
// ErrTaken (or ErrFailed) when the time runs out, and with ErrFailed when ctx ends.
func (m *Mutex) Lock() error { return m.LockContext(context.Background()) }

// LockContext locks m, as Lock.
func (m *Mutex) LockContext(ctx context.Context) error { return m.lockContext(ctx, m.tries) }

func (m *Mutex) lockContext(ctx context.Context, tries int) error {
	if ctx == nil {
		ctx = context.Background()
	}
	mgr, err := managerOf(m)
	if err != nil {
		return err
	}
	value, err := m.genValueFunc()
	if err != nil {
		return err
	}
	var wait time.Duration
	for i := 1; i < tries; i++ {
		wait += m.delayFunc(i)
	}
	lock, err := mgr.Acquire(ctx, m.name, fencelock.TTL(m.expiry), fencelock.Wait(wait), fencelock.Token(value))
	if err != nil {
		if ctx.Err() != nil {
			return ErrFailed
		}
		return translate(err)
	}
	m.value, m.fencingToken = value, lock.FencingToken()
	m.until = time.Now().Add(lock.Validity())
	// Released by name and value (Unlock, or another Mutex WithValue), as redsync's are.
	_ = lock.Detach()
	return nil
}

// Unlock releases the lock where it is held with m's value: (true, nil), or (false,
// ErrLockAlreadyExpired) when a quorum no longer held it.
func (m *Mutex) Unlock() (bool, error) { return m.UnlockContext(context.Background()) }

// UnlockContext releases the lock, as Unlock.
func (m *Mutex) UnlockContext(ctx context.Context) (bool, error) {
	mgr, err := managerOf(m)
	if err != nil {
		return false, err
	}
	if err := mgr.ReleaseByToken(ctx, m.name, m.value); err != nil {
		if errors.Is(err, fencelock.ErrLockLost) {
			return false, ErrLockAlreadyExpired
		}
		return false, translate(err)
	}
	return true, nil
}

// Extend resets the lock's expiry where it is held with m's value: (true, nil), or (false,
// ErrExtendFailed).
func (m *Mutex) Extend() (bool, error) { return m.ExtendContext(context.Background()) }

// ExtendContext resets the lock's expiry, as Extend.
func (m *Mutex) ExtendContext(ctx context.Context) (bool, error) {
	mgr, err := managerOf(m)
	if err != nil {
		return false, err
	}
	validity, err := mgr.ExtendByToken(ctx, m.name, m.value, m.expiry)
	if errors.Is(err, fencelock.ErrLockLost) && m.setNXOnExtend {
		return m.retake(ctx, mgr)
	}
	if err != nil {
		if errors.Is(err, fencelock.ErrLockLost) {
			return false, ErrExtendFailed
		}
		return false, translate(err)
	}
	m.until = time.Now().Add(validity)
	return true, nil
}

// retake is WithSetNXOnExtend's extension of a lock that expired: one try to acquire it anew
// with m's value, as a new acquisition (with a new fencing token) where nobody else took it.
func (m *Mutex) retake(ctx context.Context, mgr *fencelock.Manager) (bool, error) {
	lock, err := mgr.TryAcquire(ctx, m.name, fencelock.TTL(m.expiry), fencelock.Token(m.value))
	if err != nil {
		if errors.Is(err, fencelock.ErrNotAcquired) {
			return false, ErrExtendFailed
		}
		return false, translate(err)
	}
	m.fencingToken = lock.FencingToken()
	m.until = time.Now().Add(lock.Validity())
	_ = lock.Detach()
	return true, nil
}

// Valid says whether a quorum of the nodes hold the lock with m's value.
//
// Deprecated: as in redsync, use Until instead.
func (m *Mutex) Valid() (bool, error) { return m.ValidContext(context.Background()) }

// ValidContext says whether a quorum hold the lock with m's value, as Valid (fencelock's
// read, IsHeldByToken).
//
// Deprecated: as in redsync, use Until instead.
func (m *Mutex) ValidContext(ctx context.Context) (bool, error) {
	if m.value == "" {
		return false, nil
	}
	mgr, err := managerOf(m)
	if err != nil {
		return false, err
	}
	held, err := mgr.IsHeldByToken(ctx, m.name, m.value)
	if err != nil {
		return false, translate(err)
	}
	return held, nil
}

// translate maps fencelock's errors onto redsync's: a lock held on a quorum is ErrTaken with
// the nodes that hold it; unreachable nodes are RedisErrors; anything else ErrFailed joined
// with fencelock's error (errors.Is works for both).
func translate(err error) error {
	var e *fencelock.Error
	if !errors.As(err, &e) {
		return errors.Join(ErrFailed, err)
	}
	var taken []int
	var failed []error
	for i, s := range e.Servers {
		switch s.Outcome {
		case "held":
			taken = append(taken, i)
		case "unreachable", "timeout", "error":
			failed = append(failed, &RedisError{Node: i, Err: errors.New(s.Detail)})
		}
	}
	if errors.Is(err, fencelock.ErrNotAcquired) && len(taken) > 0 {
		return &ErrTaken{Nodes: taken}
	}
	if len(failed) > 0 {
		return errors.Join(append([]error{ErrFailed}, failed...)...)
	}
	return errors.Join(ErrFailed, err)
}
