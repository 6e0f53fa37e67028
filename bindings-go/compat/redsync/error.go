package redsync

import (
	"errors"
	"fmt"
)

// ErrFailed: the lock was not acquired within the tries' time.
var ErrFailed = errors.New("redsync: failed to acquire lock")

// ErrExtendFailed: the lock was not extended.
var ErrExtendFailed = errors.New("redsync: failed to extend lock")

// ErrLockAlreadyExpired: an unlock of a lock that had already expired.
var ErrLockAlreadyExpired = errors.New("redsync: failed to unlock, lock was already expired")

// ErrTaken: the lock is held by another owner on a quorum of the nodes.
type ErrTaken struct {
	Nodes []int
}

// Error names the nodes that hold the lock.
func (err ErrTaken) Error() string {
	return fmt.Sprintf("lock already taken, locked nodes: %v", err.Nodes)
}

// ErrNodeTaken: the lock is held by another owner on one node.
type ErrNodeTaken struct {
	Node int
}

// Error names the node.
func (err ErrNodeTaken) Error() string {
	return fmt.Sprintf("node #%d: lock already taken", err.Node)
}

// RedisError is a failure to talk to one of the nodes.
type RedisError struct {
	Node int
	Err  error
}

// Error names the node and what failed.
func (e RedisError) Error() string {
	return fmt.Sprintf("node #%d: %s", e.Node, e.Err)
}

// Unwrap is what failed.
func (e RedisError) Unwrap() error {
	return e.Err
}
