package webui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/workqueue/work"
)

// maxPage bounds the page numbers accepted (a page past the end is simply empty).
const maxPage = 1 << 30

// badRequest is an error that is the caller's.
type badRequest struct{ msg string }

func (e badRequest) Error() string { return e.msg }

// badRequestf formats a badRequest.
func badRequestf(format string, args ...interface{}) error {
	return badRequest{fmt.Sprintf(format, args...)}
}

// notRunning is a job asked to be cancelled that no worker runs: a cancel request would change
// nothing, so the caller is told instead.
type notRunning struct {
	id    string
	state work.JobState
}

func (e notRunning) Error() string {
	return fmt.Sprintf("job %s is %s, not running: nothing to cancel", e.id, e.state)
}

// route dispatches a request. Paths are relative to wherever the handler is mounted.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == "":
		// Mounted at "/prefix" and asked for "/prefix": go on to "/prefix/ui/".
		redirect(w, r, path.Base(strings.SplitN(r.RequestURI, "?", 2)[0])+"/ui/")
		return
	case p == "/":
		redirect(w, r, "ui/")
		return
	case p == "/ui":
		redirect(w, r, "ui/")
		return
	case strings.HasPrefix(p, "/ui/"):
		s.servePage(w, r, p[len("/ui/"):])
		return
	}
	name, rest, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
	if h, ok := s.getPathEndpoint(name); ok {
		if allowMethod(w, r, http.MethodGet) {
			h(w, r, rest)
		}
		return
	}
	if h, ok := s.getEndpoint(name); ok && rest == "" {
		if allowMethod(w, r, http.MethodGet) {
			h(w, r)
		}
		return
	}
	if h, ok := s.postEndpoint(name); ok {
		if allowMethod(w, r, http.MethodPost) {
			h(w, r, rest)
		}
		return
	}
	writeError(w, http.StatusNotFound, "not found")
}

// allowMethod reports whether the request uses method (GET allowing HEAD too), else answers 405.
func allowMethod(w http.ResponseWriter, r *http.Request, method string) bool {
	if r.Method == method || (method == http.MethodGet && r.Method == http.MethodHead) {
		return true
	}
	allow := method
	if method == http.MethodGet {
		allow = "GET, HEAD"
	}
	w.Header().Set("Allow", allow)
	writeError(w, http.StatusMethodNotAllowed, "use "+method)
	return false
}

// redirect answers with a relative Location, which browsers resolve against the URL they asked for,
// so that it works under any mount prefix.
func redirect(w http.ResponseWriter, r *http.Request, location string) {
	w.Header().Set("Location", location)
	code := http.StatusFound
	if r.Method == http.MethodPost {
		code = http.StatusSeeOther
	}
	w.WriteHeader(code)
}

func (s *Server) getEndpoint(name string) (http.HandlerFunc, bool) {
	switch name {
	case "queues":
		return s.apiQueues, true
	case "worker_pools":
		return s.apiWorkerPools, true
	case "busy_workers":
		return s.apiBusyWorkers, true
	case "retry_jobs":
		return s.apiRetryJobs, true
	case "scheduled_jobs":
		return s.apiScheduledJobs, true
	case "dead_jobs":
		return s.apiDeadJobs, true
	case "queue_stats":
		return s.apiQueueStats, true
	case "summary":
		return s.apiSummary, true
	case "stats":
		return s.apiStats, true
	case "job":
		return s.apiJob, true
	case "periodic_jobs":
		return s.apiPeriodicJobs, true
	case "batches":
		return s.apiBatches, true
	case "key_stats":
		return s.apiKeyStats, true
	case "schedules":
		return s.apiSchedules, true
	case "schedule":
		return s.apiSchedule, true
	case "backlogs":
		return s.apiBacklogs, true
	case "debounced":
		return s.apiDebounced, true
	case "groups":
		return s.apiGroups, true
	}
	return nil, false
}

// getPathEndpoint returns the GET endpoints whose parameter is the rest of the path: /batch/<id>,
// /keys/<job name> and /key/<job name>.
func (s *Server) getPathEndpoint(name string) (pathHandler, bool) {
	switch name {
	case "batch":
		return s.apiBatch, true
	case "keys":
		return s.apiKeys, true
	case "key":
		return s.apiKey, true
	}
	return nil, false
}

