package main

// The command against redis-servers of its own secured by a password, by ACL users and by TLS with
// client certificates: with the right credentials it enqueues and reports; with wrong ones it exits
// with 1 (2 for unusable TLS flags) and says why on standard error, without the password.

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workqueue/work"
	"github.com/workqueue/work/internal/redistest"
)

const connsecNS = "connsec"

// connsecUse enqueues a job with the connection flags conn, then checks that queues and stats show it.
func connsecUse(t *testing.T, environ []string, conn ...string) {
	t.Helper()
	runBinary(t, environ, append(conn, "--ns", connsecNS, "enqueue", "mail", "--args", `{"to":"a@example.com"}`)...).
		want(t, 0, "enqueued mail job ")
	r := runBinary(t, environ, append(conn, "--ns", connsecNS, "queues", "--json")...)
	r.want(t, 0)
	var qs []work.QueueStat
	if err := json.Unmarshal([]byte(r.stdout), &qs); err != nil || len(qs) != 1 || qs[0].JobName != "mail" || qs[0].Count < 1 {
		t.Errorf("queues --json: %s (%v)", r.stdout, err)
	}
	r = runBinary(t, environ, append(conn, "--ns", connsecNS, "stats", "--json")...)
	r.want(t, 0)
	var st struct {
		Summary work.Summary `json:"summary"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.Summary.Queued < 1 {
		t.Errorf("stats --json: %s (%v)", r.stdout, err)
	}
}

// connsecRefused runs a command that must fail with code and a message on standard error that
// mentions want and none of secrets.
func connsecRefused(t *testing.T, what string, code int, want string, secrets []string, environ []string, args ...string) {
	t.Helper()
	r := runBinary(t, environ, append(args, "--ns", connsecNS, "queues")...)
	if r.code != code || !strings.HasPrefix(r.stderr, "work: ") || !strings.Contains(r.stderr, want) || r.stdout != "" {
		t.Errorf("%s: exit %d, stdout %q, stderr %q; want %d and a message mentioning %q", what, r.code, r.stdout, r.stderr, code, want)
	}
	for _, s := range secrets {
		if strings.Contains(r.stderr, s) {
			t.Errorf("%s: standard error shows the password %q: %s", what, s, r.stderr)
		}
	}
}

func TestConnSecPasswordCLI(t *testing.T) {
	t.Parallel()
	const password, wrong = "s3cret p@ss:w/rd", "not-the-pa55word"
	secrets := []string{password, wrong, "s3cret"}
	srv := redistest.Start(t, redistest.Options{Password: password})
	connsecUse(t, nil, "--redis", srv.URL("", password))
	connsecUse(t, []string{"WORK_REDIS=" + srv.URL("", password)})
	if n := srv.Do(t, "LLEN", connsecNS+":jobs:mail"); n != int64(2) {
		t.Errorf("%v jobs in the queue, want 2", n)
	}

	connsecRefused(t, "a wrong password", 1, "cannot reach Redis at redis://:xxxxx@"+srv.Addr+": WRONGPASS", secrets, nil,
		"--redis", srv.URL("", wrong))
	connsecRefused(t, "a wrong password in WORK_REDIS", 1, "WRONGPASS", secrets, []string{"WORK_REDIS=" + srv.URL("", wrong)})
	connsecRefused(t, "no password", 1, "cannot reach Redis at "+srv.Addr+": NOAUTH", secrets, nil, "--redis", srv.Addr)
	// work ui connects before it listens.
	r := runBinary(t, nil, "--redis", srv.URL("", wrong), "ui", "--listen", "127.0.0.1:0")
	if r.code != 1 || !strings.Contains(r.stderr, "WRONGPASS") || strings.Contains(r.stderr, wrong) {
		t.Errorf("work ui with a wrong password: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestConnSecACLUserCLI(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{Users: []redistest.User{
		{Name: "admin", Password: "admin-pw"},
		// Only the connsec namespace.
		{Name: "worker", Password: "worker-pw", Rules: []string{"~" + connsecNS + ":*", "&" + connsecNS + ":*", "+@all", "-@dangerous"}},
	}})
	secrets := []string{"admin-pw", "worker-pw"}
	connsecUse(t, nil, "--redis", srv.URL("worker", "worker-pw"))
	runBinary(t, nil, "--redis", srv.URL("worker", "worker-pw"), "--ns", connsecNS, "dead", "list").want(t, 0, "no dead jobs")

	connsecRefused(t, "a wrong password", 1, "cannot reach Redis at redis://worker:xxxxx@"+srv.Addr+": WRONGPASS", secrets, nil,
		"--redis", srv.URL("worker", "admin-pw"))
	connsecRefused(t, "an unknown user", 1, "WRONGPASS", secrets, nil, "--redis", srv.URL("nobody", "worker-pw"))
	connsecRefused(t, "the password alone (the default user is off)", 1, "WRONGPASS", secrets, nil, "--redis", srv.URL("", "worker-pw"))
	connsecRefused(t, "no credentials", 1, "NOAUTH", secrets, nil, "--redis", srv.Addr)
	// The user may not touch another namespace: the permission error is reported.
	r := runBinary(t, nil, "--redis", srv.URL("worker", "worker-pw"), "--ns", "elsewhere", "queues")
	if r.code != 1 || !strings.Contains(r.stderr, "NOPERM") || strings.Contains(r.stderr, "worker-pw") {
		t.Errorf("another namespace: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestConnSecTLSCLI(t *testing.T) {
	t.Parallel()
	certs, other := redistest.NewCerts(t), redistest.NewCerts(t)
	const password = "tls-s3cret"
	secrets := []string{password}
	srv := redistest.Start(t, redistest.Options{TLS: certs, Password: password})
	url := srv.URL("", password)
	files := []string{"--tls-ca", certs.CA, "--tls-cert", certs.ClientCert, "--tls-key", certs.ClientKey}
	connsecUse(t, nil, append([]string{"--redis", url}, files...)...)
	connsecUse(t, []string{"WORK_REDIS=" + url, "WORK_REDIS_TLS_CA=" + certs.CA, "WORK_REDIS_TLS_CERT=" + certs.ClientCert,
		"WORK_REDIS_TLS_KEY=" + certs.ClientKey})

	connsecRefused(t, "the system's roots", 1, "cannot reach Redis at rediss://:xxxxx@"+srv.Addr+": tls: failed to verify certificate",
		secrets, nil, "--redis", url, "--tls-cert", certs.ClientCert, "--tls-key", certs.ClientKey)
	connsecRefused(t, "another CA", 1, "unknown authority", secrets, nil,
		"--redis", url, "--tls-ca", other.CA, "--tls-cert", certs.ClientCert, "--tls-key", certs.ClientKey)
	connsecRefused(t, "no client certificate", 1, "certificate", secrets, nil, "--redis", url, "--tls-ca", certs.CA)
	connsecRefused(t, "another CA's client certificate", 1, "certificate", secrets, nil,
		"--redis", url, "--tls-ca", certs.CA, "--tls-cert", other.ClientCert, "--tls-key", other.ClientKey)
	connsecRefused(t, "plain text to the TLS port", 1, "use a rediss:// address", secrets, nil, "--redis", strings.Replace(url, "rediss:", "redis:", 1))

	// TLS files that cannot be used are bad usage.
	connsecRefused(t, "TLS files with a redis:// address", 2, "need a rediss:// address, not redis://:xxxxx@", secrets, nil,
		append([]string{"--redis", strings.Replace(url, "rediss:", "redis:", 1)}, files...)...)
	connsecRefused(t, "a certificate without its key", 2, "needs both", secrets, nil,
		"--redis", url, "--tls-ca", certs.CA, "--tls-cert", certs.ClientCert)
	missing := filepath.Join(t.TempDir(), "missing.crt")
	connsecRefused(t, "a missing CA file", 2, missing, secrets, []string{"WORK_REDIS_TLS_CA=" + missing}, "--redis", url)
}
