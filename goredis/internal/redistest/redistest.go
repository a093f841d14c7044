// Package redistest starts throwaway redis-server processes on loopback for tests: single servers,
// Redis Cluster and Sentinel setups. Each helper registers the processes' shutdown with t.Cleanup.
//
// redis-server and redis-cli come from PATH. Without them the test is skipped, unless the CI
// environment variable is set, in which case it fails: CI must run these tests.
package redistest

import (
	"context"
	"fmt"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	workredistest "github.com/workqueue/work/internal/redistest"
)

// Require skips (or, with CI set, fails) the test when redis-server or redis-cli is missing.
func Require(t testing.TB) {
	t.Helper()
	for _, bin := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(bin); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s not found in PATH (CI is set, so these tests must run)", bin)
			}
			t.Skipf("%s not found in PATH: skipping (install redis-server and redis-tools to run it)", bin)
		}
	}
}

// Server is one redis-server process.
type Server struct {
	Port int
	Addr string // 127.0.0.1:port
	Dir  string

	t      testing.TB
	cmd    *exec.Cmd
	exited chan struct{}
	mu     sync.Mutex
	dead   bool
}

var (
	portMu   sync.Mutex
	usedPort = map[int]bool{}
	rng      = rand.New(rand.NewSource(time.Now().UnixNano() ^ int64(os.Getpid())))
)

// freePort returns a loopback port that is free, and whose cluster bus port (port+10000) is free too.
func freePort(t testing.TB) int {
	portMu.Lock()
	defer portMu.Unlock()
	for i := 0; i < 1000; i++ {
		p := 20000 + rng.Intn(30000)
		if usedPort[p] || usedPort[p+10000] || usedPort[p-10000] {
			continue
		}
		ok := true
		for _, q := range []int{p, p + 10000} {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(q))
			if err != nil {
				ok = false
				break
			}
			l.Close()
		}
		if ok {
			usedPort[p] = true
			return p
		}
	}
	t.Fatal("no free port found")
	return 0
}

// StartServer starts a redis-server with the given extra arguments (after the port, bind, dir and
// persistence settings) and waits until it answers PING.
func StartServer(t testing.TB, extra ...string) *Server {
	t.Helper()
	Require(t)
	var lastErr error
	for attempt := 0; attempt < 4; attempt++ {
		s, err := startServer(t, nil, extra)
		if err == nil {
			return s
		}
		lastErr = err
	}
	t.Fatalf("redis-server did not start: %v", lastErr)
	return nil
}

// startServer starts one process; conf, when not nil, is written to a config file given first.
func startServer(t testing.TB, conf func(port int, dir string) string, extra []string) (*Server, error) {
	port := freePort(t)
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	if conf != nil {
		path := filepath.Join(dir, "redis.conf")
		if err := os.WriteFile(path, []byte(conf(port, dir)), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, path)
	}
	args = append(args, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--dir", dir, "--daemonize", "no", "--loglevel", "warning",
		"--logfile", filepath.Join(dir, "log"))
	args = append(args, extra...)
	cmd := exec.Command("redis-server", args...)
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	exited := make(chan struct{})
	s := &Server{Port: port, Addr: fmt.Sprintf("127.0.0.1:%d", port), Dir: dir, t: t, cmd: cmd, exited: exited}
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		s.Kill()
		<-exited
		os.RemoveAll(dir)
	})
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "log"))
			return nil, fmt.Errorf("redis-server on port %d exited: %s", port, tail(string(log)))
		default:
		}
		if c.Ping(context.Background()).Err() == nil {
			return s, nil
		}
		if time.Now().After(deadline) {
			s.Kill()
			return nil, fmt.Errorf("redis-server on port %d does not answer", port)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func tail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}

// Kill stops the server with SIGKILL (no shutdown, no save), as a crash would, and returns once the
// process is gone.
func (s *Server) Kill() {
	s.mu.Lock()
	if !s.dead {
		s.dead = true
		s.cmd.Process.Signal(syscall.SIGCONT)
		s.cmd.Process.Kill()
	}
	s.mu.Unlock()
	<-s.exited
}

// Pause freezes the server (SIGSTOP); Resume thaws it.
func (s *Server) Pause() { s.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume thaws a paused server (SIGCONT).
func (s *Server) Resume() { s.cmd.Process.Signal(syscall.SIGCONT) }

// Pid is the server's process ID.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Client returns a go-redis client on the server (RESP2), closed when the test ends.
func (s *Server) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2})
	s.t.Cleanup(func() { c.Close() })
	return c
}

