//go:build !cgo || !linux || !amd64

package fencelock

// fencelock's Go binding links libfencelock, a native library, through cgo, and the module
// carries it for linux/amd64 only: build with CGO_ENABLED=1 (and a C compiler) on linux/amd64.
var _ = fencelock_needs_CGO_ENABLED_1_on_linux_amd64
