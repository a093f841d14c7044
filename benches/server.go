package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gomodule/redigo/redis"
)

// redisServer is a throwaway redis-server on a free loopback port, owned by this process.
type redisServer struct {
	addr string
	port int
	dir  string

	proc    *os.Process
	exited  chan struct{}
	stopped sync.Once

	mu   sync.Mutex
	conn redis.Conn // the harness's own connection: INFO and FLUSHALL, never counted as a client round trip
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startRedis starts redis-server without persistence and waits until it answers PING.
func startRedis() (*redisServer, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "work-benches-redis-")
	if err != nil {
		return nil, err
	}
	s := &redisServer{addr: "127.0.0.1:" + strconv.Itoa(port), port: port, dir: dir, exited: make(chan struct{})}
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--daemonize", "no", "--loglevel", "warning"}
	started := make(chan error, 1)
	go func() {
		// The server gets SIGKILL when the thread that started it exits (Linux): keep this goroutine on
		// its thread, waiting for the server, so a crash of the harness still stops it.
		runtime.LockOSThread()
		cmd := exec.Command("redis-server", args...)
		if logFile, err := os.Create(filepath.Join(dir, "redis.log")); err == nil {
			defer logFile.Close()
			cmd.Stdout, cmd.Stderr = logFile, logFile
		}
		setParentDeathSignal(cmd)
		if err := cmd.Start(); err != nil {
			started <- err
			close(s.exited)
			return
		}
		s.proc = cmd.Process
		started <- nil
		_ = cmd.Wait()
		close(s.exited)
	}()
	if err := <-started; err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting redis-server (is it installed?): %w", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := redis.Dial("tcp", s.addr, redis.DialConnectTimeout(time.Second))
		if err == nil {
			if _, err = c.Do("PING"); err == nil {
				s.conn = c
				return s, nil
			}
			c.Close()
		}
		select {
		case <-s.exited:
			log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			s.stop()
			return nil, fmt.Errorf("redis-server exited at start:\n%s", log)
		default:
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("redis-server on %s did not answer: %v", s.addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop ends the server (SIGTERM, then SIGKILL after 5 s) and removes its directory. Safe to call more
// than once and from a signal handler.
func (s *redisServer) stop() {
	s.stopped.Do(func() {
		if s.conn != nil {
			s.conn.Close()
		}
		if s.proc != nil {
			_ = s.proc.Signal(syscall.SIGTERM)
			select {
			case <-s.exited:
			case <-time.After(5 * time.Second):
				_ = s.proc.Kill()
				<-s.exited
			}
		}
		os.RemoveAll(s.dir)
	})
}

func (s *redisServer) do(cmd string, args ...interface{}) (interface{}, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn.Do(cmd, args...)
}

func (s *redisServer) flushAll() error {
	_, err := s.do("FLUSHALL")
	return err
}

func (s *redisServer) version() string {
	info, err := redis.String(s.do("INFO", "server"))
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "redis_version:"); ok {
			return v
		}
	}
	return "?"
}

// serverStats is what INFO tells about the server at one moment.
type serverStats struct {
	cpu       float64          // used_cpu_sys + used_cpu_user, seconds
	usedMem   int64            // used_memory, bytes
	totalCmds int64            // total_commands_processed
	calls     map[string]int64 // INFO commandstats: calls per command
	usec      map[string]int64 // INFO commandstats: µs per command
}

// harnessCommands are the commands the harness itself sends while measuring; they are left out of
// the command counts.
var harnessCommands = map[string]bool{"info": true, "flushall": true}

func (s *redisServer) stats() (serverStats, error) {
	info, err := redis.String(s.do("INFO", "all"))
	if err != nil {
		return serverStats{}, err
	}
	st := serverStats{calls: make(map[string]int64), usec: make(map[string]int64)}
	for _, line := range strings.Split(info, "\r\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch {
		case k == "used_cpu_sys" || k == "used_cpu_user":
			f, _ := strconv.ParseFloat(v, 64)
			st.cpu += f
		case k == "used_memory":
			st.usedMem, _ = strconv.ParseInt(v, 10, 64)
		case k == "total_commands_processed":
			st.totalCmds, _ = strconv.ParseInt(v, 10, 64)
		case strings.HasPrefix(k, "cmdstat_"):
			name := strings.TrimPrefix(k, "cmdstat_")
			if harnessCommands[name] {
				continue
			}
			for _, field := range strings.Split(v, ",") {
				if n, ok := strings.CutPrefix(field, "calls="); ok {
					st.calls[name], _ = strconv.ParseInt(n, 10, 64)
				} else if n, ok := strings.CutPrefix(field, "usec="); ok {
					st.usec[name], _ = strconv.ParseInt(n, 10, 64)
				}
			}
		}
	}
	return st, nil
}

// benchmarkCeiling runs redis-benchmark against the server: LPUSH and RPOP, unpipelined and with 16
// commands per pipeline. It returns requests/s per (pipeline, command).
type ceilingRow struct {
	pipeline int
	command  string
	rps      float64
	p50ms    string
}

func (s *redisServer) benchmarkCeiling(ctx context.Context) ([]ceilingRow, error) {
	var rows []ceilingRow
	for _, p := range []int{1, 16} {
		cmd := exec.CommandContext(ctx, "redis-benchmark", "-h", "127.0.0.1", "-p", strconv.Itoa(s.port),
			"-t", "lpush,rpop", "-n", "200000", "-P", strconv.Itoa(p), "-q")
		out, err := cmd.Output()
		if err != nil {
			return rows, fmt.Errorf("redis-benchmark -P %d: %w", p, err)
		}
		// -q prints progress lines ended by \r and one final line per test:
		// "LPUSH: 123456.79 requests per second, p50=0.191 msec"
		for _, line := range strings.FieldsFunc(string(out), func(r rune) bool { return r == '\r' || r == '\n' }) {
			name, rest, ok := strings.Cut(strings.TrimSpace(line), ": ")
			if !ok || !strings.Contains(rest, "requests per second") {
				continue
			}
			f := strings.Fields(rest)
			rps, _ := strconv.ParseFloat(f[0], 64)
			row := ceilingRow{pipeline: p, command: name, rps: rps}
			if i := strings.Index(rest, "p50="); i >= 0 {
				row.p50ms = strings.TrimSuffix(strings.Fields(rest[i+4:])[0], ",")
			}
			rows = append(rows, row)
		}
	}
	return rows, s.flushAll()
}
