package cli

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workqueue/work/internal/redistest"
)

func TestParseRedis(t *testing.T) {
	for _, tc := range []struct {
		addr    string
		db      int
		network string
		address string
		user    string
		pass    string
		wantDB  int
		tls     bool
		display string
	}{
		{addr: "127.0.0.1:6379", db: -1, network: "tcp", address: "127.0.0.1:6379", display: "127.0.0.1:6379"},
		{addr: ":6379", db: -1, network: "tcp", address: "127.0.0.1:6379", display: "127.0.0.1:6379"},
		{addr: "redis.internal", db: 3, network: "tcp", address: "redis.internal:6379", wantDB: 3, display: "redis.internal:6379"},
		{addr: "[::1]:7000", db: -1, network: "tcp", address: "[::1]:7000", display: "[::1]:7000"},
		{addr: "::1", db: -1, network: "tcp", address: "[::1]:6379", display: "[::1]:6379"},
		{addr: "redis://localhost", db: -1, network: "tcp", address: "localhost:6379", display: "redis://localhost"},
		{addr: "redis://user:p%40ss@host:6380/4", db: -1, network: "tcp", address: "host:6380", user: "user", pass: "p@ss", wantDB: 4,
			display: "redis://user:xxxxx@host:6380/4"},
		{addr: "redis://:secret@host/2", db: 5, network: "tcp", address: "host:6379", pass: "secret", wantDB: 5, display: "redis://:xxxxx@host/2"},
		{addr: "redis://secret@host", db: -1, network: "tcp", address: "host:6379", pass: "secret", display: "redis://xxxxx@host"},
		{addr: "rediss://u:p@host:6390?db=7", db: -1, network: "tcp", address: "host:6390", user: "u", pass: "p", wantDB: 7, tls: true,
			display: "rediss://u:xxxxx@host:6390?db=7"},
		{addr: "unix:///run/redis.sock?db=1", db: -1, network: "unix", address: "/run/redis.sock", wantDB: 1, display: "unix:///run/redis.sock?db=1"},
	} {
		got, err := ParseRedis(tc.addr, tc.db)
		if err != nil {
			t.Errorf("ParseRedis(%q): %v", tc.addr, err)
			continue
		}
		if got.network != tc.network || got.address != tc.address || got.user != tc.user || got.pass != tc.pass ||
			got.db != tc.wantDB || got.tls != tc.tls || got.String() != tc.display {
			t.Errorf("ParseRedis(%q, %d) = %+v", tc.addr, tc.db, got)
		}
	}
	for _, bad := range []string{"", "  ", "http://host", "redis://host:99999", "redis://host/x", "host:0", "host:port",
		"unix://", "redis://user:hunter2@host:bad"} {
		_, err := ParseRedis(bad, -1)
		if err == nil {
			t.Errorf("ParseRedis(%q): no error", bad)
		} else if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("ParseRedis(%q): the error shows the password: %v", bad, err)
		}
	}
	if _, err := ParseRedis("host", -2); err == nil {
		t.Error("database -2 accepted")
	}
}

var testRedisAddr = redistest.Addr

func TestPoolAndPing(t *testing.T) {
	tg, err := ParseRedis("redis://"+testRedisAddr()+"/1", -1)
	if err != nil {
		t.Fatal(err)
	}
	pool := tg.Pool(2)
	defer pool.Close()
	if err := tg.Ping(pool); err != nil {
		t.Fatal(err)
	}
	c := pool.Get()
	defer c.Close()
	if _, err := c.Do("CLIENT", "SETNAME", "work-cli-test"); err != nil {
		t.Fatal(err)
	}
	info, err := c.Do("CLIENT", "INFO")
	if err == nil && !strings.Contains(string(info.([]byte)), "db=1") {
		t.Errorf("the pool did not select database 1: %s", info)
	}

	dead, _ := ParseRedis("127.0.0.1:1", -1)
	dp := dead.Pool(1)
	defer dp.Close()
	if err := dead.Ping(dp); err == nil || !strings.Contains(err.Error(), "cannot reach Redis at 127.0.0.1:1") {
		t.Errorf("ping of nothing: %v", err)
	}
	wrongPass, _ := ParseRedis("redis://:nope@"+testRedisAddr(), -1)
	wp := wrongPass.Pool(1)
	defer wp.Close()
	if err := wrongPass.Ping(wp); err == nil || strings.Contains(err.Error(), "nope") {
		t.Errorf("ping with a bad password: %v", err)
	}
}

func TestUIFlagsOptions(t *testing.T) {
	o, err := (&UIFlags{Listen: "127.0.0.1:5040"}).Options()
	if err != nil || len(o.AllowedHosts) == 0 {
		t.Errorf("loopback without auth: %+v, %v", o, err)
	}
	o, _ = (&UIFlags{Listen: "localhost:5040", Token: "t"}).Options()
	if len(o.AllowedHosts) != 0 || o.BearerToken != "t" {
		t.Errorf("loopback with a token: %+v", o)
	}
	o, _ = (&UIFlags{Listen: ":5040", User: "u", Password: "p", ReadOnly: true}).Options()
	if len(o.AllowedHosts) != 0 || o.BasicAuthUser != "u" || !o.ReadOnly {
		t.Errorf("every interface: %+v", o)
	}
	if _, err := (&UIFlags{Listen: ":1", User: "u"}).Options(); err == nil {
		t.Error("a user without a password accepted")
	}
	for addr, want := range map[string]bool{"127.0.0.1:1": true, "[::1]:1": true, "localhost:1": true, ":1": false, "0.0.0.0:1": false, "10.0.0.1:1": false, "x": false} {
		if isLoopback(addr) != want {
			t.Errorf("isLoopback(%q) = %v", addr, !want)
		}
	}
}

// syncBuffer is a writer safe for a goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestServeUIServesUntilCancelled(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var log syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- ServeUI(ctx, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hi") }),
			&UIFlags{Listen: addr}, &log)
	}()
	var resp *http.Response
	for i := 0; i < 200; i++ {
		if resp, err = http.Get("http://" + addr + "/"); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "hi" || !strings.Contains(log.String(), "web UI on http://"+addr+"/") {
		t.Errorf("body %q, log %q", b, log.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("ServeUI: %v", err)
	}
	// A busy address is an error.
	busy, _ := net.Listen("tcp", "127.0.0.1:0")
	defer busy.Close()
	if err := ServeUI(context.Background(), http.NotFoundHandler(), &UIFlags{Listen: busy.Addr().String()}, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "cannot listen") {
		t.Errorf("busy address: %v", err)
	}
	// Every interface without authentication: a warning.
	var warn syncBuffer
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	ServeUI(ctx2, http.NotFoundHandler(), &UIFlags{Listen: "0.0.0.0:0"}, &warn)
	if !strings.Contains(warn.String(), "warning") || !strings.Contains(warn.String(), "http://localhost:") {
		t.Errorf("no warning: %q", warn.String())
	}
}