// Do runs one command on the server on a fresh connection.
func (s *Server) Do(args ...interface{}) (interface{}, error) {
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2, MaxRetries: -1})
	defer c.Close()
	return c.Do(context.Background(), args...).Result()
}

// Info returns the fields of INFO section.
func (s *Server) Info(section string) map[string]string {
	v, err := s.Do("INFO", section)
	out := map[string]string{}
	if err != nil {
		return out
	}
	str, _ := v.(string)
	for _, line := range strings.Split(str, "\n") {
		line = strings.TrimSpace(line)
		if k, val, ok := strings.Cut(line, ":"); ok {
			out[k] = val
		}
	}
	return out
}

// Eventually polls cond until it holds, failing the test after within (the core module's helper).
var Eventually = workredistest.Eventually

// Cluster is a Redis Cluster of masters, each with its replicas.
type Cluster struct {
	Masters  []*Server
	Replicas []*Server // replica i*per+j is the j-th replica of master i, as created
	Nodes    []*Server // every node, masters first
}

// Addrs returns every node's address.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Addr
	}
	return out
}

// Client returns a go-redis cluster client (RESP2 unless protocol says otherwise), closed when
// the test ends.
func (c *Cluster) Client(t testing.TB, protocol int) *redis.ClusterClient {
	if protocol == 0 {
		protocol = 2
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), Protocol: protocol})
	t.Cleanup(func() { cc.Close() })
	return cc
}

// StartCluster starts masters*(1+replicasPer) nodes with cluster mode on (node timeout 2 s) and
// joins them: with three masters or more through `redis-cli --cluster create`, with fewer (which
// redis-cli refuses) by assigning slots by hand, without replicas. It returns once every node
// reports cluster_state:ok and every replica is in sync.
func StartCluster(t testing.TB, masters, replicasPer int) *Cluster {
	t.Helper()
	Require(t)
	if masters < 3 && replicasPer > 0 {
		t.Fatal("redistest: replicas need at least three masters")
	}
	n := masters * (1 + replicasPer)
	cl := &Cluster{}
	for i := 0; i < n; i++ {
		s := StartServer(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "2000", "--cluster-require-full-coverage", "yes")
		cl.Nodes = append(cl.Nodes, s)
	}
	if masters >= 3 {
		args := []string{"--cluster", "create"}
		for _, s := range cl.Nodes {
			args = append(args, s.Addr)
		}
		args = append(args, "--cluster-replicas", strconv.Itoa(replicasPer), "--cluster-yes")
		out, err := exec.Command("redis-cli", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
		}
	} else {
		for i, s := range cl.Nodes {
			lo, hi := i*16384/masters, (i+1)*16384/masters-1
			if _, err := s.Do("CLUSTER", "ADDSLOTSRANGE", lo, hi); err != nil {
				// Before Redis 7: every slot by name.
				args := []interface{}{"CLUSTER", "ADDSLOTS"}
				for slot := lo; slot <= hi; slot++ {
					args = append(args, slot)
				}
				if _, err := s.Do(args...); err != nil {
					t.Fatalf("CLUSTER ADDSLOTS: %v", err)
				}
			}
			if _, err := s.Do("CLUSTER", "SET-CONFIG-EPOCH", i+1); err != nil {
				t.Fatalf("CLUSTER SET-CONFIG-EPOCH: %v", err)
			}
		}
		for _, s := range cl.Nodes[1:] {
			if _, err := cl.Nodes[0].Do("CLUSTER", "MEET", "127.0.0.1", s.Port); err != nil {
				t.Fatalf("CLUSTER MEET: %v", err)
			}
		}
	}
	Eventually(t, 30*time.Second, "cluster_state:ok on every node, every node known to all", func() bool {
		for _, s := range cl.Nodes {
			if v, _ := s.Do("CLUSTER", "INFO"); !strings.Contains(fmt.Sprint(v), "cluster_state:ok") {
				return false
			}
			v, err := s.Do("CLUSTER", "NODES")
			str, _ := v.(string)
			if err != nil || len(strings.Split(strings.TrimSpace(str), "\n")) != n {
				return false
			}
			if strings.Contains(str, "handshake") || strings.Contains(str, "fail") {
				return false
			}
		}
		return true
	})
	for _, s := range cl.Nodes {
		if role := s.Info("replication")["role"]; role == "master" {
			cl.Masters = append(cl.Masters, s)
		} else {
			cl.Replicas = append(cl.Replicas, s)
		}
	}
	Eventually(t, 30*time.Second, "every replica in sync", func() bool {
		for _, s := range cl.Replicas {
			if s.Info("replication")["master_link_status"] != "up" {
				return false
			}
		}
		return true
	})
	return cl
}

