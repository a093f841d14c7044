// Package cli holds what the command-line programs share: reading the Redis address in its accepted
// forms and the TLS files that secure it, opening a connection pool on it, the environment variables
// behind the flags' defaults, and serving the web UI until a signal arrives.
package cli

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/gomodule/redigo/redis"
)

// Environment variables that set the defaults of the connection and web UI flags.
const (
	EnvRedis         = "WORK_REDIS"
	EnvNamespace     = "WORK_NS"
	EnvWebUIUser     = "WORK_WEBUI_USER"
	EnvWebUIPassword = "WORK_WEBUI_PASSWORD"
	EnvWebUIToken    = "WORK_WEBUI_TOKEN"
	EnvRedisTLSCA    = "WORK_REDIS_TLS_CA"
	EnvRedisTLSCert  = "WORK_REDIS_TLS_CERT"
	EnvRedisTLSKey   = "WORK_REDIS_TLS_KEY"
)

// Defaults of the connection and web UI flags.
const (
	DefaultRedis     = "127.0.0.1:6379"
	DefaultNamespace = "work"
	DefaultListen    = "127.0.0.1:5040"
)

// Env returns the value of the environment variable name, or def when it is unset or empty.
func Env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// Target is a parsed Redis address.
type Target struct {
	network string // "tcp" or "unix"
	address string // host:port or socket path
	tls     bool
	tlsConf *tls.Config // nil: the system's roots, no client certificate
	user    string
	pass    string
	db      int
	display string // the address with any password hidden
}

// String returns the address with any password hidden, for messages.
func (t *Target) String() string { return t.display }

// Database returns the database number the pool selects.
func (t *Target) Database() int { return t.db }

// ParseRedis reads a Redis address: "host:port", "host" (port 6379), ":port" (localhost),
// "redis://[user:password@]host[:port][/database]", "rediss://..." (TLS) or "unix:///path/to.sock".
// database selects the database when it is >= 0, overriding one named in a URL; -1 keeps the URL's
// (0 when it names none).
func ParseRedis(addr string, database int) (*Target, error) {
	addr = strings.TrimSpace(addr)
	if addr == "" {
		return nil, errors.New("the Redis address is empty")
	}
	t := &Target{network: "tcp"}
	if !strings.Contains(addr, "://") {
		if strings.Contains(addr, "@") {
			// "user:password@host" is no host name: refuse it without echoing the password.
			return nil, errors.New("bad Redis address: a user or password (before an @) needs the URL form redis://[user:password@]host[:port]")
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			// No port: the whole thing is a host (an IPv6 literal may come bracketed).
			host, port = addr, "6379"
			if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
				host = host[1 : len(host)-1]
			}
		}
		if host == "" {
			host = "127.0.0.1"
		}
		if err := checkPort(port); err != nil {
			return nil, fmt.Errorf("bad Redis address %q: %v", addr, err)
		}
		t.address = net.JoinHostPort(host, port)
		if h, _, err := net.SplitHostPort(t.address); err != nil || h != host || strings.ContainsFunc(host, badHostRune) {
			// A stray bracket ("0[", "[::1]]") or a space ("[ ]"): no host name.
			return nil, fmt.Errorf("bad Redis address %q: bad host %q", addr, host)
		}
		t.display = t.address
	} else {
		u, err := url.Parse(addr)
		if err != nil {
			return nil, fmt.Errorf("bad Redis URL: %v", redactErr(err, addr))
		}
		if u.Opaque != "" {
			// "redis:u:pw@host/x://" has no host: it would dial the default one. Its opaque part may
			// hold a password: not echoed.
			return nil, fmt.Errorf("bad Redis URL: no // after the scheme %s", u.Scheme)
		}
		switch u.Scheme {
		case "redis", "rediss":
			t.tls = u.Scheme == "rediss"
			host, port := u.Hostname(), u.Port()
			if host == "" {
				host = "127.0.0.1"
			}
			if port == "" {
				port = "6379"
			}
			if err := checkPort(port); err != nil {
				return nil, fmt.Errorf("bad Redis URL %q: %v", redactURL(u), err)
			}
			t.address = net.JoinHostPort(host, port)
			if h, _, err := net.SplitHostPort(t.address); err != nil || h != host {
				return nil, fmt.Errorf("bad Redis URL %q: bad host %q", redactURL(u), host)
			}
			if p := strings.Trim(u.Path, "/"); p != "" {
				n, err := strconv.Atoi(p)
				if err != nil || n < 0 {
					return nil, fmt.Errorf("bad Redis URL %q: the path must be a database number", redactURL(u))
				}
				t.db = n
			}
			if v := u.Query().Get("db"); v != "" {
				n, err := strconv.Atoi(v)
				if err != nil || n < 0 {
					return nil, fmt.Errorf("bad Redis URL %q: db must be a database number", redactURL(u))
				}
				t.db = n
			}
		case "unix":
			t.network = "unix"
			t.address = u.Path
			if t.address == "" {
				return nil, fmt.Errorf("bad Redis URL %q: no socket path", redactURL(u))
			}
			if v := u.Query().Get("db"); v != "" {
				n, err := strconv.Atoi(v)
				if err != nil || n < 0 {
					return nil, fmt.Errorf("bad Redis URL %q: db must be a database number", redactURL(u))
				}
				t.db = n
			}
		default:
			return nil, fmt.Errorf("bad Redis URL %q: the scheme must be redis, rediss or unix", redactURL(u))
		}
		if u.User != nil {
			t.user = u.User.Username()
			t.pass, _ = u.User.Password()
			if _, hasPass := u.User.Password(); !hasPass {
				// redis://secret@host: a lone user info is the password, as redis-cli reads it.
				t.user, t.pass = "", u.User.Username()
			}
		}
		t.display = redactURL(u)
	}
	if database >= 0 {
		t.db = database
	} else if database < -1 {
		return nil, fmt.Errorf("bad database %d", database)
	}
	return t, nil
}

