// Package redistest starts throwaway redis-server processes secured by a password, by ACL users or by
// TLS, and makes the certificates TLS needs, for the tests of the commands and of the connection code.
// Only tests import it.
package redistest

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Certs are the PEM files of a CA of its own, a server certificate it signed for 127.0.0.1 and
// localhost, and a client certificate it signed. Two Certs trust nothing of each other.
type Certs struct {
	CA         string // the CA certificate
	ServerCert string
	ServerKey  string
	ClientCert string
	ClientKey  string

	roots  *x509.CertPool
	client tls.Certificate
}

// NewCerts makes a CA and its server and client certificates in a temporary directory of t's.
func NewCerts(t testing.TB) *Certs {
	t.Helper()
	dir := t.TempDir()
	now := time.Now()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	writeKey := func(name string, k *ecdsa.PrivateKey) string {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return write(name, "PRIVATE KEY", der)
	}
	caKey := newKey()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "work test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage) ([]byte, *ecdsa.PrivateKey) {
		k := newKey()
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, k
	}
	c := &Certs{CA: write("ca.crt", "CERTIFICATE", caDER), roots: x509.NewCertPool()}
	c.roots.AddCert(caCert)
	srvDER, srvKey := leaf(2, "localhost", x509.ExtKeyUsageServerAuth)
	c.ServerCert, c.ServerKey = write("server.crt", "CERTIFICATE", srvDER), writeKey("server.key", srvKey)
	cliDER, cliKey := leaf(3, "work test client", x509.ExtKeyUsageClientAuth)
	c.ClientCert, c.ClientKey = write("client.crt", "CERTIFICATE", cliDER), writeKey("client.key", cliKey)
	c.client = tls.Certificate{Certificate: [][]byte{cliDER}, PrivateKey: cliKey}
	return c
}

// ClientTLS returns a configuration that trusts the CA and presents the client certificate.
func (c *Certs) ClientTLS() *tls.Config {
	return &tls.Config{RootCAs: c.roots, Certificates: []tls.Certificate{c.client}, MinVersion: tls.VersionTLS12}
}

// User is an ACL user, given to the server with the "user" directive.
type User struct {
	Name, Password string
	Rules          []string // nil: every key, channel and command
}

// Options say how a server is secured.
type Options struct {
	Password string // the default user's password (requirepass)
	// Users are ACL users. With any and no Password, the default user is turned off, so that a
	// connection must name one of them.
	Users []User
	// TLS, when set, makes the server speak TLS only, with these certificates, and require a client
	// certificate signed by their CA.
	TLS *Certs
	// Args are more redis-server arguments, such as "--replicaof", host, port.
	Args []string
}

// Server is a running redis-server.
type Server struct {
	Addr string // 127.0.0.1:port
	opts Options
	proc *os.Process
}

// Process is the server's process, for a test to signal (SIGSTOP freezes the server, SIGCONT thaws
// it); it is killed when the test ends, stopped or not.
func (s *Server) Process() *os.Process { return s.proc }

// Start starts a redis-server secured as o says on a free loopback port, waits until it accepts
// connections, and stops it when t ends. It skips t when redis-server is not installed, or lacks TLS
// support and o asks for TLS.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed")
	}
	args := []string{"--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir()}
	if o.Password != "" {
		args = append(args, "--requirepass", o.Password)
	}
	for _, u := range o.Users {
		rules := u.Rules
		if rules == nil {
			rules = []string{"~*", "&*", "+@all"}
		}
		args = append(append(args, "--user", u.Name, "on", ">"+u.Password), rules...)
	}
	if len(o.Users) > 0 && o.Password == "" {
		args = append(args, "--user", "default", "off")
	}
	if o.TLS != nil {
		args = append(args, "--port", "0", "--tls-port", "PORT", "--tls-cert-file", o.TLS.ServerCert,
			"--tls-key-file", o.TLS.ServerKey, "--tls-ca-cert-file", o.TLS.CA, "--tls-auth-clients", "yes")
	} else {
		args = append(args, "--port", "PORT")
	}
	args = append(args, o.Args...)
	s := &Server{opts: o}
	// The free port may be taken before the server binds it: try another then.
	for attempt := 1; ; attempt++ {
		addr, proc, out, ok := launch(t, bin, args)
		if ok {
			s.Addr, s.proc = addr, proc
			break
		}
		if strings.Contains(out, "Address already in use") && attempt < 5 {
			continue
		}
		if o.TLS != nil && lacksTLS(out) {
			t.Skipf("redis-server lacks TLS support: %s", strings.TrimSpace(out))
		}
		t.Fatalf("redis-server did not start:\n%s", out)
	}
	c, err := s.Dial()
	if err != nil {
		t.Fatalf("redis-server on %s: %v", s.Addr, err)
	}
	defer c.Close()
	if _, err := c.Do("PING"); err != nil {
		t.Fatalf("redis-server on %s: %v", s.Addr, err)
	}
	return s
}

