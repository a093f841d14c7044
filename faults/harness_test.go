package faults

// The machinery of the fault scenarios: a redis-server of each scenario's own, a fleet of worker
// processes and a TCP proxy that can drop replies. The load generator and the final accounting are
// in harness_jobs_test.go.

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

var soakFlag = flag.Bool("soak", false, "run every scenario longer, with five times the jobs")

// workerBin is the worker program, built once by TestMain.
var workerBin string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "work-faults-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		if _, err := exec.LookPath("redis-server"); err == nil {
			bin, err := buildWorker(dir)
			if err != nil {
				fmt.Fprintln(os.Stderr, "building the worker program:", err)
				return 1
			}
			workerBin = bin
		}
		return m.Run()
	}()
	os.Exit(code)
}

// buildWorker builds internal/worker (with -race when WORK_FAULTS_WORKER_RACE is set).
func buildWorker(dir string) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out := filepath.Join(dir, "worker")
	args := []string{"build", "-o", out}
	if os.Getenv("WORK_FAULTS_WORKER_RACE") != "" {
		args = append(args, "-race")
	}
	args = append(args, "./internal/worker")
	cmd := exec.Command(goBin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%v: %s", err, stderr.String())
	}
	return out, nil
}

// skipIfShort skips a fault test under -short: each takes a minute or more.
func skipIfShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("fault scenarios take minutes")
	}
}

func soak() bool { return *soakFlag || os.Getenv("WORK_FAULTS_SOAK") != "" }

// jobsPerScenario is N: 20000 by default, WORK_FAULTS_JOBS to change it, five times more in a soak.
func jobsPerScenario(def int) int {
	n := def
	if v, err := strconv.Atoi(os.Getenv("WORK_FAULTS_JOBS")); err == nil && v > 0 {
		n = v
	}
	if soak() {
		n *= 5
	}
	return n
}

// stretch scales a duration of the fault phase in a soak run.
func stretch(d time.Duration) time.Duration {
	if soak() {
		return 5 * d
	}
	return d
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// ---------------------------------------------------------------------------------------------------
// redis-server

// redisServer is a redis-server of one scenario's own, with its append-only file in a temp dir, that
// can be killed and restarted from that file.
type redisServer struct {
	t    testing.TB
	bin  string
	dir  string
	addr string
	args []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	starts int
}

// startRedis starts a server with appendonly yes and the given appendfsync policy. Extra arguments
// are appended to the command line.
func startRedis(t testing.TB, fsync string, extra ...string) *redisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed")
	}
	port := freePort(t)
	s := &redisServer{t: t, bin: bin, dir: t.TempDir(), addr: fmt.Sprintf("127.0.0.1:%d", port)}
	s.args = append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "yes", "--appendfsync", fsync,
		"--auto-aof-rewrite-percentage", "0", // one incremental AOF file, so it can be truncated
		"--logfile", "redis.log", "--loglevel", "notice"}, extra...)
	s.start()
	t.Cleanup(s.close)
	return s
}

