package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The compare-and-delete release, as the write-ups' Go lock sends it.
const floorRelease = `if redis.call("get",KEYS[1])==ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`

// floorWay is the least a Go lock sends for an uncontended cycle, from Go over a plain socket
// (issue 56 item 2: the floor the binding's completion path is held to): SET name token NX PX
// ttl, then the compare-and-delete script by EVALSHA (loaded once). One connection, one call
// at a time; it does not wait (the cycle scenario only).
type floorWay struct {
	conn net.Conn
	rd   *bufio.Reader
	sha  string
}

func newFloor(urls []string) (*floorWay, error) {
	if len(urls) != 1 {
		return nil, fmt.Errorf("the floor takes one server, got %d", len(urls))
	}
	u, err := url.Parse(urls[0])
	if err != nil {
		return nil, err
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		return nil, err
	}
	f := &floorWay{conn: conn, rd: bufio.NewReader(conn)}
	if f.sha, err = f.call("SCRIPT", "LOAD", floorRelease); err != nil {
		conn.Close()
		return nil, err
	}
	return f, nil
}

// call sends one command and reads its reply: a simple string, an integer or a bulk string,
// as text.
func (f *floorWay) call(args ...string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := f.conn.Write([]byte(b.String())); err != nil {
		return "", err
	}
	line, err := f.rd.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", fmt.Errorf("floor: an empty reply")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return "", err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(f.rd, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	}
	return "", fmt.Errorf("floor: the server replied %q", line)
}

func (f *floorWay) lock(ctx context.Context, name string, ttl time.Duration) (func() error, error) {
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return nil, err
	}
	token := hex.EncodeToString(raw)
	ok, err := f.call("SET", name, token, "NX", "PX", strconv.FormatInt(ttl.Milliseconds(), 10))
	if err != nil {
		return nil, err
	}
	if ok != "OK" {
		return nil, fmt.Errorf("floor: SET NX refused on a free name")
	}
	return func() error {
		n, err := f.call("EVALSHA", f.sha, "1", name, token)
		if err == nil && n != "1" {
			err = fmt.Errorf("floor: the compare-and-delete deleted nothing")
		}
		return err
	}, nil
}

func (f *floorWay) close() { _ = f.conn.Close() }
