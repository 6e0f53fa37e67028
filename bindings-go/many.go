//go:build cgo && linux && amd64

package fencelock

/*
#include "glue.h"
*/
import "C"

import (
	"context"
	"unsafe"
)

// AcquireMany acquires every one of names (1 to 64, none twice) at once, or none, as one
// Lock: one token, one fencing token per name (FencingTokens). It waits in every name's
// queue in the order callers came without holding any of them meanwhile, so locks on
// overlapping names never deadlock; extending and releasing act on all of them. On a Redis
// Cluster the names must share a hash slot (a common hash tag: {order-42}:payment).
func (m *Manager) AcquireMany(ctx context.Context, names []string, opts ...AcquireOption) (*Lock, error) {
	a, err := acquireOptions(opts)
	if err != nil {
		return nil, err
	}
	// The array of C strings lives in C memory: the library reads it during the start call.
	n := len(names)
	array := (**C.char)(C.malloc(C.size_t(n+1) * C.size_t(unsafe.Sizeof((*C.char)(nil)))))
	defer C.free(unsafe.Pointer(array))
	list := unsafe.Slice(array, n+1)
	for i, name := range names {
		list[i] = C.CString(name)
	}
	defer func() {
		for _, c := range list[:n] {
			C.free(unsafe.Pointer(c))
		}
	}()
	return m.lease(ctx, a, waitMillis(a), func(mp *C.fl_manager, l leaseArgs) C.fl_status {
		return C.fencelock_go_many_start(mp, array, C.size_t(n), l.token, l.ttl, l.wait, l.flags, l.handle, l.out)
	})
}
