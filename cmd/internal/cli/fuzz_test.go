package cli

import (
	"net"
	"net/url"
	"strings"
	"testing"
)

// FuzzParseRedis: ParseRedis never panics; an error comes without a target; neither an error nor a
// target's String() shows a password (or a lone user info, which redis-cli reads as the password);
// the database argument wins over the address's, and one below -1 is refused; an accepted address is
// tcp host:port with a valid port, or a unix socket path, and String() reads back as the same target,
// so messages name what the pool dials.
func FuzzParseRedis(f *testing.F) {
	for _, s := range []struct {
		addr string
		db   int
	}{
		{"127.0.0.1:6379", -1}, {":6379", -1}, {"redis.internal", 3}, {"[::1]:7000", -1}, {"::1", -1}, {"[::1]", -1},
		{"host:0", -1}, {"host:65536", -1}, {"host:port", -1}, {" host:6379 ", -1}, {"host", -2},
		{"redis://localhost", -1}, {"redis://user:p%40ss@host:6380/4", -1}, {"redis://:secret@host/2", 5},
		{"redis://secret@host", -1}, {"rediss://u:p@host:6390?db=7", -1}, {"unix:///run/redis.sock?db=1", -1},
		{"unix://", -1}, {"http://host", -1}, {"redis://host:99999", -1}, {"redis://host/x", -1},
		{"redis://user:hunter2@host:bad", -1}, {"redis://user:hunter2@ho st", -1}, {"redis://us%zzer:hunter2@host", -1},
		{"redis://user:hunt%zzer2@host", -1}, {"user:hunter2@host:6379", -1}, {"hunter2@host", -1},
		{"redis:user:hunter2@host", -1}, {"redis://user:hunter2@host/?db=x", -1}, {"rediss://[::1]:6380/15", 0},
		{"redis:user:hunter2@host/0://", -1}, {"redis://@host", -1}, {"redis://", -1},
	} {
		f.Add(s.addr, s.db)
	}
	f.Fuzz(func(t *testing.T, addr string, database int) {
		if len(addr) > 1024 {
			t.Skip("longer than an address")
		}
		tg, err := ParseRedis(addr, database)
		if err != nil {
			if tg != nil {
				t.Fatalf("ParseRedis(%q, %d) returned a target with its error %v", addr, database, err)
			}
			checkNoSecret(t, addr, database, "the error", err.Error(), "")
			return
		}
		if tg == nil {
			t.Fatalf("ParseRedis(%q, %d): neither a target nor an error", addr, database)
		}
		display := tg.String()
		checkNoSecret(t, addr, database, "String()", display, tg.pass)
		if tg.pass != "" && !strings.Contains(display, "xxxxx") {
			t.Fatalf("ParseRedis(%q): a password, but String() %q does not show that it is hidden", addr, display)
		}
		switch {
		case database < -1:
			t.Fatalf("ParseRedis(%q, %d) accepted the database", addr, database)
		case database >= 0 && tg.Database() != database:
			t.Fatalf("ParseRedis(%q, %d): database %d", addr, database, tg.Database())
		case tg.Database() < 0:
			t.Fatalf("ParseRedis(%q, %d): database %d", addr, database, tg.Database())
		}
		switch tg.network {
		case "tcp":
			host, port, err := net.SplitHostPort(tg.address)
			if err != nil || host == "" || checkPort(port) != nil {
				t.Fatalf("ParseRedis(%q): dials %q, not host:port (%v)", addr, tg.address, err)
			}
		case "unix":
			if tg.address == "" || tg.tls {
				t.Fatalf("ParseRedis(%q): unix socket %q, tls %v", addr, tg.address, tg.tls)
			}
		default:
			t.Fatalf("ParseRedis(%q): network %q", addr, tg.network)
		}

		isURL := strings.Contains(strings.TrimSpace(addr), "://")
		if u, err := url.Parse(strings.TrimSpace(addr)); isURL && (err != nil || u.Opaque != "") {
			t.Fatalf("ParseRedis(%q) accepted a URL without a host part: %+v", addr, tg)
		}
		if isURL && !strings.Contains(display, "://") {
			// net/url writes "redis://" and "redis://?db=1" without their empty authority: the
			// message then reads "redis:", which is not worth a failure, but nothing else may.
			if tg.address != "127.0.0.1:6379" || tg.user != "" || tg.pass != "" {
				t.Fatalf("ParseRedis(%q) = %+v shows as %q", addr, tg, display)
			}
			return
		}
		// String() reads back as the same target (with the password hidden), and is a fixed point.
		back, err := ParseRedis(display, database)
		if err != nil {
			t.Fatalf("ParseRedis(%q) shows as %q, which does not parse: %v", addr, display, err)
		}
		// An empty user info ("redis://@host") shows as a hidden one: no harm, it hides nothing.
		hidden := tg.pass != "" || strings.Contains(addr, "@")
		if back.network != tg.network || back.address != tg.address || back.tls != tg.tls || back.db != tg.db ||
			back.String() != display || (tg.pass != "" && (back.pass == "" || back.user != tg.user)) || (back.pass != "" && !hidden) {
			t.Fatalf("ParseRedis(%q) = %+v shows as %q, which reads as %+v", addr, tg, display, back)
		}
		if !isURL {
			// host:port: shown as dialled, no credentials, and the port given is the port dialled.
			if display != tg.address || tg.tls || tg.user != "" || tg.pass != "" {
				t.Fatalf("ParseRedis(%q) = %+v", addr, tg)
			}
			if h, p, err := net.SplitHostPort(strings.TrimSpace(addr)); err == nil {
				gh, gp, _ := net.SplitHostPort(tg.address)
				if gp != p || (h != "" && gh != h) || (h == "" && gh != "127.0.0.1") {
					t.Fatalf("ParseRedis(%q) dials %q", addr, tg.address)
				}
			}
		}
	})
}

