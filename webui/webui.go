// Package webui serves a web UI and a JSON API to watch and manage the jobs of a namespace: queues,
// worker pools and busy workers, throughput, the scheduled, retry and dead sets, batches, the keys of
// keyed jobs, schedules, the pending bursts of debounced enqueues, the groups of grouped jobs, and the
// backlogs that relays report.
//
// The JSON API is gocraft/work's, path for path: GET /queues, /worker_pools, /busy_workers,
// /retry_jobs?page=N, /scheduled_jobs?page=N and /dead_jobs?page=N (the last three answer
// {"count":N,"jobs":[...]}), and POST /delete_dead_job/<died_at>/<job_id>,
// /retry_dead_job/<died_at>/<job_id>, /retry_dead_job_type/<job_name>, /delete_all_dead_jobs and
// /retry_all_dead_jobs (answering {"status":"ok"}). It adds GET /queue_stats, /summary,
// /stats?minutes=N[&name=NAME], /job?id=ID (with the job's record, when it has one),
// /periodic_jobs, /batches?page=N ({"count":N,"batches":[...]}, newest first), /batch/<id>,
// /key_stats, /keys/<name>?page=N ({"count":N,"keys":[...]}, busiest first),
// /key/<name>?key=KEY, /schedules?cursor=C&count=N&prefix=P&stored_only=1 (a work.SchedulePage),
// /schedule?id=ID (with its next_ticks), /backlogs (the work.Backlog of each source), /debounced
// (the work.PendingBurst of each burst) and /groups?name=NAME (the work.GroupInfo of each group with
// jobs waiting, of every name without name), and POST /pause_queue/<name>, /unpause_queue/<name>,
// /cancel_job/<job_id> (409 when the job is not running), /pause_key/<name>?key=KEY,
// /unpause_key/<name>?key=KEY, /set_key_limits/<name>?key=KEY&concurrency=N&rate=N/DURATION&weight=N&max_waiting=N,
// /clear_key_limits/<name>?key=KEY, /pause_schedule?id=ID, /resume_schedule?id=ID,
// /delete_schedule?id=ID, /run_schedule?id=ID,
// /set_schedule?id=ID&spec=S&location=Z&job=NAME&args=JSON&key=K&jitter=D&missed=M,
// /reschedule_job/<job_id>?at=T (a job waiting in the scheduled or retry set, to epoch seconds or an
// RFC 3339 time) and /run_scheduled_job/<run_at>/<job_id>. Bad parameters
// get a 4xx answer, an unknown job, batch or schedule a 404, and a batch, keyed state or schedules
// whose key another program overwrote with another Redis type, a damaged schedule or a full key a
// 409, each with {"error":"..."}.
//
// The pages live under ui/ and refresh themselves. Every link is relative, so the handler can be
// mounted under any path prefix:
//
//	mux.Handle("/admin/jobs/", http.StripPrefix("/admin/jobs", webui.NewServer("app", pool, "").Handler()))
//
// Security: Options add basic or bearer-token authentication and a read-only mode. Every request that
// changes something is a POST; one coming from a browser must come from the UI's own origin (checked
// with the Sec-Fetch-Site and Origin headers), and the UI's forms also carry a per-server token.
// Requests without either header (curl, scripts) are not browser requests and pass. Every response
// carries a Content-Security-Policy that allows no inline script, and headers that forbid framing and
// content sniffing. All job data is HTML-escaped.
package webui

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work"
)

// Options configure a Server beyond gocraft/work's NewServer. The zero value is gocraft/work's
// behaviour: no authentication, every action allowed.
type Options struct {
	// BasicAuthUser and BasicAuthPassword, when both are set, require HTTP basic authentication.
	BasicAuthUser     string
	BasicAuthPassword string
	// BearerToken, when set, requires "Authorization: Bearer <token>"; browsers may instead log in
	// with basic authentication, any user name and the token as password. When basic authentication
	// is configured too, either is accepted.
	BearerToken string
	// ReadOnly refuses every action (403) and hides the UI's buttons.
	ReadOnly bool
	// AllowedHosts, when not empty, lists the host names (without port) that requests may be
	// addressed to; others get 403. A UI listening on a loopback address without authentication
	// should list its loopback names, so that a web page cannot reach it by DNS rebinding.
	AllowedHosts []string
	// TrustedOrigins lists further origins ("https://ops.example.com") whose pages may send actions,
	// for a UI behind a proxy that changes the Host header. The UI's own origin is always trusted.
	TrustedOrigins []string
	// RefreshInterval is how often the pages refresh themselves: 0 means 5 seconds, a negative value
	// never.
	RefreshInterval time.Duration
}

// Server serves the web UI and JSON API of one namespace.
type Server struct {
	namespace string
	pool      *redis.Pool
	client    *work.Client
	hostPort  string
	opts      Options
	csrf      string // the per-server token the UI's forms carry
	pages     *pageSet
	handler   http.Handler

	mu   sync.Mutex
	srv  *http.Server
	done chan struct{}
}

// NewServer creates a server for the given namespace and Redis pool that Start makes listen on
// hostPort (":5040" listens on every interface, "127.0.0.1:5040" on the loopback one only; "" means
// "127.0.0.1:5040"). It has no authentication: see NewServerWithOptions.
func NewServer(namespace string, pool *redis.Pool, hostPort string) *Server {
	return NewServerWithOptions(namespace, pool, hostPort, Options{})
}

// NewServerWithOptions creates a server as NewServer does, configured by opts. With a nil pool, as
// gocraft/work allowed, it answers every request for data with an error (500).
func NewServerWithOptions(namespace string, pool *redis.Pool, hostPort string, opts Options) *Server {
	var tok [32]byte
	if _, err := rand.Read(tok[:]); err != nil {
		panic("webui: no randomness for the form token: " + err.Error())
	}
	if opts.RefreshInterval == 0 {
		opts.RefreshInterval = 5 * time.Second
	}
	s := &Server{
		namespace: namespace,
		pool:      pool,
		client:    work.NewClient(namespace, pool),
		hostPort:  hostPort,
		opts:      opts,
		csrf:      hex.EncodeToString(tok[:]),
		pages:     mustParsePages(),
	}
	s.handler = s.secure(http.HandlerFunc(s.route))
	return s
}

// Handler returns the HTTP handler of the UI and the JSON API, to mount in a server of your own,
// under any path prefix (strip the prefix with http.StripPrefix).
func (s *Server) Handler() http.Handler { return s.handler }

// Start makes the server listen on the hostPort given to NewServer and serve in the background. It
// does nothing when the server is already started; a failure to listen is logged.
func (s *Server) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return
	}
	addr := s.hostPort
	if addr == "" {
		addr = "127.0.0.1:5040"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		slog.Error("webui: cannot listen", "addr", addr, "err", err)
		return
	}
	s.srv = NewHTTPServer(s.handler)
	s.done = make(chan struct{})
	go func(srv *http.Server, done chan struct{}) {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Error("webui: serving stopped", "err", err)
		}
	}(s.srv, s.done)
}

// Stop stops the server and returns when it has stopped: requests in progress get up to 5 seconds to
// finish. It does nothing when the server is not started.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		s.srv.Close()
	}
	<-s.done
	s.srv, s.done = nil, nil
}

// NewHTTPServer returns an http.Server for handler with timeouts suited to the UI: slow clients cannot
// hold connections open forever.
func NewHTTPServer(handler http.Handler) *http.Server {
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
}