// badHostRune reports whether r cannot be part of a host name: a space or a control character.
func badHostRune(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }

func checkPort(port string) error {
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("bad port %q", port)
	}
	return nil
}

// redactURL renders a URL with its password replaced.
func redactURL(u *url.URL) string {
	c := *u
	if c.User != nil {
		if _, ok := c.User.Password(); ok {
			c.User = url.UserPassword(c.User.Username(), "xxxxx")
		} else {
			c.User = url.User("xxxxx")
		}
	}
	return c.String()
}

// redactErr hides the raw address in a URL parse error, which may hold a password.
func redactErr(err error, raw string) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return errors.New(strings.ReplaceAll(err.Error(), raw, "<address>"))
}

// TLSFlags name the files that secure a rediss:// connection: the certificate authorities to trust
// instead of the system's (for a private CA), and a client certificate for a server that asks for one
// (tls-auth-clients).
type TLSFlags struct {
	CA   string // PEM file of CA certificates
	Cert string // PEM file of the client certificate, given with Key
	Key  string // PEM file of the client certificate's private key
}

// AddFlags defines tls-ca, tls-cert and tls-key on fs, a flag.FlagSet or a pflag.FlagSet, with the
// defaults from the environment.
func (f *TLSFlags) AddFlags(fs interface {
	StringVar(p *string, name, value, usage string)
}) {
	fs.StringVar(&f.CA, "tls-ca", os.Getenv(EnvRedisTLSCA),
		"PEM file of the CA certificates to trust for a rediss:// address, instead of the system's ($"+EnvRedisTLSCA+")")
	fs.StringVar(&f.Cert, "tls-cert", os.Getenv(EnvRedisTLSCert),
		"PEM file of a client certificate to present to a rediss:// address, with tls-key ($"+EnvRedisTLSCert+")")
	fs.StringVar(&f.Key, "tls-key", os.Getenv(EnvRedisTLSKey),
		"PEM file of the client certificate's private key ($"+EnvRedisTLSKey+")")
}

