package main

// workwebui against redis-servers of its own secured by a password, by ACL users and by TLS with
// client certificates: with the right credentials it serves the namespace's data; with wrong ones it
// exits with 1 (2 for unusable TLS flags) and says why, without the password.

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/workqueue/work"
	"github.com/workqueue/work/internal/redistest"
)

const connsecNS = "connsec"

// connsecSeed puts one waiting job in the namespace, with every right.
func connsecSeed(t *testing.T, srv *redistest.Server) {
	t.Helper()
	srv.Do(t, "SADD", connsecNS+":known_jobs", "mail")
	srv.Do(t, "LPUSH", connsecNS+":jobs:mail", `{"name":"mail","id":"job-1","t":1700000000,"args":{}}`)
}

// connsecServe runs workwebui with args and environ until it listens, checks that its JSON API shows
// the seeded job, then stops it with SIGTERM and checks that it exits with 0.
func connsecServe(t *testing.T, environ []string, args ...string) {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(binary, append(args, "-ns", connsecNS, "-listen", addr)...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, environ...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := false
	defer func() {
		if !waited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	lines := make(chan string, 100)
	go func() {
		s := bufio.NewScanner(stderr)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	var log []string
	deadline := time.After(30 * time.Second)
	for ready := false; !ready; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("workwebui exited early:\n%s", strings.Join(log, "\n"))
			}
			log = append(log, l)
			ready = strings.Contains(l, "web UI on http://"+addr)
		case <-deadline:
			t.Fatalf("workwebui did not start:\n%s", strings.Join(log, "\n"))
		}
	}
	// A client of its own, whose idle connections are closed before the stop.
	client := &http.Client{Transport: &http.Transport{}}
	get := func(path string, into interface{}) {
		t.Helper()
		resp, err := client.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
		}
		if err := json.Unmarshal(body, into); err != nil {
			t.Fatalf("GET %s: %v: %s", path, err, body)
		}
	}
	var qs []work.QueueStat
	get("/queues", &qs)
	if len(qs) != 1 || qs[0].JobName != "mail" || qs[0].Count != 1 {
		t.Errorf("/queues: %+v", qs)
	}
	var sum work.Summary
	get("/summary", &sum)
	if sum.Queued != 1 || sum.Queues != 1 {
		t.Errorf("/summary: %+v", sum)
	}
	var job work.JobLocation
	get("/job?id=job-1", &job)
	if job.State != "queued" || job.Job == nil || job.Job.Name != "mail" {
		t.Errorf("/job: %+v", job)
	}

	client.CloseIdleConnections()
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() {
		for l := range lines {
			log = append(log, l)
		}
		done <- cmd.Wait()
	}()
	select {
	case err := <-done:
		waited = true
		if err != nil || !strings.Contains(strings.Join(log, "\n"), "workwebui: stopped") {
			t.Errorf("after SIGTERM: %v\n%s", err, strings.Join(log, "\n"))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("workwebui did not stop on SIGTERM")
	}
}

// connsecRefused checks that workwebui exits with code, saying something that mentions want and none
// of secrets.
func connsecRefused(t *testing.T, what string, code int, want string, secrets []string, environ []string, args ...string) {
	t.Helper()
	got, out := runBinary(t, environ, append(args, "-ns", connsecNS, "-listen", "127.0.0.1:0")...)
	if got != code || !strings.HasPrefix(out, "workwebui: ") || !strings.Contains(out, want) {
		t.Errorf("%s: exit %d, output %q; want %d and a message mentioning %q", what, got, out, code, want)
	}
	for _, s := range secrets {
		if strings.Contains(out, s) {
			t.Errorf("%s: the output shows the password %q: %s", what, s, out)
		}
	}
}

func TestConnSecPasswordWebUI(t *testing.T) {
	t.Parallel()
	const password, wrong = "s3cret p@ss:w/rd", "not-the-pa55word"
	secrets := []string{password, wrong, "s3cret"}
	srv := redistest.Start(t, redistest.Options{Password: password})
	connsecSeed(t, srv)
	connsecServe(t, nil, "-redis", srv.URL("", password))
	connsecServe(t, []string{"WORK_REDIS=" + srv.URL("", password)})

	connsecRefused(t, "a wrong password", 1, "cannot reach Redis at redis://:xxxxx@"+srv.Addr+": WRONGPASS", secrets, nil,
		"-redis", srv.URL("", wrong))
	connsecRefused(t, "a wrong password in WORK_REDIS", 1, "WRONGPASS", secrets, []string{"WORK_REDIS=" + srv.URL("", wrong)})
	connsecRefused(t, "no password", 1, "NOAUTH", secrets, nil, "-redis", srv.Addr)
}

func TestConnSecACLUserWebUI(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{Users: []redistest.User{
		{Name: "admin", Password: "admin-pw"},
		{Name: "viewer", Password: "viewer-pw", Rules: []string{"~" + connsecNS + ":*", "&" + connsecNS + ":*", "+@all", "-@dangerous"}},
	}})
	secrets := []string{"admin-pw", "viewer-pw"}
	connsecSeed(t, srv)
	connsecServe(t, nil, "-redis", srv.URL("viewer", "viewer-pw"))

	connsecRefused(t, "a wrong password", 1, "cannot reach Redis at redis://viewer:xxxxx@"+srv.Addr+": WRONGPASS", secrets, nil,
		"-redis", srv.URL("viewer", "admin-pw"))
	connsecRefused(t, "an unknown user", 1, "WRONGPASS", secrets, nil, "-redis", srv.URL("nobody", "viewer-pw"))
	connsecRefused(t, "the password alone (the default user is off)", 1, "WRONGPASS", secrets, nil, "-redis", srv.URL("", "viewer-pw"))
}

func TestConnSecTLSWebUI(t *testing.T) {
	t.Parallel()
	certs, other := redistest.NewCerts(t), redistest.NewCerts(t)
	srv := redistest.Start(t, redistest.Options{TLS: certs, Users: []redistest.User{{Name: "tls-user", Password: "tls-pw"}}})
	secrets := []string{"tls-pw"}
	url := srv.URL("tls-user", "tls-pw")
	connsecSeed(t, srv)
	connsecServe(t, nil, "-redis", url, "-tls-ca", certs.CA, "-tls-cert", certs.ClientCert, "-tls-key", certs.ClientKey)
	connsecServe(t, []string{"WORK_REDIS=" + url, "WORK_REDIS_TLS_CA=" + certs.CA, "WORK_REDIS_TLS_CERT=" + certs.ClientCert,
		"WORK_REDIS_TLS_KEY=" + certs.ClientKey})

	connsecRefused(t, "the system's roots", 1, "cannot reach Redis at rediss://tls-user:xxxxx@"+srv.Addr+": tls: failed to verify certificate",
		secrets, nil, "-redis", url, "-tls-cert", certs.ClientCert, "-tls-key", certs.ClientKey)
	connsecRefused(t, "another CA", 1, "unknown authority", secrets, nil,
		"-redis", url, "-tls-ca", other.CA, "-tls-cert", certs.ClientCert, "-tls-key", certs.ClientKey)
	connsecRefused(t, "no client certificate", 1, "certificate", secrets, nil, "-redis", url, "-tls-ca", certs.CA)
	connsecRefused(t, "TLS files with a redis:// address", 2, "need a rediss:// address", secrets, nil,
		"-redis", strings.Replace(url, "rediss:", "redis:", 1), "-tls-ca", certs.CA)
	connsecRefused(t, "a key without its certificate", 2, "needs both", secrets, nil, "-redis", url, "-tls-key", certs.ClientKey)
}
