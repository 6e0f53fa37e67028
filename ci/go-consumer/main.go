// A Go program that uses fencelock as a user's would: by module path and version only (stage
// 80-dist serves the module from a file:// module proxy), built with cgo and no Rust
// toolchain. Usage: consumer REDIS_URL
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/fencelock/fencelock/bindings-go"
)

func main() {
	m, err := fencelock.NewManager([]string{os.Args[1]})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer m.Close()
	ctx := context.Background()
	lock, err := m.Acquire(ctx, "dist-go", fencelock.TTL(10*time.Second), fencelock.Wait(5*time.Second))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("go consumer: held dist-go with fencing token %d\n", lock.FencingToken())
	if err := lock.Release(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
