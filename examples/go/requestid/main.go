// The seed write-up's Go lock, on fencelock: a request id (a UUID) as the lock's value, set
// only if absent with an expiry, released by a script that deletes the key only while it
// still holds that id. Here the id is the lock's Token, Acquire waits in line instead of
// retrying SET NX PX, and ReleaseByToken is the compare-and-delete.
//
//	go run ./requestid [redis-url] [lock-name] [hold]
//
// It prints when it held the lock (Unix milliseconds) and its fencing token, so that a test
// can run several at once and check that their holds never overlap.
package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/fencelock/fencelock/bindings-go"
)

// requestID is a random UUID (version 4), as the write-up's uuid.New().
func requestID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		log.Fatal(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

func main() {
	url, name, hold := "redis://127.0.0.1:6379", "orders:checkout", 200*time.Millisecond
	if len(os.Args) > 1 {
		url = os.Args[1]
	}
	if len(os.Args) > 2 {
		name = os.Args[2]
	}
	if len(os.Args) > 3 {
		d, err := time.ParseDuration(os.Args[3])
		if err != nil {
			log.Fatal(err)
		}
		hold = d
	}
	m, err := fencelock.NewManager([]string{url})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	id := requestID()
	lock, err := m.Acquire(ctx, name, fencelock.Token(id), fencelock.TTL(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	start := time.Now().UnixMilli()
	time.Sleep(hold) // the work the lock protects
	end := time.Now().UnixMilli()
	// The write-up's release: delete the key only if it still holds this request id. Here it
	// works by name and id alone, as a release from another process would.
	if err := lock.Detach(); err != nil {
		log.Fatal(err)
	}
	if err := m.ReleaseByToken(ctx, name, id); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("held %s from %d to %d with fencing token %d\n", name, start, end, lock.FencingToken())
}
