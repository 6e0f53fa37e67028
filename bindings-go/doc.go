// Package fencelock is the Go face of fencelock: distributed locks on Redis with fencing
// tokens, first-come first-served hand-off and auto-extension, on the same Rust core (through
// its C ABI, libfencelock) as the Python, Node, C and Java bindings, so that a Go service takes
// the same locks as the others, through the same code.
//
//	m, err := fencelock.NewManager([]string{"redis://127.0.0.1:6379"}, fencelock.WithKeyPrefix("app:"))
//	if err != nil { ... }
//	defer m.Close()
//	lock, err := m.Acquire(ctx, "invoices", fencelock.TTL(30*time.Second)) // waits until ctx ends
//	if err != nil { ... }
//	defer lock.Release(ctx)
//	write(lock.FencingToken()) // the storage rejects a smaller token than it has seen
//
// A waiting call holds no OS thread: the wait runs in the core and completes through a
// callback, so ten thousand goroutines waiting for locks cost ten thousand goroutines. A
// cancelled context ends a wait at once with ctx.Err() and gives its place in line up.
//
// Errors are values: errors.Is(err, fencelock.ErrNotAcquired), ErrLockLost (a lock no longer
// held), ErrUnavailable (too few servers answered), ErrInvalidArgument (before any network
// call), ErrWrongKind, ErrRedis; errors.As(err, &e) with e a *fencelock.Error gives the kind,
// the message and what each server answered. No error or log ever shows a password.
//
// The drop rule is the other languages': a Lock nobody references any more is not released
// by the garbage collector (its TTL ends it), and nothing is released when the program exits:
// release what you acquire.
package fencelock