func (s *redisServer) start() {
	s.t.Helper()
	s.mu.Lock()
	cmd := exec.Command(s.bin, s.args...)
	cmd.Dir = s.dir
	if err := cmd.Start(); err != nil {
		s.mu.Unlock()
		s.t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	s.cmd, s.exited = cmd, exited
	s.starts++
	s.mu.Unlock()
	if err := s.waitReady(20 * time.Second); err != nil {
		s.t.Fatalf("redis-server did not come up: %v\n%s", err, s.logTail(20))
	}
}

// waitReady waits until the server answers PING (not LOADING).
func (s *redisServer) waitReady(within time.Duration) error {
	deadline := time.Now().Add(within)
	var err error
	for time.Now().Before(deadline) {
		var c redis.Conn
		c, err = redis.Dial("tcp", s.addr, redis.DialConnectTimeout(time.Second), redis.DialReadTimeout(time.Second))
		if err == nil {
			_, err = c.Do("PING")
			c.Close()
			if err == nil {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

func (s *redisServer) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		s.cmd.Process.Signal(sig)
	}
}

// kill sends sig (SIGKILL or SIGTERM) and waits for the process to end.
func (s *redisServer) kill(sig syscall.Signal) {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGCONT)
	cmd.Process.Signal(sig)
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		<-exited
	}
	s.mu.Lock()
	s.cmd = nil
	s.mu.Unlock()
}

func (s *redisServer) close() {
	s.kill(syscall.SIGKILL)
}

func (s *redisServer) logTail(n int) string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// incrAOF returns the path of the newest incremental append-only file (Redis 7 multi-part AOF), or
// the single appendonly.aof of older servers.
func (s *redisServer) incrAOF() (string, error) {
	dir := filepath.Join(s.dir, "appendonlydir")
	manifest, err := os.ReadFile(filepath.Join(dir, "appendonly.aof.manifest"))
	if err != nil {
		if _, serr := os.Stat(filepath.Join(s.dir, "appendonly.aof")); serr == nil {
			return filepath.Join(s.dir, "appendonly.aof"), nil
		}
		return "", err
	}
	var best string
	bestSeq := -1
	for _, line := range strings.Split(string(manifest), "\n") {
		f := strings.Fields(line)
		// file <name> seq <n> type <b|h|i>
		if len(f) >= 6 && f[0] == "file" && f[5] == "i" {
			if seq, err := strconv.Atoi(f[3]); err == nil && seq > bestSeq {
				best, bestSeq = f[1], seq
			}
		}
	}
	if best == "" {
		return "", fmt.Errorf("no incremental AOF in the manifest: %q", manifest)
	}
	return filepath.Join(dir, best), nil
}

// aofContent returns the append-only files as Redis would load them now, concatenated: every file of
// the multi-part AOF directory of Redis 7, or the single appendonly.aof of older servers, each up to
// where Redis stops loading it (aofLoaded). With rewrites off (startRedis) every write is in them as
// a command, so a job's key appears as written.
func (s *redisServer) aofContent() ([]byte, error) {
	dir := filepath.Join(s.dir, "appendonlydir")
	entries, err := os.ReadDir(dir)
	if err != nil {
		b, err := os.ReadFile(filepath.Join(s.dir, "appendonly.aof"))
		return aofLoaded(b), err
	}
	var all []byte
	for _, ent := range entries {
		if ent.IsDir() || strings.HasSuffix(ent.Name(), ".manifest") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, ent.Name()))
		if err != nil {
			return nil, err
		}
		if strings.HasSuffix(ent.Name(), ".aof") {
			b = aofLoaded(b)
		}
		all = append(all, b...)
	}
	return all, nil
}

// aofLoaded returns the part of an append-only file of commands that Redis loads: a file cut in the
// middle of a command (aof-load-truncated) loads up to the last whole command, and one cut inside a
// MULTI ... EXEC (a script's writes) up to that MULTI, the transaction left out. A file cut at a
// size read while Redis was writing to it (killRedis) may end in either.
func aofLoaded(b []byte) []byte {
	end, multiAt := 0, -1
	for off := 0; off < len(b); {
		name, next, ok := aofCommand(b, off)
		if !ok {
			break
		}
		switch strings.ToUpper(name) {
		case "MULTI":
			multiAt = off
		case "EXEC":
			multiAt = -1
		}
		off = next
		if multiAt < 0 {
			end = off
		}
	}
	return b[:end]
}

// aofCommand parses the command at off, a RESP array of bulk strings, and returns its name and the
// offset after it; ok is false when the command is not whole.
func aofCommand(b []byte, off int) (name string, next int, ok bool) {
	line := func(at int, prefix byte) (int, int, bool) {
		if at >= len(b) || b[at] != prefix {
			return 0, 0, false
		}
		nl := bytes.Index(b[at:], []byte("\r\n"))
		if nl < 0 {
			return 0, 0, false
		}
		n, err := strconv.Atoi(string(b[at+1 : at+nl]))
		return n, at + nl + 2, err == nil && n >= 0
	}
	n, at, ok := line(off, '*')
	if !ok {
		return "", 0, false
	}
	for i := 0; i < n; i++ {
		size, from, ok := line(at, '$')
		if !ok || from+size+2 > len(b) {
			return "", 0, false
		}
		if i == 0 {
			name = string(b[from : from+size])
		}
		at = from + size + 2
	}
	return name, at, true
}

