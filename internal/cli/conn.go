// Package cli holds what the command-line programs share: reading the Redis address in its accepted
// forms, opening a connection pool on it, the environment variables behind the flags' defaults, and
// serving the web UI until a signal arrives.
package cli

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Environment variables that set the defaults of the connection and web UI flags.
const (
	EnvRedis         = "WORK_REDIS"
	EnvNamespace     = "WORK_NS"
	EnvWebUIUser     = "WORK_WEBUI_USER"
	EnvWebUIPassword = "WORK_WEBUI_PASSWORD"
	EnvWebUIToken    = "WORK_WEBUI_TOKEN"
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
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			// No port: the whole thing is a host (an IPv6 literal may come bracketed).
			host, port = strings.TrimSuffix(strings.TrimPrefix(addr, "["), "]"), "6379"
		}
		if host == "" {
			host = "127.0.0.1"
		}
		if err := checkPort(port); err != nil {
			return nil, fmt.Errorf("bad Redis address %q: %v", addr, err)
		}
		t.address = net.JoinHostPort(host, port)
		t.display = t.address
	} else {
		u, err := url.Parse(addr)
		if err != nil {
			return nil, fmt.Errorf("bad Redis URL: %v", redactErr(err, addr))
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
		return fmt.Errorf("cannot reach Redis at %s: %v", t.display, err)
	}
	return nil
}