// UseTLSFiles loads the files f names into the target's TLS settings; without files it does nothing.
// They need a rediss:// address: rather than connect in the clear, a plain address is an error.
func (t *Target) UseTLSFiles(f TLSFlags) error {
	if f.CA == "" && f.Cert == "" && f.Key == "" {
		return nil
	}
	if !t.tls {
		return fmt.Errorf("the TLS files (tls-ca, tls-cert, tls-key) need a rediss:// address, not %s", t.display)
	}
	if (f.Cert == "") != (f.Key == "") {
		return errors.New("a TLS client certificate needs both a certificate file (tls-cert) and a key file (tls-key)")
	}
	conf := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.CA != "" {
		pem, err := os.ReadFile(f.CA)
		if err != nil {
			return fmt.Errorf("cannot read the TLS CA file: %v", err)
		}
		conf.RootCAs = x509.NewCertPool()
		if !conf.RootCAs.AppendCertsFromPEM(pem) {
			return fmt.Errorf("the TLS CA file %s holds no PEM certificate", f.CA)
		}
	}
	if f.Cert != "" {
		cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			return fmt.Errorf("cannot load the TLS client certificate: %v", err)
		}
		conf.Certificates = []tls.Certificate{cert}
	}
	t.tlsConf = conf
	return nil
}

// Pool returns a connection pool on the target; maxActive bounds its connections.
func (t *Target) Pool(maxActive int) *redis.Pool {
	opts := []redis.DialOption{
		redis.DialConnectTimeout(5 * time.Second),
		redis.DialReadTimeout(30 * time.Second),
		redis.DialWriteTimeout(30 * time.Second),
		redis.DialDatabase(t.db),
	}
	if t.tls {
		opts = append(opts, redis.DialUseTLS(true)) // the server name is the address's host
		if t.tlsConf != nil {
			opts = append(opts, redis.DialTLSConfig(t.tlsConf))
		}
	}
	if t.pass != "" {
		opts = append(opts, redis.DialPassword(t.pass))
	}
	if t.user != "" {
		opts = append(opts, redis.DialUsername(t.user))
	}
	network, address := t.network, t.address
	return &redis.Pool{
		MaxActive:   maxActive,
		MaxIdle:     maxActive,
		Wait:        true,
		IdleTimeout: 4 * time.Minute,
		Dial: func() (redis.Conn, error) {
			return redis.Dial(network, address, opts...)
		},
		TestOnBorrow: func(c redis.Conn, idleSince time.Time) error {
			if time.Since(idleSince) < time.Minute {
				return nil
			}
			_, err := c.Do("PING")
			return err
		},
	}
}

// Ping checks that Redis answers on the pool, with a clear error when it does not.
func (t *Target) Ping(pool *redis.Pool) error {
	c := pool.Get()
	defer c.Close()
	if _, err := c.Do("PING"); err != nil {
		return fmt.Errorf("cannot reach Redis at %s: %v%s", t.display, err, t.hangUpHint(err))
	}
	return nil
}

// hangUpHint names the usual causes of a server hanging up at once, which the error alone does not:
// plain text to a TLS port, or a client certificate that a TLS server wants and does not get (under
// TLS 1.3 the client may see only the reset, not the server's alert).
func (t *Target) hangUpHint(err error) string {
	if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) && !errors.Is(err, io.EOF) {
		return ""
	}
	switch {
	case !t.tls:
		return " (if the server speaks TLS, use a rediss:// address)"
	case t.tlsConf == nil || len(t.tlsConf.Certificates) == 0:
		return " (the server may require a client certificate: give tls-cert and tls-key)"
	}
	return " (the server may not accept the client certificate)"
}