// MasterOf returns the master node serving key's slot, as that node reports.
func (c *Cluster) MasterOf(t testing.TB, key string) *Server {
	t.Helper()
	v, err := c.Nodes[0].Do("CLUSTER", "KEYSLOT", key)
	if err != nil {
		t.Fatal(err)
	}
	slot := v.(int64)
	v, err = c.Nodes[0].Do("CLUSTER", "SLOTS")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range v.([]interface{}) {
		rng := r.([]interface{})
		if slot >= rng[0].(int64) && slot <= rng[1].(int64) {
			port := rng[2].([]interface{})[1].(int64)
			for _, s := range c.Nodes {
				if int64(s.Port) == port {
					return s
				}
			}
		}
	}
	t.Fatalf("no master for slot %d", slot)
	return nil
}

// Sentinel is a primary, its replica and three sentinels monitoring it as MasterName.
type Sentinel struct {
	Primary   *Server
	Replica   *Server
	Sentinels []*Server
}

// MasterName is the name the sentinels monitor the primary under.
const MasterName = "mymaster"

// SentinelAddrs returns the sentinels' addresses.
func (s *Sentinel) SentinelAddrs() []string {
	out := make([]string, len(s.Sentinels))
	for i, x := range s.Sentinels {
		out[i] = x.Addr
	}
	return out
}

// StartSentinel starts a primary, one replica and three sentinels (quorum 2,
// down-after-milliseconds 1000, failover-timeout 5000), and returns once the replica is in sync and
// every sentinel knows the replica and the other sentinels.
func StartSentinel(t testing.TB) *Sentinel {
	t.Helper()
	Require(t)
	st := &Sentinel{Primary: StartServer(t)}
	st.Replica = StartServer(t, "--replicaof", "127.0.0.1", strconv.Itoa(st.Primary.Port))
	Eventually(t, 20*time.Second, "the replica to sync", func() bool {
		return st.Replica.Info("replication")["master_link_status"] == "up"
	})
	for i := 0; i < 3; i++ {
		var s *Server
		var err error
		for attempt := 0; attempt < 4; attempt++ {
			s, err = startServer(t, func(port int, dir string) string {
				return fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\n"+
					"sentinel monitor %s 127.0.0.1 %d 2\n"+
					"sentinel down-after-milliseconds %s 1000\n"+
					"sentinel failover-timeout %s 5000\n"+
					"sentinel parallel-syncs %s 1\n",
					port, dir, MasterName, st.Primary.Port, MasterName, MasterName, MasterName)
			}, []string{"--sentinel"})
			if err == nil {
				break
			}
		}
		if err != nil {
			t.Fatalf("sentinel did not start: %v", err)
		}
		st.Sentinels = append(st.Sentinels, s)
	}
	Eventually(t, 30*time.Second, "every sentinel to know the replica and the other sentinels", func() bool {
		for _, s := range st.Sentinels {
			v, err := s.Do("SENTINEL", "MASTER", MasterName)
			if err != nil {
				return false
			}
			f := map[string]string{}
			arr, _ := v.([]interface{})
			for i := 0; i+1 < len(arr); i += 2 {
				f[fmt.Sprint(arr[i])] = fmt.Sprint(arr[i+1])
			}
			if f["num-slaves"] != "1" || f["num-other-sentinels"] != "2" {
				return false
			}
		}
		return true
	})
	return st
}

// Slot returns the Redis Cluster hash slot of key: CRC16 (XMODEM) of its hash tag, or of the whole
// key when it has none, modulo 16384.
func Slot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}

// ProcessCPU returns the CPU time (user and system) a process has used so far, read from /proc; zero
// where /proc is not available.
func ProcessCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+2:]
	}
	f := strings.Fields(s)
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ is 100 on Linux
}