// secretsIn returns what an address holds as credentials, or would hold had it been written as a
// URL: in the user info before an "@" (of a URL's authority, or of an address that is no URL), the
// part after its first ":", or all of it without one, each also unescaped.
func secretsIn(addr string) (userinfos, secrets []string) {
	addUserinfo := func(s string) {
		if j := strings.LastIndex(s, "@"); j >= 0 {
			userinfos = append(userinfos, s[:j])
		}
	}
	if head, rest, isURL := strings.Cut(addr, "://"); !isURL {
		addUserinfo(addr)
	} else {
		if validScheme(head) {
			if k := strings.IndexAny(rest, "/?#"); k >= 0 {
				rest = rest[:k]
			}
			addUserinfo(rest)
		}
	}
	for _, ui := range userinfos {
		if _, pw, ok := strings.Cut(ui, ":"); ok {
			secrets = append(secrets, pw)
		} else {
			secrets = append(secrets, ui)
		}
	}
	for _, s := range secrets {
		if u, err := url.PathUnescape(s); err == nil && u != s {
			secrets = append(secrets, u)
		}
	}
	return userinfos, secrets
}

// validScheme reports whether s is a URL scheme (RFC 3986: a letter, then letters, digits, +, - or .).
func validScheme(s string) bool {
	for i, c := range s {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return s != ""
}

// checkNoSecret fails when out, what ParseRedis(addr, database) shows (its error or String()), holds
// a secret of addr, or pass. A secret counts when it is long enough not to be there by chance (4
// bytes), and is not shown for the address without its user info, with another one, or with only
// the password replaced (it is then elsewhere in the address, in the user name, or in the message's
// own words).
func checkNoSecret(t *testing.T, addr string, database int, what, out, pass string) {
	t.Helper()
	userinfos, secrets := secretsIn(addr)
	if pass != "" {
		secrets = append(secrets, pass)
	}
	without, masked, userOnly := addr, addr, addr
	for _, ui := range userinfos {
		without = strings.Replace(without, ui+"@", "", 1)
		masked = strings.Replace(masked, ui+"@", "Zq:Zq@", 1)
		if user, _, ok := strings.Cut(ui, ":"); ok {
			// The user name is shown on purpose; a password that is part of it shows with it.
			userOnly = strings.Replace(userOnly, ui+"@", user+":Zq@", 1)
		}
	}
	var refs []string
	for _, a := range []string{without, masked, userOnly} {
		if tg, err := ParseRedis(a, database); err != nil {
			refs = append(refs, err.Error())
		} else {
			refs = append(refs, tg.String())
		}
	}
	ref := strings.Join(refs, "\n")
	for _, s := range secrets {
		if len(s) < 4 || strings.Contains(without, s) || strings.Contains(ref, s) || strings.Contains("xxxxx", s) {
			continue
		}
		if strings.Contains(out, s) {
			t.Fatalf("ParseRedis(%q, %d): %s %q shows the secret %q", addr, database, what, out, s)
		}
	}
}
