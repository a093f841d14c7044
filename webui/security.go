package webui

import (
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// contentSecurityPolicy allows the UI's own script, style sheet and requests, and nothing inline.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// secure wraps the router with the security headers, the host check, authentication, and the
// read-only and cross-site checks of requests that change something.
func (s *Server) secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")

		if !s.hostAllowed(r) {
			writeError(w, http.StatusForbidden, "host not allowed")
			return
		}
		if !s.authorized(r) {
			if s.opts.BearerToken != "" {
				h.Add("WWW-Authenticate", `Bearer realm="work"`)
			}
			h.Add("WWW-Authenticate", `Basic realm="work", charset="UTF-8"`)
			writeError(w, http.StatusUnauthorized, "unauthorized")
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if !s.sameOrigin(r) {
				writeError(w, http.StatusForbidden, "cross-site request refused")
				return
			}
			if s.opts.ReadOnly && r.Method == http.MethodPost {
				writeError(w, http.StatusForbidden, "the web UI is read-only")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// hostAllowed applies Options.AllowedHosts.
func (s *Server) hostAllowed(r *http.Request) bool {
	if len(s.opts.AllowedHosts) == 0 {
		return true
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	for _, a := range s.opts.AllowedHosts {
		if strings.EqualFold(host, strings.TrimSuffix(strings.TrimPrefix(a, "["), "]")) {
			return true
		}
	}
	return false
}

// equalSecret compares secrets in constant time (over their hashes, so their lengths do not leak).
func equalSecret(got, want string) bool {
	g, w := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

// authorized applies the configured authentication.
func (s *Server) authorized(r *http.Request) bool {
	basic := s.opts.BasicAuthUser != "" && s.opts.BasicAuthPassword != ""
	token := s.opts.BearerToken != ""
	if !basic && !token {
		return true
	}
	auth := r.Header.Get("Authorization")
	if token && len(auth) > 7 && strings.EqualFold(auth[:7], "bearer ") {
		return equalSecret(strings.TrimSpace(auth[7:]), s.opts.BearerToken)
	}
	user, pass, ok := r.BasicAuth()
	if !ok {
		return false
	}
	if basic && equalSecret(user, s.opts.BasicAuthUser) && equalSecret(pass, s.opts.BasicAuthPassword) {
		return true
	}
	return token && equalSecret(pass, s.opts.BearerToken)
}

// sameOrigin reports whether a request that changes something may be served: a browser says where
// the request comes from with Sec-Fetch-Site (current browsers) or Origin (older ones), and it must
// be this UI's origin (or a trusted one). A request with neither header is not a browser's, so no
// cross-site forgery.
func (s *Server) sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin != "" && s.trustedOrigin(origin) {
		return true
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "same-origin", "none":
		return true
	case "":
	default:
		return false
	}
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false // includes "null", sent by sandboxed and privacy-sensitive contexts
	}
	return strings.EqualFold(u.Host, r.Host)
}

// trustedOrigin reports whether origin is one of Options.TrustedOrigins.
func (s *Server) trustedOrigin(origin string) bool {
	for _, o := range s.opts.TrustedOrigins {
		if strings.EqualFold(strings.TrimSuffix(o, "/"), origin) {
			return true
		}
	}
	return false
}

// validToken checks the token a form of the UI carries.
func (s *Server) validToken(r *http.Request) bool {
	tok := r.PostFormValue("csrf")
	if tok == "" {
		tok = r.Header.Get("X-CSRF-Token")
	}
	return tok != "" && equalSecret(tok, s.csrf)
}
