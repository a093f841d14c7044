package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/workqueue/work/webui"
)

// UIFlags are the web UI's settings shared by the programs that serve it.
type UIFlags struct {
	Listen   string // address to listen on
	User     string // basic authentication user (with Password)
	Password string
	Token    string // bearer token
	ReadOnly bool
}

// Options checks the flags and turns them into webui.Options. Without authentication on a loopback
// address, only loopback host names are accepted, so that a web page cannot reach the UI through DNS
// rebinding.
func (f *UIFlags) Options() (webui.Options, error) {
	if (f.User == "") != (f.Password == "") {
		return webui.Options{}, errors.New("basic authentication needs both a user and a password")
	}
	opts := webui.Options{
		BasicAuthUser:     f.User,
		BasicAuthPassword: f.Password,
		BearerToken:       f.Token,
		ReadOnly:          f.ReadOnly,
	}
	if !f.authenticated() && isLoopback(f.Listen) {
		opts.AllowedHosts = []string{"localhost", "127.0.0.1", "::1"}
	}
	return opts, nil
}

func (f *UIFlags) authenticated() bool { return f.Password != "" || f.Token != "" }

// isLoopback reports whether a listen address is on a loopback interface only.
func isLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ServeUI serves handler on the flags' listen address until ctx is done, then shuts down gracefully,
// giving requests in progress up to 10 seconds. It writes where it listens to log, and warns there
// when the UI is reachable from other hosts without authentication.
func ServeUI(ctx context.Context, handler http.Handler, f *UIFlags, log io.Writer) error {
	ln, err := net.Listen("tcp", f.Listen)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %v", f.Listen, err)
	}
	if !f.authenticated() && !isLoopback(f.Listen) {
		fmt.Fprintf(log, "warning: the web UI listens on %s without authentication: anyone who can reach it can retry and delete jobs\n", f.Listen)
	}
	fmt.Fprintf(log, "web UI on http://%s/\n", displayAddr(ln.Addr().String()))
	srv := webui.NewHTTPServer(handler)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
		return fmt.Errorf("shutting down: %v", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// displayAddr makes an address one can open: an unspecified host reads as localhost.
func displayAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}
