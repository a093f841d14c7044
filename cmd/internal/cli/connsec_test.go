package cli

// Pools opened by ParseRedis and UseTLSFiles against real redis-servers secured by a password, by ACL
// users and by TLS with client certificates: the right credentials connect, the wrong ones give an
// error that says why without showing the password.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/workqueue/work/internal/redistest"
)

// connsecPing opens a pool as the programs do and pings through it.
func connsecPing(t *testing.T, addr string, files TLSFlags) error {
	t.Helper()
	tg, err := ParseRedis(addr, -1)
	if err != nil {
		t.Fatalf("ParseRedis(%q): %v", addr, err)
	}
	if err := tg.UseTLSFiles(files); err != nil {
		t.Fatalf("UseTLSFiles(%+v): %v", files, err)
	}
	pool := tg.Pool(1)
	defer pool.Close()
	return tg.Ping(pool)
}

// wantRefused checks that err says the server cannot be reached, mentions want, and shows none of
// secrets.
func wantRefused(t *testing.T, what string, err error, want string, secrets ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error", what)
		return
	}
	t.Logf("%s: %v", what, err)
	if !strings.Contains(err.Error(), "cannot reach Redis at") || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: %v; want an error mentioning %q", what, err, want)
	}
	for _, s := range secrets {
		if strings.Contains(err.Error(), s) {
			t.Errorf("%s: the error shows the password %q: %v", what, s, err)
		}
	}
}

func TestConnSecPasswordPing(t *testing.T) {
	t.Parallel()
	// URL-reserved characters must survive the round trip through the URL.
	const password, wrong = "s3cret p@ss:w/rd#?", "not-the-pa55word"
	srv := redistest.Start(t, redistest.Options{Password: password})
	if err := connsecPing(t, srv.URL("", password), TLSFlags{}); err != nil {
		t.Errorf("the right password: %v", err)
	}
	if err := connsecPing(t, srv.URL("default", password), TLSFlags{}); err != nil {
		t.Errorf("the right password as user default: %v", err)
	}
	wantRefused(t, "a wrong password", connsecPing(t, srv.URL("", wrong), TLSFlags{}), "WRONGPASS", password, wrong)
	wantRefused(t, "no password", connsecPing(t, srv.Addr, TLSFlags{}), "NOAUTH", password)
}

func TestConnSecACLPing(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.Options{Users: []redistest.User{
		{Name: "admin", Password: "admin-pw"},
		{Name: "worker", Password: "worker-pw", Rules: []string{"~app:*", "&app:*", "+@all", "-@dangerous"}},
	}})
	if err := connsecPing(t, srv.URL("worker", "worker-pw"), TLSFlags{}); err != nil {
		t.Errorf("the right user: %v", err)
	}
	wantRefused(t, "a wrong password", connsecPing(t, srv.URL("worker", "admin-pw"), TLSFlags{}), "WRONGPASS", "admin-pw")
	wantRefused(t, "an unknown user", connsecPing(t, srv.URL("nobody", "worker-pw"), TLSFlags{}), "WRONGPASS", "worker-pw")
	// The default user is off: its password alone is refused.
	wantRefused(t, "no user", connsecPing(t, srv.URL("", "worker-pw"), TLSFlags{}), "WRONGPASS", "worker-pw")
	wantRefused(t, "no credentials", connsecPing(t, srv.Addr, TLSFlags{}), "NOAUTH")
}

func TestConnSecTLSPing(t *testing.T) {
	t.Parallel()
	certs, other := redistest.NewCerts(t), redistest.NewCerts(t)
	srv := redistest.Start(t, redistest.Options{TLS: certs, Users: []redistest.User{{Name: "tls-user", Password: "tls-pw"}}})
	url := srv.URL("tls-user", "tls-pw")
	good := TLSFlags{CA: certs.CA, Cert: certs.ClientCert, Key: certs.ClientKey}
	if err := connsecPing(t, url, good); err != nil {
		t.Fatalf("the right CA and client certificate: %v", err)
	}
	wantRefused(t, "the system's roots", connsecPing(t, url, TLSFlags{Cert: certs.ClientCert, Key: certs.ClientKey}),
		"unknown authority", "tls-pw")
	wantRefused(t, "another CA", connsecPing(t, url, TLSFlags{CA: other.CA, Cert: certs.ClientCert, Key: certs.ClientKey}),
		"unknown authority", "tls-pw")
	// The server asks for a client certificate: without one, or with one from another CA, it hangs up.
	wantRefused(t, "no client certificate", connsecPing(t, url, TLSFlags{CA: certs.CA}), "certificate", "tls-pw")
	wantRefused(t, "another CA's client certificate", connsecPing(t, url, TLSFlags{CA: certs.CA, Cert: other.ClientCert, Key: other.ClientKey}),
		"certificate", "tls-pw")
	wantRefused(t, "a wrong password over TLS", connsecPing(t, srv.URL("tls-user", "nope-pw"), good), "WRONGPASS", "nope-pw")
	// Plain text to the TLS port: an error, not a hang, that points at rediss://.
	wantRefused(t, "plain text to the TLS port", connsecPing(t, strings.Replace(url, "rediss://", "redis://", 1), TLSFlags{}),
		"rediss://", "tls-pw")
}

