package main

// workenqueue against redis-servers of its own secured by a password, by an ACL user and by TLS with
// client certificates: with the right credentials it enqueues; with wrong ones it exits with 1 (2 for
// unusable TLS flags) and says why, without the password.

import (
	"bytes"
	"strings"
	"testing"

	"github.com/workqueue/work/internal/redistest"
)

const connsecNS = "connsec"

// connsecEnqueue runs the command with the connection flags conn and returns its exit status and
// standard output and error.
func connsecEnqueue(conn ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(append(conn, "-ns", connsecNS, "-job", "mail", "-args", `{"to":"a@example.com"}`), &out, &errb)
	return code, out.String(), errb.String()
}

// connsecOK enqueues and checks that the job is in the queue.
func connsecOK(t *testing.T, srv *redistest.Server, conn ...string) {
	t.Helper()
	code, out, errb := connsecEnqueue(conn...)
	id := strings.TrimSpace(out)
	if code != 0 || len(id) != 24 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errb)
	}
	if q, _ := srv.Do(t, "LRANGE", connsecNS+":jobs:mail", 0, 0).([]interface{}); len(q) != 1 || !strings.Contains(string(q[0].([]byte)), id) {
		t.Errorf("the queue's head is %q, not job %s", q, id)
	}
}

// connsecRefused checks that the command exits with code, saying something on standard error that
// mentions want and none of secrets.
func connsecRefused(t *testing.T, what string, code int, want string, secrets []string, conn ...string) {
	t.Helper()
	got, out, errb := connsecEnqueue(conn...)
	if got != code || out != "" || !strings.HasPrefix(errb, "workenqueue: ") || !strings.Contains(errb, want) {
		t.Errorf("%s: exit %d, stdout %q, stderr %q; want %d and a message mentioning %q", what, got, out, errb, code, want)
	}
	for _, s := range secrets {
		if strings.Contains(errb, s) {
			t.Errorf("%s: standard error shows the password %q: %s", what, s, errb)
		}
	}
}

func TestConnSecPasswordEnqueue(t *testing.T) {
	t.Parallel()
	const password, wrong = "s3cret p@ss:w/rd", "not-the-pa55word"
	secrets := []string{password, wrong, "s3cret"}
	srv := redistest.Start(t, redistest.Options{Password: password})
	connsecOK(t, srv, "-redis", srv.URL("", password))
	connsecRefused(t, "a wrong password", 1, "cannot enqueue on redis://:xxxxx@"+srv.Addr+": WRONGPASS", secrets, "-redis", srv.URL("", wrong))
	connsecRefused(t, "no password", 1, "NOAUTH", secrets, "-redis", srv.Addr)
}

func TestConnSecACLUserEnqueue(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{Users: []redistest.User{
		{Name: "admin", Password: "admin-pw"},
		{Name: "producer", Password: "producer-pw", Rules: []string{"~" + connsecNS + ":*", "&" + connsecNS + ":*", "+@all", "-@dangerous"}},
	}})
	secrets := []string{"admin-pw", "producer-pw"}
	connsecOK(t, srv, "-redis", srv.URL("producer", "producer-pw"))
	connsecRefused(t, "a wrong password", 1, "WRONGPASS", secrets, "-redis", srv.URL("producer", "admin-pw"))
	connsecRefused(t, "an unknown user", 1, "WRONGPASS", secrets, "-redis", srv.URL("nobody", "producer-pw"))
	var out, errb bytes.Buffer
	if code := run([]string{"-redis", srv.URL("producer", "producer-pw"), "-ns", "elsewhere", "-job", "mail"}, &out, &errb); code != 1 ||
		!strings.Contains(errb.String(), "NOPERM") {
		t.Errorf("another namespace: exit %d, stderr %q", code, errb.String())
	}
}

func TestConnSecTLSEnqueue(t *testing.T) {
	certs, other := redistest.NewCerts(t), redistest.NewCerts(t)
	srv := redistest.Start(t, redistest.Options{TLS: certs, Password: "tls-pw"})
	secrets := []string{"tls-pw"}
	url := srv.URL("", "tls-pw")
	connsecOK(t, srv, "-redis", url, "-tls-ca", certs.CA, "-tls-cert", certs.ClientCert, "-tls-key", certs.ClientKey)
	connsecRefused(t, "the system's roots", 1, "cannot enqueue on rediss://:xxxxx@"+srv.Addr+": tls: failed to verify certificate", secrets,
		"-redis", url, "-tls-cert", certs.ClientCert, "-tls-key", certs.ClientKey)
	connsecRefused(t, "another CA", 1, "unknown authority", secrets,
		"-redis", url, "-tls-ca", other.CA, "-tls-cert", certs.ClientCert, "-tls-key", certs.ClientKey)
	connsecRefused(t, "TLS files with a redis:// address", 2, "need a rediss:// address", secrets,
		"-redis", strings.Replace(url, "rediss:", "redis:", 1), "-tls-ca", certs.CA)
	// The environment sets the defaults (not parallel: it changes the process's environment).
	t.Setenv("WORK_REDIS_TLS_CA", certs.CA)
	t.Setenv("WORK_REDIS_TLS_CERT", certs.ClientCert)
	t.Setenv("WORK_REDIS_TLS_KEY", certs.ClientKey)
	connsecOK(t, srv, "-redis", url)
}
