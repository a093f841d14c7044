// Package pgserver starts throwaway PostgreSQL servers for tests and benchmarks: a new cluster in a
// temporary directory, on a free loopback port, run as an unprivileged user when the caller is
// root (PostgreSQL refuses to run as root). It uses the server's own programs and no client
// library, so that the modules that need a server share it without adding a dependency to the
// root module.
package pgserver

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Server is a running (or stopped) throwaway PostgreSQL server.
type Server struct {
	// Port is the loopback port it listens on; User the role to connect as (trust, no password).
	Port int
	User string

	dir  string // the cluster's data directory (and socket directory)
	bin  string
	cred *syscall.Credential
	args []string

	mu     sync.Mutex
	proc   *os.Process
	exited chan struct{}
}

// Options tune the server: extra settings passed as -c name=value.
type Options struct {
	Settings map[string]string
}

// Bin finds the directory of the server's programs (initdb, postgres, psql): the newest of Debian's
// /usr/lib/postgresql/<version>/bin, else the one holding initdb on the PATH.
func Bin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if _, err := exec.LookPath("postgres"); err == nil {
			return filepath.Dir(p), nil
		}
	}
	return "", errors.New("pgserver: no PostgreSQL server programs (initdb, postgres) found; install PostgreSQL (Debian: apt-get install postgresql)")
}

func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// Start makes a new cluster and starts its server. Stop it with Stop (its directory is removed).
func Start(opts Options) (*Server, error) {
	bin, err := Bin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "work-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, bin: bin}
	s.User, s.cred, err = runAs()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if s.cred != nil {
		if err := os.Chown(dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	initdb := s.command(filepath.Join(bin, "initdb"), "-D", data, "-U", s.User, "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C")
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgserver: initdb: %v: %s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s.Port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	s.args = []string{"-D", data, "-p", strconv.Itoa(s.Port), "-k", dir, "-c", "listen_addresses=127.0.0.1",
		"-c", "max_connections=200"}
	keys := make([]string, 0, len(opts.Settings))
	for k := range opts.Settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s.args = append(s.args, "-c", k+"="+opts.Settings[k])
	}
	if err := s.Restart(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// runAs returns the role name and the credential to run the server with: the caller's own unless it
// is root, then the first unprivileged account of postgres and nobody.
func runAs() (string, *syscall.Credential, error) {
	if os.Geteuid() != 0 {
		u, err := user.Current()
		if err != nil {
			return "", nil, err
		}
		return u.Username, nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return name, &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return "", nil, errors.New("pgserver: running as root, and neither a postgres nor a nobody account exists to run the server as")
}

func (s *Server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// DSN is the server's address for a database, as pgx and lib/pq read it.
func (s *Server) DSN(database string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", s.User, s.Port, database)
}

// Restart starts the server again after Kill or Stop(false); Start calls it the first time. It
// returns once the server accepts connections.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		return errors.New("pgserver: the server is running")
	}
	cmd := s.command(filepath.Join(s.bin, "postgres"), s.args...)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	started := make(chan error, 1)
	exited := make(chan struct{})
	go func() {
		// Pdeathsig fires when the thread that started the child exits: keep this goroutine's thread
		// until the server ends, so that a crash of the caller still stops the server.
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			close(exited)
			return
		}
		started <- nil
		_ = cmd.Wait()
		close(exited)
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("pgserver: starting postgres: %w", err)
	}
	s.proc, s.exited = cmd.Process, exited
	deadline := time.Now().Add(60 * time.Second)
	for {
		if ready(filepath.Join(s.dir, "data", "postmaster.pid")) {
			if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(s.Port), time.Second); err == nil {
				c.Close()
				return nil
			}
		}
		select {
		case <-exited:
			s.proc = nil
			return fmt.Errorf("pgserver: postgres exited at start: %s", log.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = s.proc.Kill()
			<-exited
			s.proc = nil
			return fmt.Errorf("pgserver: postgres did not become ready within a minute: %s", log.String())
		}
	}
}

// ready reports whether postmaster.pid says the server accepts connections (its status line).
func ready(pidFile string) bool {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return false
	}
	lines := strings.Split(string(b), "\n")
	return len(lines) >= 8 && strings.TrimSpace(lines[7]) == "ready"
}

// Kill stops the server the hard way (SIGKILL of the postmaster, then of every process of the
// cluster), as a crash of the machine would: what was not flushed to its WAL is lost, and the next
// Restart recovers.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return
	}
	_ = s.proc.Signal(syscall.SIGKILL)
	<-s.exited
	s.proc = nil
	s.killOrphans()
}

// killOrphans kills the backends a killed postmaster leaves behind; they would keep the port and the
// shared memory, and the next start would refuse to run.
func (s *Server) killOrphans() {
	for i := 0; i < 100; i++ {
		pids := s.clusterPIDs()
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// clusterPIDs lists the processes of this cluster: the postmaster works in its data directory, and
// every process it starts inherits that working directory.
func (s *Server) clusterPIDs() []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err != nil {
			continue
		}
		if strings.HasPrefix(cwd, filepath.Join(s.dir, "data")) {
			out = append(out, pid)
		}
	}
	return out
}

// PIDs lists the server's processes (the postmaster and its children), for measuring their CPU.
func (s *Server) PIDs() []int { return s.clusterPIDs() }

// Stop shuts the server down (fast mode: SIGINT) and, with remove, deletes its cluster. It may be
// called more than once.
func (s *Server) Stop(remove bool) {
	s.mu.Lock()
	if s.proc != nil {
		_ = s.proc.Signal(syscall.SIGINT)
		select {
		case <-s.exited:
		case <-time.After(30 * time.Second):
			_ = s.proc.Kill()
			<-s.exited
		}
		s.proc = nil
	}
	s.mu.Unlock()
	s.killOrphans()
	if remove {
		os.RemoveAll(s.dir)
	}
}
