//go:build cgo && linux && amd64

package fencelock

/*
#include <stdlib.h>
#include <fencelock.h>
*/
import "C"

import (
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// Manager talks to one Redis server (the single-server lock), a Sentinel-watched master, a
// Redis Cluster, or several independent servers (Redlock, quorum n/2+1). Safe for concurrent
// use; make one per server set and share it.
type Manager struct {
	mu  sync.RWMutex
	ptr *C.fl_manager
}

// NewManager checks every URL and option (before any network call: a server that is down
// does not fail it) and makes a manager. URLs: redis://[user:password@]host[:port][/db],
// rediss:// (TLS), redis+sentinel://s1:26379,s2:26379/mymaster, redis+cluster://h1:7000,h2:7001,
// redis+unix:///path. Errors are ErrInvalidArgument, naming the bad URL or option with its
// password masked.
func NewManager(urls []string, opts ...ManagerOption) (*Manager, error) {
	warnByDefault()
	var s settings
	for _, o := range opts {
		o(&s)
	}
	options, err := s.build()
	if err != nil {
		return nil, err
	}
	defer C.fl_manager_options_free(options)
	curls := make([]*C.char, len(urls))
	for i, u := range urls {
		curls[i] = C.CString(u)
	}
	defer func() {
		for _, c := range curls {
			C.free(unsafe.Pointer(c))
		}
	}()
	var first **C.char
	if len(curls) > 0 {
		// The array is Go memory holding C pointers only: allowed as a cgo argument.
		first = &curls[0]
	}
	var ptr *C.fl_manager
	err = call(func() C.fl_status {
		return C.fl_manager_new(first, C.size_t(len(curls)), options, &ptr)
	})
	if err != nil {
		return nil, err
	}
	m := &Manager{ptr: ptr}
	runtime.SetFinalizer(m, (*Manager).Close)
	return m, nil
}

// Close frees the manager once its background clean-ups (an abandoned wait's place in line,
// a dropped lock's release) are done, each bounded by its server timeout. Locks acquired
// through it stay usable until released. Calling it twice is harmless; using the manager
// after it returns ErrInvalidArgument.
func (m *Manager) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ptr != nil {
		C.fl_manager_free(m.ptr)
		m.ptr = nil
		runtime.SetFinalizer(m, nil)
	}
}

// use runs f with the live manager (the read lock keeps Close from freeing it meanwhile).
func (m *Manager) use(f func(*C.fl_manager) error) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.ptr == nil {
		return invalid("the manager was closed")
	}
	return f(m.ptr)
}

// build makes the C options object from the settings; the caller frees it.
func (s *settings) build() (*C.fl_manager_options, error) {
	var o *C.fl_manager_options
	if err := call(func() C.fl_status { return C.fl_manager_options_new(&o) }); err != nil {
		return nil, err
	}
	for _, set := range s.setters() {
		if err := call(func() C.fl_status { return set(o) }); err != nil {
			C.fl_manager_options_free(o)
			return nil, err
		}
	}
	return o, nil
}

type setter func(*C.fl_manager_options) C.fl_status

// withText calls f with s as a C string, freed after.
func withText(s string, f func(*C.char) C.fl_status) C.fl_status {
	c := C.CString(s)
	defer C.free(unsafe.Pointer(c))
	return f(c)
}

// setters are the library calls that apply the options given, in order.
func (s *settings) setters() []setter {
	out := textSetter(s.keyPrefix, func(o *C.fl_manager_options, c *C.char) C.fl_status {
		return C.fl_manager_options_set_key_prefix(o, c)
	})
	out = append(out, s.timingSetters()...)
	out = append(out, s.securitySetters()...)
	return append(out, textSetter(s.holder, func(o *C.fl_manager_options, c *C.char) C.fl_status {
		return C.fl_manager_options_set_holder(o, c)
	})...)
}

