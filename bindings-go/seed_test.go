//go:build cgo && linux && amd64

package fencelock_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/fencelock/fencelock/bindings-go"
	"github.com/fencelock/fencelock/bindings-go/internal/testredis"
)

// The seed write-up's Go lock (examples/go/requestid): three processes at once, each taking
// the lock with its own request id and releasing it by name and id; their holds never overlap
// and their fencing tokens follow the order of their holds.
func TestTheWriteUpsGoLockExcludesAcrossProcesses(t *testing.T) {
	s := testredis.Start(t)
	dir, err := filepath.Abs("../examples/go")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "requestid")
	build := exec.Command("go", "build", "-o", bin, "./requestid")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./requestid: %v\n%s", err, out)
	}
	type hold struct{ from, to, fence int64 }
	outs := make(chan string, 3)
	for i := 0; i < 3; i++ {
		go func() {
			out, err := exec.Command(bin, s.URL(), "checkout", "150ms").CombinedOutput()
			if err != nil {
				out = append(out, []byte(err.Error())...)
			}
			outs <- string(out)
		}()
	}
	var holds []hold
	for i := 0; i < 3; i++ {
		out := <-outs
		var h hold
		if _, err := fmt.Sscanf(strings.TrimSpace(out), "held checkout from %d to %d with fencing token %d", &h.from, &h.to, &h.fence); err != nil {
			t.Fatalf("a process printed %q: %v", out, err)
		}
		holds = append(holds, h)
	}
	sort.Slice(holds, func(i, j int) bool { return holds[i].from < holds[j].from })
	for i := 1; i < len(holds); i++ {
		if holds[i].from < holds[i-1].to || holds[i].fence <= holds[i-1].fence {
			t.Fatalf("holds overlap or fencing tokens out of order: %+v", holds)
		}
	}
	if n, _ := s.Do("EXISTS", "checkout"); n != ":0" {
		t.Fatal("the lock is still held after every process released it")
	}
}

// The write-up warns against a release that deletes the key without checking its value: a
// holder whose lock expired deletes the next holder's. Shown with raw commands, then
// fencelock refusing in the same situation.
func TestAReleaseByPlainDelDeletesTheNextHoldersLockAndFencelocksDoesNot(t *testing.T) {
	s := testredis.Start(t)
	m := manager(t, s)
	ctx := context.Background()
	// The naive client: SET NX PX, its work outlasts the expiry, then DEL.
	if r, _ := s.Do("SET", "report", "naive-id", "NX", "PX", "100"); r != "+OK" {
		t.Fatalf("SET NX PX: %s", r)
	}
	time.Sleep(150 * time.Millisecond) // expired while the naive client worked
	next, err := m.Acquire(ctx, "report")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Do("DEL", "report"); err != nil { // the naive release
		t.Fatal(err)
	}
	if err := next.Release(ctx); !errors.Is(err, fencelock.ErrLockLost) {
		t.Fatalf("the next holder's lock, deleted by the naive release: %v", err)
	}
	// fencelock in the same situation: the late release is refused, the next holder keeps it.
	late, err := m.Acquire(ctx, "report", fencelock.TTL(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond)
	successor, err := m.Acquire(ctx, "report", fencelock.TTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := late.Release(ctx); !errors.Is(err, fencelock.ErrLockLost) {
		t.Fatalf("a release after the expiry: %v", err)
	}
	if held, err := m.IsLocked(ctx, "report"); err != nil || !held {
		t.Fatalf("the successor lost its lock to a late release: %v %v", held, err)
	}
	if successor.FencingToken() <= late.FencingToken() {
		t.Fatalf("fencing tokens %d then %d", late.FencingToken(), successor.FencingToken())
	}
	if err := successor.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
