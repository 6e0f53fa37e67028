// Package testredis starts the redis-server processes of the Go tests (this module's and
// the prometheus and compat modules'), on free loopback ports, and talks to them over a
// plain socket (RESP), so that the tests need no Redis client.
package testredis

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Server is a redis-server a test started on a free loopback port, stopped by PID.
type Server struct {
	Port int
	cmd  *exec.Cmd
}

// URL is the server's redis:// URL.
func (s *Server) URL() string { return fmt.Sprintf("redis://127.0.0.1:%d", s.Port) }

// FreePort is a loopback port nothing listens on (bound, then closed; never 6379).
func FreePort(t testing.TB) int {
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if port != 6379 {
			return port
		}
	}
}

// Start starts a redis-server (REDIS_SERVER_BIN, else redis-server on PATH) and waits
// until it answers PING; the test's cleanup kills exactly that process.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := os.Getenv("REDIS_SERVER_BIN")
	if bin == "" {
		bin = "redis-server"
	}
	for attempt := 0; attempt < 5; attempt++ {
		port := FreePort(t)
		cmd := exec.Command(bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", t.TempDir())
		if err := cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", bin, err)
		}
		s := &Server{Port: port, cmd: cmd}
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if reply, err := s.Do("PING"); err == nil && reply == "+PONG" {
				t.Cleanup(func() {
					_ = cmd.Process.Kill()
					_, _ = cmd.Process.Wait()
				})
				return s
			}
			time.Sleep(20 * time.Millisecond)
		}
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
	}
	t.Fatal("redis-server did not start")
	return nil
}

// send sends one command over a fresh connection (closed by the caller) and returns a
// reader of the reply.
func (s *Server) send(args ...string) (net.Conn, *bufio.Reader, error) {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", s.Port), time.Second)
	if err != nil {
		return nil, nil, err
	}
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		c.Close()
		return nil, nil, err
	}
	return c, bufio.NewReader(c), nil
}

// Do sends one command and returns the reply's first line (a bulk string's payload instead
// of its header).
func (s *Server) Do(args ...string) (string, error) {
	c, r, err := s.send(args...)
	if err != nil {
		return "", err
	}
	defer c.Close()
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if strings.HasPrefix(line, "$") && line != "$-1" {
		body, err := r.ReadString('\n')
		return strings.TrimRight(body, "\r\n"), err
	}
	return line, nil
}

// Array sends one command whose reply is an array of bulk strings (KEYS) and returns them.
func (s *Server) Array(args ...string) ([]string, error) {
	c, r, err := s.send(args...)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	head, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(head, "*") {
		return nil, fmt.Errorf("not an array: %q %v", head, err)
	}
	var n int
	fmt.Sscanf(head, "*%d", &n)
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		if _, err := r.ReadString('\n'); err != nil { // $len
			return nil, err
		}
		v, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		out = append(out, strings.TrimRight(v, "\r\n"))
	}
	return out, nil
}