// timingSetters apply the waits, timeouts and counts given.
func (s *settings) timingSetters() []setter {
	out := msSetter(s.retryDelay, func(o *C.fl_manager_options, v C.uint64_t) C.fl_status {
		return C.fl_manager_options_set_retry_delay_ms(o, v)
	})
	if s.retryJitter != nil {
		d := max(*s.retryJitter, 0)
		out = append(out, func(o *C.fl_manager_options) C.fl_status {
			return C.fl_manager_options_set_retry_jitter_ms(o, C.uint64_t(d.Milliseconds()))
		})
	}
	if s.driftFactor != nil {
		f := *s.driftFactor
		out = append(out, func(o *C.fl_manager_options) C.fl_status {
			return C.fl_manager_options_set_drift_factor(o, C.double(f))
		})
	}
	out = append(out, msSetter(s.serverTimeout, func(o *C.fl_manager_options, v C.uint64_t) C.fl_status {
		return C.fl_manager_options_set_server_timeout_ms(o, v)
	})...)
	out = append(out, msSetter(s.connectTimeout, func(o *C.fl_manager_options, v C.uint64_t) C.fl_status {
		return C.fl_manager_options_set_connect_timeout_ms(o, v)
	})...)
	if s.refusedAttempts != nil {
		n := *s.refusedAttempts
		out = append(out, func(o *C.fl_manager_options) C.fl_status {
			return C.fl_manager_options_set_refused_attempts(o, C.uint32_t(n))
		})
	}
	if a := s.replicaAck; a != nil {
		replicas := max(a.replicas, 0) // below 0: the library's error names the minimum
		out = append(out, func(o *C.fl_manager_options) C.fl_status {
			return C.fl_manager_options_set_replica_ack(o, C.uint32_t(replicas), C.uint64_t(millis(a.timeout)))
		})
	}
	return out
}

// securitySetters apply the password and the TLS settings given.
func (s *settings) securitySetters() []setter {
	out := textSetter(s.password, func(o *C.fl_manager_options, c *C.char) C.fl_status {
		return C.fl_manager_options_set_password(o, c)
	})
	out = append(out, textSetter(s.tlsCAFile, func(o *C.fl_manager_options, c *C.char) C.fl_status {
		return C.fl_manager_options_set_tls_ca_file(o, c)
	})...)
	out = append(out, textSetter(s.tlsCAPEM, func(o *C.fl_manager_options, c *C.char) C.fl_status {
		return C.fl_manager_options_set_tls_ca_pem(o, c)
	})...)
	out = append(out, pairSetter(s.tlsClientFiles, func(o *C.fl_manager_options, cert, key *C.char) C.fl_status {
		return C.fl_manager_options_set_tls_client_cert_files(o, cert, key)
	})...)
	out = append(out, pairSetter(s.tlsClientPEM, func(o *C.fl_manager_options, cert, key *C.char) C.fl_status {
		return C.fl_manager_options_set_tls_client_cert_pem(o, cert, key)
	})...)
	if s.tlsInsecure {
		out = append(out, func(o *C.fl_manager_options) C.fl_status {
			return C.fl_manager_options_set_tls_insecure(o, true)
		})
	}
	return out
}

// textSetter applies v, when given, through f.
func textSetter(v *string, f func(*C.fl_manager_options, *C.char) C.fl_status) []setter {
	if v == nil {
		return nil
	}
	t := *v
	return []setter{func(o *C.fl_manager_options) C.fl_status {
		return withText(t, func(c *C.char) C.fl_status { return f(o, c) })
	}}
}

// msSetter applies v, when given, in milliseconds through f; a duration not above 0 as 0,
// which the library refuses naming the option.
func msSetter(v *time.Duration, f func(*C.fl_manager_options, C.uint64_t) C.fl_status) []setter {
	if v == nil {
		return nil
	}
	var ms uint64
	if d := *v; d > 0 {
		ms = millis(d)
	}
	return []setter{func(o *C.fl_manager_options) C.fl_status { return f(o, C.uint64_t(ms)) }}
}

// pairSetter applies a certificate and its key, when given, through f.
func pairSetter(p *[2]string, f func(o *C.fl_manager_options, cert, key *C.char) C.fl_status) []setter {
	if p == nil {
		return nil
	}
	pair := *p
	return []setter{func(o *C.fl_manager_options) C.fl_status {
		return withText(pair[0], func(cert *C.char) C.fl_status {
			return withText(pair[1], func(key *C.char) C.fl_status { return f(o, cert, key) })
		})
	}}
}