// lacksTLS tells a redis-server built without TLS (which knows no tls-* directive, or has TLS as a
// module not loaded) from one that refuses its TLS settings, a failure of the test.
func lacksTLS(out string) bool {
	lower := strings.ToLower(out)
	if !strings.Contains(lower, "tls") {
		return false
	}
	for _, s := range []string{"bad directive", "not supported", "not available", "module"} {
		if strings.Contains(lower, s) {
			return true
		}
	}
	return false
}

// launch runs one redis-server with PORT in args replaced by a free port. ok is false, with the
// server's output, when it exits before it is ready.
func launch(t testing.TB, bin string, args []string) (addr string, proc *os.Process, out string, ok bool) {
	t.Helper()
	port := freePort(t)
	full := make([]string, len(args))
	for i, a := range args {
		full[i] = strings.ReplaceAll(a, "PORT", strconv.Itoa(port))
	}
	cmd := exec.Command(bin, full...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		pw.Close()
		close(exited)
	}()
	var mu sync.Mutex
	var log strings.Builder
	ready, drained := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(drained)
		// Read to the end so that the server never blocks on a full pipe.
		sc := bufio.NewScanner(pr)
		once := false
		for sc.Scan() {
			mu.Lock()
			log.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if !once && strings.Contains(sc.Text(), "Ready to accept connections") {
				once = true
				close(ready)
			}
		}
		io.Copy(io.Discard, pr)
	}()
	output := func() string {
		mu.Lock()
		defer mu.Unlock()
		return log.String()
	}
	select {
	case <-ready:
		t.Cleanup(func() {
			cmd.Process.Kill()
			<-exited
		})
		return fmt.Sprintf("127.0.0.1:%d", port), cmd.Process, "", true
	case <-exited:
		<-drained
		return "", nil, output(), false
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-exited
		t.Fatalf("redis-server did not get ready within 30s:\n%s", output())
		return "", nil, "", false
	}
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

// Dial connects with every right: as the default user with the password, else as the first ACL user,
// over TLS with the client certificate when the server speaks TLS.
func (s *Server) Dial() (redis.Conn, error) {
	opts := []redis.DialOption{redis.DialConnectTimeout(10 * time.Second), redis.DialReadTimeout(10 * time.Second)}
	switch {
	case s.opts.Password != "":
		opts = append(opts, redis.DialPassword(s.opts.Password))
	case len(s.opts.Users) > 0:
		opts = append(opts, redis.DialUsername(s.opts.Users[0].Name), redis.DialPassword(s.opts.Users[0].Password))
	}
	if s.opts.TLS != nil {
		opts = append(opts, redis.DialUseTLS(true), redis.DialTLSConfig(s.opts.TLS.ClientTLS()))
	}
	return redis.Dial("tcp", s.Addr, opts...)
}

// Do runs one command on a connection of Dial's, failing t on an error.
func (s *Server) Do(t testing.TB, cmd string, args ...interface{}) interface{} {
	t.Helper()
	c, err := s.Dial()
	if err != nil {
		t.Fatalf("redis-server on %s: %v", s.Addr, err)
	}
	defer c.Close()
	v, err := c.Do(cmd, args...)
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	return v
}

// URL returns the server's address as a redis:// URL (rediss:// when it speaks TLS) with user and
// password, either of which may be empty.
func (s *Server) URL(user, password string) string {
	u := url.URL{Scheme: "redis", Host: s.Addr}
	if s.opts.TLS != nil {
		u.Scheme = "rediss"
	}
	if user != "" || password != "" {
		// Always with a colon: a lone user info reads as a password.
		u.User = url.UserPassword(user, password)
	}
	return u.String()
}
