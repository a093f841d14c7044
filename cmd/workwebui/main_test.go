package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/workqueue/work/internal/redistest"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "workwebui-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "workwebui")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the command:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var testRedisAddr = redistest.Addr

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func runBinary(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, out.String()
}

func TestFailuresExitWithAMessage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"-redis", "127.0.0.1:1"}, 1, "cannot reach Redis at 127.0.0.1:1"},
		{[]string{"-redis", "redis://u:hunter2@127.0.0.1:1/3"}, 1, "cannot reach Redis at redis://u:xxxxx@127.0.0.1:1/3"},
		{[]string{"-redis", "ftp://x"}, 2, "scheme must be redis, rediss or unix"},
		{[]string{"-bogus"}, 2, "flag provided but not defined"},
		{[]string{"-user", "admin"}, 2, "needs both a user and a password"},
		{[]string{"extra"}, 2, "unexpected arguments"},
	} {
		code, out := runBinary(t, nil, tc.args...)
		if code != tc.code || !strings.Contains(out, tc.msg) || strings.Contains(out, "hunter2") {
			t.Errorf("workwebui %q: exit %d, output %q; want %d and %q", tc.args, code, out, tc.code, tc.msg)
		}
	}
	// A busy listen address.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	code, out := runBinary(t, nil, "-redis", testRedisAddr(), "-listen", ln.Addr().String())
	if code != 1 || !strings.Contains(out, "cannot listen") {
		t.Errorf("busy address: exit %d, %q", code, out)
	}
}

func TestServesUntilSIGTERM(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	// gocraft/work's default form of -redis, ":port", is accepted.
	port := testRedisAddr()[strings.LastIndex(testRedisAddr(), ":"):]
	cmd := exec.Command(binary, "-redis", port, "-listen", addr, "-ns", "workwebui-test")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "WORK_WEBUI_USER=admin", "WORK_WEBUI_PASSWORD=pw"}
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string, 10)
	go func() {
		s := bufio.NewScanner(stderr)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	deadline := time.After(15 * time.Second)
	for ready := false; !ready; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("workwebui exited early")
			}
			ready = strings.Contains(l, "web UI on http://"+addr)
		case <-deadline:
			t.Fatal("workwebui did not start")
		}
	}
	get := func(path string, auth bool) *http.Response {
		req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
		if auth {
			req.SetBasicAuth("admin", "pw")
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	if r := get("/queues", false); r.StatusCode != 401 {
		t.Errorf("without credentials: %d", r.StatusCode)
	}
	if r := get("/queues", true); r.StatusCode != 200 {
		t.Errorf("/queues: %d", r.StatusCode)
	}
	if r := get("/", true); r.StatusCode != 302 || r.Header.Get("Location") != "ui/" {
		t.Errorf("/: %d %q", r.StatusCode, r.Header.Get("Location"))
	}
	if r := get("/ui/", true); r.StatusCode != 200 {
		t.Errorf("/ui/: %d", r.StatusCode)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	var rest []string
	go func() {
		for l := range lines {
			rest = append(rest, l)
		}
		done <- cmd.Wait()
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("after SIGTERM: %v", err)
		}
		if !strings.Contains(strings.Join(rest, "\n"), "stopped") {
			t.Errorf("no stop message: %q", rest)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("workwebui did not stop on SIGTERM")
	}
}

func TestLoopbackWithoutAuthenticationRefusesOtherHostNames(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	cmd := exec.Command(binary, "-redis", testRedisAddr(), "-listen", addr, "-ns", "workwebui-test")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	s := bufio.NewScanner(stderr)
	for s.Scan() && !strings.Contains(s.Text(), "web UI on") {
	}
	go io.Copy(io.Discard, stderr)
	for host, want := range map[string]int{addr: 200, "localhost": 200, "rebound.example": 403} {
		req, _ := http.NewRequest("GET", "http://"+addr+"/queues", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
		}
	}
}