// newPool returns a client pool on addr (no read timeout unless given).
func newPool(addr string, readTimeout time.Duration) *redis.Pool {
	opts := []redis.DialOption{redis.DialConnectTimeout(time.Second)}
	if readTimeout > 0 {
		opts = append(opts, redis.DialReadTimeout(readTimeout), redis.DialWriteTimeout(readTimeout))
	}
	return &redis.Pool{
		MaxIdle:     32,
		MaxActive:   64,
		Wait:        true,
		IdleTimeout: time.Minute,
		Dial:        func() (redis.Conn, error) { return redis.Dial("tcp", addr, opts...) },
	}
}

// ---------------------------------------------------------------------------------------------------
// worker processes

type workerProc struct {
	n      int
	cmd    *exec.Cmd
	pid    int
	poolID string // set by spawnRegistered
	log    string
	exited chan struct{}
	killed bool // by SIGKILL
}

// fleet runs worker processes, replacing them on demand, and keeps their logs.
type fleet struct {
	t    testing.TB
	dir  string
	args []string

	mu    sync.Mutex
	procs []*workerProc
	rng   *rand.Rand
}

func newFleet(t testing.TB, args ...string) *fleet {
	if workerBin == "" {
		t.Skip("redis-server is not installed")
	}
	f := &fleet{t: t, dir: t.TempDir(), args: args, rng: rand.New(rand.NewSource(time.Now().UnixNano()))}
	t.Cleanup(func() {
		for _, p := range f.all() {
			p.cmd.Process.Kill()
			<-p.exited
		}
	})
	return f
}

func (f *fleet) spawn() *workerProc {
	f.mu.Lock()
	n := len(f.procs)
	f.mu.Unlock()
	log := filepath.Join(f.dir, fmt.Sprintf("worker-%02d.log", n))
	out, err := os.Create(log)
	if err != nil {
		f.t.Fatal(err)
	}
	cmd := exec.Command(workerBin, f.args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		out.Close()
		f.t.Fatal(err)
	}
	p := &workerProc{n: n, cmd: cmd, pid: cmd.Process.Pid, log: log, exited: make(chan struct{})}
	go func() { cmd.Wait(); out.Close(); close(p.exited) }()
	f.mu.Lock()
	f.procs = append(f.procs, p)
	f.mu.Unlock()
	return p
}

