//go:build cgo && linux && amd64

package fencelock

/*
#include "glue.h"
*/
import "C"

import (
	"context"
	"sync"
	"time"
	"unsafe"
)

// observePoll is how long one long poll of Observe waits before it looks at its context.
const observePoll = 500 * time.Millisecond

// observeRetry is how long Observe waits after a failed read (servers unreachable) before it
// reads again.
const observeRetry = time.Second

// Election is a leader election on a name: candidates campaign in line, first come first
// served; the leader's Term is a Lock of the name, kept alive in the background, whose
// fencing token is the term number; anyone reads the leader (Leader) and follows it
// (Observe). A plain lock on the name excludes the candidates; a semaphore or read-write lock
// on it makes a campaign fail with ErrWrongKind.
type Election struct {
	m    *Manager
	name string
}

// Election is the election on name (nothing is contacted yet).
func (m *Manager) Election(name string) *Election {
	return &Election{m: m, name: name}
}

// Leader is an election's leader.
type Leader struct {
	// Value is what it proclaimed.
	Value string
	// FencingToken is its term number: larger than every earlier term's.
	FencingToken uint64
	// Since is when its term began, by its clock.
	Since time.Time
	// Remaining is how long its term lasts at least without another extension.
	Remaining time.Duration
}

// Term is this candidate's term as leader: a Lock of the election's name (Lost, IsLost,
// FencingToken, the term number), kept alive in the background until Resign.
type Term struct {
	*Lock
	mu    sync.Mutex
	value string
}

// Campaign campaigns with value until this candidate leads, waiting as Manager.Acquire does
// (the TTL and Wait options; without Wait, until ctx ends). The term is kept alive in the
// background until Resign.
func (e *Election) Campaign(ctx context.Context, value string, opts ...AcquireOption) (*Term, error) {
	return e.campaign(ctx, value, opts, nil)
}

// TryCampaign makes one attempt: ErrNotAcquired when someone else leads.
func (e *Election) TryCampaign(ctx context.Context, value string, opts ...AcquireOption) (*Term, error) {
	zero := int64(0)
	return e.campaign(ctx, value, opts, &zero)
}

func (e *Election) campaign(ctx context.Context, value string, opts []AcquireOption, wait *int64) (*Term, error) {
	a, err := acquireOptions(opts)
	if err != nil {
		return nil, err
	}
	if a.token != nil || a.reentrant {
		return nil, invalid("a campaign takes neither Token nor Reentrant")
	}
	w := waitMillis(a)
	if wait != nil {
		w = *wait
	}
	cname := C.CString(e.name)
	defer C.free(unsafe.Pointer(cname))
	cvalue := C.CString(value)
	defer C.free(unsafe.Pointer(cvalue))
	lock, err := e.m.lease(ctx, a, w, func(mp *C.fl_manager, l leaseArgs) C.fl_status {
		var el *C.fl_election
		if st := C.fl_election_new(mp, cname, &el); st != C.FL_OK {
			return st
		}
		defer C.fl_election_free(el)
		return C.fencelock_go_campaign_start(el, cvalue, l.ttl, l.wait, l.flags, l.handle, l.out)
	})
	if err != nil {
		return nil, err
	}
	return &Term{Lock: lock, value: value}, nil
}

// withElection runs f on the election's C handle, within one library call.
func (e *Election) withElection(ctx context.Context, f func(*C.fl_election) C.fl_status) error {
	return e.m.withName(ctx, e.name, func(mp *C.fl_manager, cname *C.char) C.fl_status {
		var el *C.fl_election
		if st := C.fl_election_new(mp, cname, &el); st != C.FL_OK {
			return st
		}
		defer C.fl_election_free(el)
		return f(el)
	})
}

// Leader is the leader now, changing nothing; nil when nobody leads.
func (e *Election) Leader(ctx context.Context) (*Leader, error) {
	var out C.fl_leader
	if err := e.withElection(ctx, func(el *C.fl_election) C.fl_status { return C.fl_election_leader(el, &out) }); err != nil {
		return nil, err
	}
	return leaderOf(&out), nil
}

// Observe follows the leader: the current one first (nil when nobody leads), then each
// change (a new term, a proclaimed value, nobody leading), pushed by the servers. The channel
// is closed when ctx ends. A read that fails (servers
// unreachable) is tried again a second later; nothing is sent meanwhile.
func (e *Election) Observe(ctx context.Context) <-chan *Leader {
	ch := make(chan *Leader)
	go func() {
		defer close(ch)
		var o *C.fl_observer
		err := e.withElection(ctx, func(el *C.fl_election) C.fl_status { return C.fl_election_observer_new(el, &o) })
		if err != nil {
			return
		}
		defer C.fl_observer_free(o)
		for ctx.Err() == nil {
			// In chunks, to look at ctx: the observer keeps its wait between them.
			out := new(C.fl_leader)
			var reported C.bool
			err := call(func() C.fl_status {
				return C.fl_observer_next(o, C.int64_t(observePoll.Milliseconds()), out, &reported)
			})
			if err != nil {
				select {
				case <-ctx.Done():
				case <-time.After(observeRetry):
				}
				continue
			}
			if !bool(reported) {
				continue
			}
			select {
			case ch <- leaderOf(out):
			case <-ctx.Done():
			}
		}
	}()
	return ch
}

// OnLeader calls fn with the leader now and then at each change (nil: nobody leads), as
// client-go's OnNewLeader, one call at a time, until ctx ends; it returns ctx's error (nil when
// the manager was closed first).
func (e *Election) OnLeader(ctx context.Context, fn func(*Leader)) error {
	for l := range e.Observe(ctx) {
		fn(l)
	}
	return ctx.Err()
}

// RunLeader campaigns with value, runs fn while leading (its context cancelled when the
// term is lost), then resigns. A loss while fn ran is an error matching ErrLockLost (joined
// with fn's own error, if any).
func (e *Election) RunLeader(ctx context.Context, value string, fn func(context.Context) error, opts ...AcquireOption) error {
	term, err := e.Campaign(ctx, value, opts...)
	if err != nil {
		return err
	}
	return runHeld(ctx, term.Lock, "the term of election "+quote(e.name), fn)
}

// Value is the value this leader proclaims now.
func (t *Term) Value() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.value
}

// Proclaim proclaims a new value, in the same term, pushed to every observer: ErrLockLost
// when the term is lost, ErrUnavailable when fewer than a quorum of servers noted it.
func (t *Term) Proclaim(ctx context.Context, value string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cvalue := C.CString(value)
	defer C.free(unsafe.Pointer(cvalue))
	err := t.with(func(p *C.fl_lock) error {
		return call(func() C.fl_status { return C.fl_election_proclaim(p, cvalue) })
	})
	if err == nil {
		t.mu.Lock()
		t.value = value
		t.mu.Unlock()
	}
	return err
}

// Resign ends the term: the next candidate in line leads at once. ErrLockLost when the term
// had been lost.
func (t *Term) Resign(ctx context.Context) error {
	return t.Release(ctx)
}

func leaderOf(l *C.fl_leader) *Leader {
	if !bool(l.leads) {
		return nil
	}
	return &Leader{
		Value:        C.GoStringN(&l.value[0], C.int(l.value_len)),
		FencingToken: uint64(l.fencing_token),
		Since:        time.UnixMilli(int64(l.since_ms)),
		Remaining:    time.Duration(l.remaining_ms) * time.Millisecond,
	}
}