// pathHandler serves an endpoint whose parameter is in its path (every action, and GET /batch/<id>,
// /keys/<name> and /key/<name>); rest is the path after the endpoint's name.
type pathHandler func(w http.ResponseWriter, r *http.Request, rest string)

func (s *Server) postEndpoint(name string) (pathHandler, bool) {
	switch name {
	case "delete_dead_job":
		return s.apiDeleteDeadJob, true
	case "retry_dead_job":
		return s.apiRetryDeadJob, true
	case "retry_dead_job_type":
		return s.apiRetryDeadJobType, true
	case "delete_all_dead_jobs":
		return s.apiDeleteAllDeadJobs, true
	case "retry_all_dead_jobs":
		return s.apiRetryAllDeadJobs, true
	case "pause_queue":
		return s.apiPauseQueue, true
	case "unpause_queue":
		return s.apiUnpauseQueue, true
	case "cancel_job":
		return s.apiCancelJob, true
	case "pause_key":
		return s.apiKeyAction(name, "pause_key"), true
	case "unpause_key":
		return s.apiKeyAction(name, "resume_key"), true
	case "set_key_limits":
		return s.apiKeyAction(name, "set_key_limits"), true
	case "clear_key_limits":
		return s.apiKeyAction(name, "clear_key_limits"), true
	case "reschedule_job":
		return s.apiRescheduleJob, true
	case "run_scheduled_job":
		return s.apiRunScheduledJob, true
	case "pause_schedule", "resume_schedule", "delete_schedule", "run_schedule", "set_schedule":
		return s.apiScheduleAction(name), true
	}
	return nil, false
}

// render writes v as indented JSON (as gocraft/work does), or the error.
func render(w http.ResponseWriter, v interface{}, err error) {
	if err != nil {
		renderError(w, err)
		return
	}
	b, err := json.MarshalIndent(v, "", "\t")
	if err != nil {
		renderError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Write(b)
}

// renderError maps an error to its status: the caller's mistakes are 4xx, a job, batch or schedule
// that is not there 404, a job to cancel that is not running, a key that is full, a damaged
// schedule and data another program overwrote with another type 409, anything else (Redis failing)
// 500.
func renderError(w http.ResponseWriter, err error) {
	var br badRequest
	var nr notRunning
	var ur unreadable
	switch {
	case errors.As(err, &br):
		writeError(w, http.StatusBadRequest, br.msg)
	case errors.As(err, &nr):
		writeError(w, http.StatusConflict, nr.Error())
	case errors.As(err, &ur):
		writeError(w, http.StatusConflict, ur.msg)
	case errors.Is(err, work.ErrBatchNotFound), errors.Is(err, work.ErrScheduleNotFound):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, work.ErrKeyFull), errors.Is(err, work.ErrDamagedSchedule):
		writeError(w, http.StatusConflict, err.Error())
	case errors.Is(err, work.ErrNotDeleted), errors.Is(err, work.ErrNotRetried), errors.Is(err, work.ErrJobNotFound):
		writeError(w, http.StatusNotFound, err.Error())
	default:
		slog.Error("webui: request failed", "err", err)
		writeError(w, http.StatusInternalServerError, err.Error())
	}
}

