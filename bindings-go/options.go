//go:build cgo && linux && amd64

package fencelock

import (
	"fmt"
	"time"
)

// ManagerOption sets one option of NewManager; every option the other languages have.
type ManagerOption func(*settings)

type settings struct {
	keyPrefix       *string
	retryDelay      *time.Duration
	retryJitter     *time.Duration
	driftFactor     *float64
	serverTimeout   *time.Duration
	connectTimeout  *time.Duration
	refusedAttempts *uint32
	replicaAck      *replicaAck
	password        *string
	tlsCAFile       *string
	tlsCAPEM        *string
	tlsClientFiles  *[2]string
	tlsClientPEM    *[2]string
	tlsInsecure     bool
	holder          *string
	errs            []error
}

type replicaAck struct {
	replicas int
	timeout  time.Duration
}

// WithKeyPrefix puts prefix in front of every lock name to make its Redis key.
func WithKeyPrefix(prefix string) ManagerOption {
	return func(s *settings) { s.keyPrefix = &prefix }
}

// WithRetryDelay sets the longest sleep between tries when no release notification comes
// (default 200 ms).
func WithRetryDelay(d time.Duration) ManagerOption {
	return func(s *settings) { s.retryDelay = &d }
}

// WithRetryJitter sets the random spread of that sleep (default half the retry delay).
func WithRetryJitter(d time.Duration) ManagerOption {
	return func(s *settings) { s.retryJitter = &d }
}

// WithDriftFactor sets the clock drift allowance, in [0, 0.5) (default 0.01).
func WithDriftFactor(f float64) ManagerOption {
	return func(s *settings) { s.driftFactor = &f }
}

// WithServerTimeout sets a fixed per-server call timeout (default ttl/20 within [10 ms, 1 s]).
func WithServerTimeout(d time.Duration) ManagerOption {
	return func(s *settings) { s.serverTimeout = &d }
}

// WithConnectTimeout bounds opening a connection to one server (default 2 s).
func WithConnectTimeout(d time.Duration) ManagerOption {
	return func(s *settings) { s.connectTimeout = &d }
}

// WithRefusedAttempts sets after how many attempts in a row on which every server refused the
// connection (nothing listens: a server not started, a wrong port) a wait gives up with
// ErrUnavailable (default 10, about 2 s; 0 waits through refusals).
func WithRefusedAttempts(n uint32) ManagerOption {
	return func(s *settings) { s.refusedAttempts = &n }
}

// WithReplicaAck makes a grant count on a server only once that many replicas acknowledged
// it within timeout, so that a lock survives a failover of its master (docs/SAFETY.md).
func WithReplicaAck(replicas int, timeout time.Duration) ManagerOption {
	return func(s *settings) { s.replicaAck = &replicaAck{replicas, timeout} }
}

// WithPassword sets the password of every server whose URL has none (with the URL's user, if
// any), so that it can come from the environment or a secret file instead of a URL.
func WithPassword(password string) ManagerOption {
	return func(s *settings) { s.password = &password }
}

// WithTLSCAFile trusts the CA certificates (PEM) in path for rediss:// servers instead of the
// system's roots.
func WithTLSCAFile(path string) ManagerOption {
	return func(s *settings) { s.tlsCAFile = &path }
}

// WithTLSCAPEM trusts the CA certificates of a PEM document.
func WithTLSCAPEM(pem string) ManagerOption {
	return func(s *settings) { s.tlsCAPEM = &pem }
}

// WithTLSClientCertFiles presents a client certificate (mutual TLS): PEM files of the chain
// and its key.
func WithTLSClientCertFiles(certPath, keyPath string) ManagerOption {
	return func(s *settings) { s.tlsClientFiles = &[2]string{certPath, keyPath} }
}

// WithTLSClientCertPEM presents a client certificate given as PEM documents.
func WithTLSClientCertPEM(certPEM, keyPEM string) ManagerOption {
	return func(s *settings) { s.tlsClientPEM = &[2]string{certPEM, keyPEM} }
}

// WithTLSInsecure accepts any certificate and host name: self-signed development servers only.
func WithTLSInsecure() ManagerOption {
	return func(s *settings) { s.tlsInsecure = true }
}

// WithHolder leaves a note next to each lock acquired saying who holds it (label, or
// host:pid when label is empty), since when and with which fencing token, for Holder and
// `fencelock status`.
func WithHolder(label string) ManagerOption {
	return func(s *settings) { s.holder = &label }
}

// AcquireOption sets one option of an acquisition.
type AcquireOption func(*acquireSettings)

type acquireSettings struct {
	ttl       time.Duration
	wait      *time.Duration
	token     *string
	reentrant bool
}

// DefaultTTL is the TTL of an acquisition without the TTL option, as in every language.
const DefaultTTL = 30 * time.Second

// TTL sets how long the lock lives unless extended or released (default 30 s).
func TTL(d time.Duration) AcquireOption {
	return func(a *acquireSettings) { a.ttl = d }
}

// Wait bounds how long an acquisition keeps trying (0: one try). Without it, Acquire waits
// until it gets the lock or its context ends.
func Wait(d time.Duration) AcquireOption {
	return func(a *acquireSettings) { a.wait = &d }
}

// Token acquires with the caller's token (a request or job id, at most 512 bytes) instead of
// a random one. It is exclusive, as SET NX with a request id is: while the name is held with
// it, an acquisition waits like for any other holder, unless Reentrant.
func Token(token string) AcquireOption {
	return func(a *acquireSettings) { a.token = &token }
}

// Reentrant, with Token: a name already held with that token is acquired again (its TTL
// reset, a new fencing token) instead of waiting.
func Reentrant() AcquireOption {
	return func(a *acquireSettings) { a.reentrant = true }
}

func acquireOptions(opts []AcquireOption) (acquireSettings, error) {
	a := acquireSettings{ttl: DefaultTTL}
	for _, o := range opts {
		o(&a)
	}
	if a.ttl <= 0 {
		return a, invalid(fmt.Sprintf("ttl must be positive, got %v", a.ttl))
	}
	if a.wait != nil && *a.wait < 0 {
		return a, invalid(fmt.Sprintf("wait must not be negative, got %v", *a.wait))
	}
	if a.reentrant && a.token == nil {
		return a, invalid("Reentrant needs Token: re-entry is for a caller's own token")
	}
	return a, nil
}

// millis is d in whole milliseconds, at least 1 for a positive duration.
func millis(d time.Duration) uint64 {
	ms := d.Milliseconds()
	if ms == 0 && d > 0 {
		ms = 1
	}
	return uint64(ms)
}