// TestHangUpHints: a reset says little, so Ping names its usual causes. (Against a real server, a
// missing client certificate shows either the server's alert or a reset, by timing.)
func TestHangUpHints(t *testing.T) {
	t.Parallel()
	certs := redistest.NewCerts(t)
	reset := &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.ECONNRESET)}
	plain, _ := ParseRedis("127.0.0.1:1", -1)
	bare, _ := ParseRedis("rediss://127.0.0.1:1", -1)
	withCert, _ := ParseRedis("rediss://127.0.0.1:1", -1)
	if err := withCert.UseTLSFiles(TLSFlags{Cert: certs.ClientCert, Key: certs.ClientKey}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		t    *Target
		err  error
		want string
	}{
		{plain, reset, "use a rediss:// address"},
		{plain, io.EOF, "use a rediss:// address"},
		{bare, reset, "may require a client certificate: give tls-cert and tls-key"},
		{withCert, fmt.Errorf("wrapped: %w", syscall.EPIPE), "may not accept the client certificate"},
		{plain, errors.New("NOAUTH Authentication required."), ""},
		{bare, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, ""},
	} {
		got := tc.t.hangUpHint(tc.err)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s, %v: hint %q, want %q", tc.t, tc.err, got, tc.want)
		}
	}
}

func TestUseTLSFilesRefusesBadFiles(t *testing.T) {
	t.Parallel()
	certs, other := redistest.NewCerts(t), redistest.NewCerts(t)
	missing := filepath.Join(t.TempDir(), "missing.crt")
	for _, tc := range []struct {
		addr  string
		files TLSFlags
		want  string
	}{
		{"redis://:hunter2@127.0.0.1:1", TLSFlags{CA: certs.CA}, "need a rediss:// address, not redis://:xxxxx@127.0.0.1:1"},
		{"127.0.0.1:1", TLSFlags{Cert: certs.ClientCert, Key: certs.ClientKey}, "need a rediss:// address"},
		{"rediss://127.0.0.1:1", TLSFlags{Cert: certs.ClientCert}, "needs both a certificate file (tls-cert) and a key file (tls-key)"},
		{"rediss://127.0.0.1:1", TLSFlags{Key: certs.ClientKey}, "needs both"},
		{"rediss://127.0.0.1:1", TLSFlags{CA: missing}, "cannot read the TLS CA file: open " + missing},
		{"rediss://127.0.0.1:1", TLSFlags{CA: certs.ClientKey}, "holds no PEM certificate"},
		{"rediss://127.0.0.1:1", TLSFlags{Cert: certs.ClientCert, Key: other.ClientKey}, "cannot load the TLS client certificate"},
		{"rediss://127.0.0.1:1", TLSFlags{Cert: missing, Key: certs.ClientKey}, "cannot load the TLS client certificate"},
	} {
		tg, err := ParseRedis(tc.addr, -1)
		if err != nil {
			t.Fatal(err)
		}
		if err := tg.UseTLSFiles(tc.files); err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s with %+v: %v; want an error mentioning %q", tc.addr, tc.files, err, tc.want)
		}
	}
	// No files: nothing to do, whatever the address.
	tg, _ := ParseRedis("127.0.0.1:1", -1)
	if err := tg.UseTLSFiles(TLSFlags{}); err != nil || tg.tlsConf != nil {
		t.Errorf("no files: %v, %+v", err, tg.tlsConf)
	}
}

func TestTLSFlagsDefaultToTheEnvironment(t *testing.T) {
	t.Setenv(EnvRedisTLSCA, "/env/ca.crt")
	t.Setenv(EnvRedisTLSCert, "/env/client.crt")
	t.Setenv(EnvRedisTLSKey, "")
	var f TLSFlags
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	f.AddFlags(fs)
	if err := fs.Parse([]string{"-tls-key", "/flag/client.key"}); err != nil {
		t.Fatal(err)
	}
	if f != (TLSFlags{CA: "/env/ca.crt", Cert: "/env/client.crt", Key: "/flag/client.key"}) {
		t.Errorf("flags %+v", f)
	}
	if os.Getenv(EnvRedisTLSKey) != "" {
		t.Error("the environment changed")
	}
}