// spawnRegistered starts a worker and waits until its pool has registered; it returns the worker
// with its pool ID set.
func (f *fleet) spawnRegistered(in *inspector) *workerProc {
	f.t.Helper()
	p := f.spawn()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if p.poolID = in.poolOfPid(p.pid); p.poolID != "" {
			return p
		}
		select {
		case <-p.exited:
			b, _ := os.ReadFile(p.log)
			f.t.Fatalf("worker %d exited at start:\n%s", p.pid, b)
		default:
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("worker %d did not register its pool", p.pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (f *fleet) all() []*workerProc {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*workerProc(nil), f.procs...)
}

func (f *fleet) live() []*workerProc {
	var out []*workerProc
	for _, p := range f.all() {
		select {
		case <-p.exited:
		default:
			out = append(out, p)
		}
	}
	return out
}

func (f *fleet) random() *workerProc {
	live := f.live()
	if len(live) == 0 {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return live[f.rng.Intn(len(live))]
}

func (f *fleet) sigkill(p *workerProc) (sent time.Time) {
	p.killed = true
	sent = time.Now()
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
	return sent
}

// sigterm asks a worker to stop (StopContext with its deadline) and waits for it to exit; it reports
// how long that took.
func (f *fleet) sigterm(p *workerProc, within time.Duration) time.Duration {
	start := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(within):
		f.t.Errorf("worker %d did not exit within %v of SIGTERM; killing it", p.pid, within)
		f.sigkill(p)
	}
	return time.Since(start)
}

// stopAll stops every live worker gracefully, in parallel.
func (f *fleet) stopAll(within time.Duration) {
	var wg sync.WaitGroup
	for _, p := range f.live() {
		wg.Add(1)
		go func(p *workerProc) { defer wg.Done(); f.sigterm(p, within) }(p)
	}
	wg.Wait()
}

// logLines returns the lines of every worker log that contain one of the needles.
func (f *fleet) logLines(needles ...string) []string {
	var out []string
	for _, p := range f.all() {
		b, _ := os.ReadFile(p.log)
		for _, line := range strings.Split(string(b), "\n") {
			for _, n := range needles {
				if strings.Contains(line, n) {
					out = append(out, fmt.Sprintf("worker %d: %s", p.pid, line))
					break
				}
			}
		}
	}
	return out
}

// checkLogs fails the test on a panic, a data race or a fatal error in any worker, and on a worker
// that exited on its own.
func (f *fleet) checkLogs() {
	f.t.Helper()
	for _, line := range f.logLines("panic:", "DATA RACE", "fatal error") {
		f.t.Errorf("%s", line)
	}
	for _, p := range f.all() {
		b, _ := os.ReadFile(p.log)
		if !p.killed && !bytes.Contains(b, []byte("stopped ")) {
			f.t.Errorf("worker %d exited without being killed or stopped:\n%s", p.pid, tail(b, 20))
		}
	}
}

func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// ---------------------------------------------------------------------------------------------------
// a proxy that loses replies

// replyDropper is a TCP proxy in front of Redis. Armed, it forwards the next command that matches to
// Redis, lets Redis run it, and then cuts the connection instead of passing the reply on: the client
// sees a broken connection although its command took effect, which is what a network failure or a
// crash at the wrong moment does.
type replyDropper struct {
	t        testing.TB
	l        net.Listener
	upstream string
	match    func([]byte) bool

	armed   atomic.Int64 // replies still to drop
	dropped atomic.Int64
	seen    atomic.Int64 // matching commands seen
	skip    int64        // let this many matching commands through first (scripts get loaded)

	mu    sync.Mutex
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

func newReplyDropper(t testing.TB, upstream string, skip int64, match func([]byte) bool) *replyDropper {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &replyDropper{t: t, l: l, upstream: upstream, match: match, skip: skip, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *replyDropper) addr() string { return p.l.Addr().String() }

func (p *replyDropper) close() {
	p.l.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *replyDropper) track(c net.Conn, on bool) {
	p.mu.Lock()
	if on {
		p.conns[c] = true
	} else {
		delete(p.conns, c)
	}
	p.mu.Unlock()
}

func (p *replyDropper) accept() {
	defer p.wg.Done()
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.upstream)
		if err != nil {
			c.Close()
			continue
		}
		p.track(c, true)
		p.track(u, true)
		var cut atomic.Bool
		p.wg.Add(2)
		go func() { // Redis -> client
			defer p.wg.Done()
			buf := make([]byte, 64<<10)
			for {
				n, err := u.Read(buf)
				if n > 0 && !cut.Load() {
					if _, werr := c.Write(buf[:n]); werr != nil {
						break
					}
				}
				if err != nil {
					break
				}
			}
			c.Close()
			p.track(c, false)
		}()
		go func() { // client -> Redis
			defer p.wg.Done()
			buf := make([]byte, 64<<10)
			for {
				n, err := c.Read(buf)
				if n > 0 {
					drop := false
					if p.match(buf[:n]) && p.seen.Add(1) > p.skip && p.armed.Load() > 0 {
						if p.armed.Add(-1) >= 0 {
							drop = true
						}
					}
					if drop {
						cut.Store(true)
					}
					if _, werr := u.Write(buf[:n]); werr != nil {
						break
					}
					if drop {
						time.Sleep(200 * time.Millisecond) // Redis runs it and answers into the void
						p.dropped.Add(1)
						break
					}
				}
				if err != nil {
					break
				}
			}
			c.Close()
			u.Close()
			p.track(u, false)
		}()
	}
}

// TestAOFLoaded checks the accounting's model of what Redis loads from a cut append-only file.
func TestAOFLoaded(t *testing.T) {
	cmd := func(args ...string) string {
		s := fmt.Sprintf("*%d\r\n", len(args))
		for _, a := range args {
			s += fmt.Sprintf("$%d\r\n%s\r\n", len(a), a)
		}
		return s
	}
	set := cmd("SET", "a", `"j0000001"`)
	tx := cmd("MULTI") + cmd("LPUSH", "q", `"j0000002"`) + cmd("EXEC")
	for _, c := range []struct {
		aof, want string
	}{
		{set + tx, set + tx},
		{set + tx[:len(tx)-3], set},                   // cut inside EXEC
		{set + cmd("MULTI") + cmd("LPUSH", "q"), set}, // cut before EXEC
		{set + set[:10], set},                         // cut inside a command
		{tx + set, tx + set},
		{"", ""},
	} {
		if got := string(aofLoaded([]byte(c.aof))); got != c.want {
			t.Errorf("aofLoaded(%q) = %q, want %q", c.aof, got, c.want)
		}
	}
}