// writeError answers {"error": msg}.
func writeError(w http.ResponseWriter, code int, msg string) {
	b, _ := json.Marshal(map[string]string{"error": msg})
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

var statusOK = map[string]string{"status": "ok"}

// parsePage reads the page query parameter: absent means 1, and 0 is page 1 as for the Client.
func parsePage(r *http.Request) (uint, error) {
	v := r.URL.Query().Get("page")
	if v == "" {
		return 1, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n > maxPage {
		return 0, badRequestf("bad page %q: want a number from 1 to %d", v, maxPage)
	}
	return uint(n), nil
}

func (s *Server) apiQueues(w http.ResponseWriter, r *http.Request) {
	qs, err := s.client.Queues()
	render(w, qs, err)
}

func (s *Server) apiWorkerPools(w http.ResponseWriter, r *http.Request) {
	hbs, err := s.client.WorkerPoolHeartbeats()
	render(w, hbs, err)
}

func (s *Server) apiBusyWorkers(w http.ResponseWriter, r *http.Request) {
	busy, err := s.busyWorkers()
	render(w, busy, err)
}

// busyWorkers returns the observations of the workers running a job: nil, which encodes as null as
// in gocraft/work's answer, when none is.
func (s *Server) busyWorkers() ([]*work.WorkerObservation, error) {
	obs, err := s.client.WorkerObservations()
	if err != nil {
		return nil, err
	}
	var busy []*work.WorkerObservation
	for _, ob := range obs {
		if ob.IsBusy {
			busy = append(busy, ob)
		}
	}
	return busy, nil
}

// jobsPage is the answer of the job list endpoints.
type jobsPage struct {
	Count int64       `json:"count"`
	Jobs  interface{} `json:"jobs"`
}

func (s *Server) apiRetryJobs(w http.ResponseWriter, r *http.Request) {
	page, err := parsePage(r)
	if err != nil {
		renderError(w, err)
		return
	}
	jobs, count, err := s.client.RetryJobs(page)
	render(w, jobsPage{Count: count, Jobs: jobs}, err)
}

func (s *Server) apiScheduledJobs(w http.ResponseWriter, r *http.Request) {
	page, err := parsePage(r)
	if err != nil {
		renderError(w, err)
		return
	}
	jobs, count, err := s.client.ScheduledJobs(page)
	render(w, jobsPage{Count: count, Jobs: jobs}, err)
}

func (s *Server) apiDeadJobs(w http.ResponseWriter, r *http.Request) {
	page, err := parsePage(r)
	if err != nil {
		renderError(w, err)
		return
	}
	jobs, count, err := s.client.DeadJobs(page)
	render(w, jobsPage{Count: count, Jobs: jobs}, err)
}

func (s *Server) apiQueueStats(w http.ResponseWriter, r *http.Request) {
	qs, err := s.client.QueueStats()
	render(w, qs, err)
}

func (s *Server) apiSummary(w http.ResponseWriter, r *http.Request) {
	sum, err := s.client.Summary()
	render(w, sum, err)
}

// apiStats answers the per-minute counts of the last N minutes (default 60, at most 8 days), of one
// job name or of the namespace.
func (s *Server) apiStats(w http.ResponseWriter, r *http.Request) {
	minutes := int64(60)
	if v := r.URL.Query().Get("minutes"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 || n > 8*24*60 {
			renderError(w, badRequestf("bad minutes %q: want a number from 1 to %d", v, 8*24*60))
			return
		}
		minutes = n
	}
	until := time.Now()
	since := until.Add(-time.Duration(minutes-1) * time.Minute)
	var pts []work.StatPoint
	var err error
	if name := r.URL.Query().Get("name"); name != "" {
		pts, err = s.client.JobStats(name, since, until)
	} else {
		pts, err = s.client.NamespaceStats(since, until)
	}
	render(w, pts, err)
}

// apiBacklogs answers the backlogs the relays report (work.Backlog), by source: [] when none does.
func (s *Server) apiBacklogs(w http.ResponseWriter, r *http.Request) {
	bs, err := s.client.Backlogs()
	render(w, bs, err)
}

func (s *Server) apiJob(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	if id == "" {
		renderError(w, badRequestf("missing id"))
		return
	}
	v, err := s.findJob(id)
	render(w, v, err)
}

// apiPeriodicJobs answers the periodic jobs the live worker pools declare, sorted by next run.
func (s *Server) apiPeriodicJobs(w http.ResponseWriter, r *http.Request) {
	pjs, err := s.client.PeriodicJobs()
	render(w, pjs, err)
}

// cancelAnswer is the answer of POST /cancel_job/<job id>.
type cancelAnswer struct {
	Status string `json:"status"`
	JobID  string `json:"job_id"`
	// Pools is how many worker pools heard the request; 0 means none could act on it (the job runs
	// in a pool of gocraft/work, which does not listen, or its pool is gone).
	Pools int64 `json:"pools"`
}

// apiCancelJob cancels a running job; the ID is the rest of the path, slashes included.
func (s *Server) apiCancelJob(w http.ResponseWriter, r *http.Request, rest string) {
	if rest == "" {
		renderError(w, badRequestf("want /<job id>"))
		return
	}
	n, err := s.cancelJob(rest)
	render(w, cancelAnswer{Status: "ok", JobID: rest, Pools: n}, err)
}

// cancelJob asks the pools to cancel a job once it is known to be running: ErrJobNotFound when no
// job has the ID, notRunning when it is elsewhere.
func (s *Server) cancelJob(id string) (int64, error) {
	obs, err := s.client.WorkerObservations()
	if err != nil {
		return 0, err
	}
	for _, ob := range obs {
		if ob.IsBusy && ob.JobID == id {
			return s.client.CancelJob(id)
		}
	}
	// Workers publish what they run up to a second late; FindJob sees a job as soon as a pool has
	// fetched it (and reads every job in the worst case, so it comes second).
	loc, err := s.client.FindJob(id)
	if err != nil {
		return 0, err
	}
	if loc.State != work.JobStateInProgress {
		return 0, notRunning{id: id, state: loc.State}
	}
	return s.client.CancelJob(id)
}

// scoreAndID splits "<score>/<job id>"; the ID is the rest of the path, slashes included (periodic
// jobs' IDs hold their cron spec).
func scoreAndID(rest string) (int64, string, error) {
	sc, id, ok := strings.Cut(rest, "/")
	if !ok || id == "" {
		return 0, "", badRequestf("want /<score>/<job id>")
	}
	n, err := strconv.ParseInt(sc, 10, 64)
	if err != nil {
		return 0, "", badRequestf("bad score %q: want epoch seconds", sc)
	}
	return n, id, nil
}

func (s *Server) apiDeleteDeadJob(w http.ResponseWriter, r *http.Request, rest string) {
	diedAt, id, err := scoreAndID(rest)
	if err == nil {
		err = s.client.DeleteDeadJob(diedAt, id)
	}
	render(w, statusOK, err)
}

func (s *Server) apiRetryDeadJob(w http.ResponseWriter, r *http.Request, rest string) {
	diedAt, id, err := scoreAndID(rest)
	if err == nil {
		err = s.client.RetryDeadJob(diedAt, id)
	}
	render(w, statusOK, err)
}

func (s *Server) apiRetryDeadJobType(w http.ResponseWriter, r *http.Request, rest string) {
	if rest == "" {
		renderError(w, badRequestf("want /<job name>"))
		return
	}
	_, err := s.client.RetryDeadJobsByName(rest)
	render(w, statusOK, err)
}

func (s *Server) apiDeleteAllDeadJobs(w http.ResponseWriter, r *http.Request, rest string) {
	if rest != "" {
		writeError(w, http.StatusNotFound, "not found")
		return
	}
	render(w, statusOK, s.client.DeleteAllDeadJobs())
}

func (s *Server) apiRetryAllDeadJobs(w http.ResponseWriter, r *http.Request, rest string) {
	if rest != "" {
		writeError(w, http.StatusNotFound, "not found")
		return
	}
	render(w, statusOK, s.client.RetryAllDeadJobs())
}

func (s *Server) apiPauseQueue(w http.ResponseWriter, r *http.Request, rest string) {
	if rest == "" {
		renderError(w, badRequestf("want /<job name>"))
		return
	}
	render(w, statusOK, s.client.PauseQueue(rest))
}

func (s *Server) apiUnpauseQueue(w http.ResponseWriter, r *http.Request, rest string) {
	if rest == "" {
		renderError(w, badRequestf("want /<job name>"))
		return
	}
	render(w, statusOK, s.client.UnpauseQueue(rest))
}

// compactJSON encodes v without HTML escaping (the templates escape for HTML themselves), so that the
// UI shows "<" as "<".
func compactJSON(v interface{}) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("%v", v)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// indentJSON is compactJSON, indented.
func indentJSON(v interface{}) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("%v", v)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}
