package webui

import (
	"bytes"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/workqueue/work"
)

//go:embed assets
var assets embed.FS

// pageNames are the pages under ui/ ("" is the overview).
var pageNames = []string{"overview", "queues", "workers", "jobs", "job", "periodic", "batches", "batch", "keyed", "keys", "schedules", "debounced", "groups", "notfound"}

// pageSet holds one template per page, each the layout with the page's content.
type pageSet struct{ t map[string]*template.Template }

func mustParsePages() *pageSet {
	base := template.Must(template.New("layout.html").Funcs(templateFuncs).ParseFS(assets, "assets/layout.html"))
	ps := &pageSet{t: map[string]*template.Template{}}
	for _, name := range pageNames {
		t := template.Must(base.Clone())
		ps.t[name] = template.Must(t.ParseFS(assets, "assets/"+name+".html"))
	}
	return ps
}

var templateFuncs = template.FuncMap{
	"ago":      ago,
	"when":     when,
	"isoTime":  isoTime,
	"duration": duration,
	"short":    short,
	"args":     func(j *work.Job) string { return compactJSON(j.Args) },
	"pretty":   func(v interface{}) string { return indentJSON(v) },
	"raw":      rawText,
	"isBase64": func(b []byte) bool { return !utf8.Valid(b) },
	"add":      func(a, b int64) int64 { return a + b },
	"plural": func(n int64, one, many string) string {
		if n == 1 {
			return one
		}
		return many
	},
	"act":        act,
	"queueTable": newQueueTable,
	"keysURL":    keysURL,
	"inZone":     inZone,
	"where":      where,
	"period":     periodText,
	"scheduleActs": func(d *pageData, in *work.ScheduleInfo) scheduleActs {
		return scheduleActs{Page: d, Row: in}
	},
	"int64":    toInt64,
	"now":      func() string { return time.Now().UTC().Format("15:04:05 UTC") },
	"progress": newProgress,
	"fraction": func(f float64) string { return pct(max(0, min(f, 1)) * 100) },
}

// toInt64 converts the integers templates meet.
func toInt64(v interface{}) int64 {
	switch n := v.(type) {
	case int:
		return int64(n)
	case int64:
		return n
	case uint:
		return int64(n)
	}
	return 0
}

// ago renders an epoch time relative to now: "5s ago", "in 3m".
func ago(epoch int64) string {
	if epoch == 0 {
		return "never"
	}
	d := time.Now().Unix() - epoch
	if d < 0 {
		return "in " + duration(-d)
	}
	return duration(d) + " ago"
}

// when renders an epoch time in UTC.
func when(epoch int64) string {
	if epoch == 0 {
		return "-"
	}
	return time.Unix(epoch, 0).UTC().Format("2006-01-02 15:04:05 UTC")
}

func isoTime(epoch int64) string { return time.Unix(epoch, 0).UTC().Format(time.RFC3339) }

// where says in words where a job is, for the job page of a job that also has a record, whose
// state the page shows.
func where(s work.JobState) string {
	switch s {
	case work.JobStateQueued:
		return "in its queue"
	case work.JobStateInProgress:
		return "fetched by the worker pool"
	case work.JobStateScheduled:
		return "in the scheduled set"
	case work.JobStateRetry:
		return "in the retry set"
	case work.JobStateDead:
		return "in the dead set"
	}
	return string(s)
}

// inZone renders an epoch time in a schedule's zone ("" when that is UTC).
func inZone(epoch int64, s *work.ScheduleInfo) string {
	loc := s.Zone()
	if epoch == 0 || loc == time.UTC {
		return ""
	}
	return time.Unix(epoch, 0).In(loc).Format("2006-01-02 15:04:05 MST")
}

// duration renders seconds briefly: "45s", "3m 20s", "2h 5m", "3d 4h".
func duration(sec int64) string {
	switch {
	case sec < 60:
		return fmt.Sprintf("%ds", sec)
	case sec < 3600:
		return fmt.Sprintf("%dm %ds", sec/60, sec%60)
	case sec < 86400:
		return fmt.Sprintf("%dh %dm", sec/3600, sec%3600/60)
	}
	return fmt.Sprintf("%dd %dh", sec/86400, sec%86400/3600)
}

// short cuts s to at most n runes, marking the cut.
func short(n int, s string) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// rawText shows payload bytes as dead records keep them: as text when they are valid UTF-8, else in
// base64, which the templates label (see isBase64).
func rawText(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// pageData is what every page's template gets.
type pageData struct {
	Title     string
	Nav       string // the active entry
	Root      string // the way from this page's directory back to ui/: "" or "../" for batches/<id>
	Namespace string
	CSRF      string
	ReadOnly  bool
	Refresh   int // seconds; 0: no refresh
	Flash     string
	Failure   string
	Summary   *work.Summary
	Self      string // this page's URL relative to ui/, the return address of its forms
	Content   interface{}
}

// servePage serves a page, static asset or form action under ui/.
func (s *Server) servePage(w http.ResponseWriter, r *http.Request, name string) {
	switch name {
	case "static/style.css":
		s.serveAsset(w, r, "assets/style.css", "text/css; charset=utf-8")
		return
	case "static/app.js":
		s.serveAsset(w, r, "assets/app.js", "text/javascript; charset=utf-8")
		return
	case "action":
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			writeError(w, http.StatusMethodNotAllowed, "use POST")
			return
		}
		s.action(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "use GET")
		return
	}
	var (
		tmpl, title string
		nav         = name
		content     interface{}
		err         error
		status      = http.StatusOK
	)
	switch name {
	case "":
		tmpl, title = "overview", "Overview"
		content, err = s.overview()
	case "queues":
		tmpl, title = "queues", "Queues"
		content, err = s.queues()
	case "keys":
		nav = "queues"
		if r.URL.Query().Get("name") == "" {
			tmpl, title = "keyed", "Keyed jobs"
			content, err = s.keyed()
			break
		}
		tmpl, title = "keys", "Keys of "+r.URL.Query().Get("name")
		content, err = s.keyList(r)
	case "workers":
		tmpl, title = "workers", "Workers"
		content, err = s.workers()
	case "periodic":
		tmpl, title = "periodic", "Periodic jobs"
		content, err = s.periodic()
	case "schedules":
		tmpl, title = "schedules", "Schedules"
		if id := r.URL.Query().Get("id"); id != "" {
			title = "Schedule " + id
		}
		content, err = s.scheduleList(r)
		if errors.Is(err, work.ErrScheduleNotFound) {
			tmpl, title, status, err = "notfound", "Schedule not found", http.StatusNotFound, nil
			content = fmt.Sprintf("No schedule has the ID %s, and no live worker pool declares a periodic job of that ID: it was never set, or it was deleted.", r.URL.Query().Get("id"))
		}
	case "debounced":
		tmpl, title = "debounced", "Debounced"
		content, err = s.debounced()
	case "groups":
		tmpl, title = "groups", "Groups"
		content, err = s.groups()
	case "scheduled", "retry", "dead":
		tmpl, title = "jobs", map[string]string{"scheduled": "Scheduled jobs", "retry": "Retry jobs", "dead": "Dead jobs"}[name]
		content, err = s.jobList(r, work.JobState(name))
	case "job":
		tmpl, title = "job", "Job"
		content, err = s.jobDetail(r)
		if errors.Is(err, work.ErrJobNotFound) {
			tmpl, title, status, err = "notfound", "Job not found", http.StatusNotFound, nil
			content = r.URL.Query().Get("id")
		}
	case "batches":
		tmpl, title = "batches", "Batches"
		content, err = s.batchList(r)
	case "batches/":
		redirect(w, r, "../batches")
		return
	default:
		if id, ok := strings.CutPrefix(name, "batches/"); ok {
			tmpl, title, nav = "batch", "Batch "+id, "batches"
			content, err = s.batchDetail(id)
			if errors.Is(err, work.ErrBatchNotFound) {
				tmpl, title, status, err = "notfound", "Batch not found", http.StatusNotFound, nil
				content = fmt.Sprintf("No batch has the ID %s: it was never created, or its status expired.", id)
			}
			break
		}
		tmpl, title, status, content = "notfound", "Not found", http.StatusNotFound, nil
	}
	var br badRequest
	var ur unreadable
	switch {
	case errors.As(err, &br):
		tmpl, title, status, content, err = "notfound", "Bad request", http.StatusBadRequest, br.msg, nil
	case errors.As(err, &ur):
		tmpl, title, status, content, err = "notfound", "Cannot be read", http.StatusConflict, ur.msg, nil
	}
	if err != nil {
		slog.Error("webui: page failed", "page", name, "err", err)
		http.Error(w, "Redis error: "+err.Error(), http.StatusInternalServerError)
		return
	}
	sum, err := s.client.Summary()
	if err != nil {
		slog.Error("webui: page failed", "page", name, "err", err)
		http.Error(w, "Redis error: "+err.Error(), http.StatusInternalServerError)
		return
	}
	d := &pageData{
		Title:     title,
		Nav:       nav,
		Root:      strings.Repeat("../", strings.Count(name, "/")),
		Namespace: s.namespace,
		CSRF:      s.csrf,
		ReadOnly:  s.opts.ReadOnly,
		Summary:   sum,
		Self:      selfURL(name, r.URL.Query()),
		Content:   content,
	}
	if s.opts.RefreshInterval > 0 {
		d.Refresh = int(math.Ceil(s.opts.RefreshInterval.Seconds()))
	}
	d.Flash, d.Failure = flashOf(r.URL.Query())
	var buf bytes.Buffer
	if err := s.pages.t[tmpl].Execute(&buf, d); err != nil {
		slog.Error("webui: template failed", "page", name, "err", err)
		http.Error(w, "template error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

func (s *Server) serveAsset(w http.ResponseWriter, r *http.Request, file, contentType string) {
	b, err := assets.ReadFile(file)
	if err != nil {
		writeError(w, http.StatusNotFound, "not found")
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(b)
}

// selfURL is a page's address relative to ui/, without the flash parameters.
func selfURL(name string, q url.Values) string {
	keep := url.Values{}
	for _, k := range []string{"name", "page", "q", "id", "cursor"} {
		if v := q.Get(k); v != "" {
			keep.Set(k, v)
		}
	}
	u := name
	if u == "" {
		u = "./"
	}
	if len(keep) > 0 {
		u += "?" + keep.Encode()
	}
	return u
}

// flashMessages are the outcomes an action reports to the page it returns to, by code.
var flashMessages = map[string]string{
	"retried":      "The job is back in its queue.",
	"run":          "The job is in its queue.",
	"deleted":      "The job is deleted.",
	"retried_all":  "Every dead job that could be retried is back in its queue.",
	"deleted_all":  "Every dead job is deleted.",
	"retried_name": "Retried %d dead %s.",
	"deleted_name": "Deleted %d dead %s.",
	"paused":       "The queue is paused.",
	"resumed":      "The queue is resumed.",
	"cancel_sent":  "Cancel requested: %d worker %s heard it; the pool running the job cancels its context.",
	"cancel_none":  "No worker pool heard the cancel request: the job runs in a pool that does not listen for it (gocraft/work), or its pool is gone.",

	"key_paused":         "The key is paused: its jobs wait until it is resumed.",
	"key_resumed":        "The key is resumed.",
	"key_limits_set":     "The key's overrides are set.",
	"key_limits_cleared": "The key's overrides are cleared: the job name's settings apply to it.",

	"schedule_paused":  "The schedule is paused: none of its ticks is enqueued until it is resumed.",
	"schedule_resumed": "The schedule is resumed from its next tick; the ticks that fell while it was paused are not enqueued.",
	"schedule_deleted": "The schedule is deleted; its jobs already enqueued stay.",
	"schedule_run":     "The schedule's job is enqueued.",

	"rescheduled": "The job is moved to its new run time.",
}

// flashNouns are the words counted by a message's %d, when they are not jobs.
var flashNouns = map[string][2]string{"cancel_sent": {"pool", "pools"}}

var failureMessages = map[string]string{
	"gone":             "Nothing done: the job is no longer there.",
	"not_running":      "Nothing done: the job is not running, and only a running job can be cancelled.",
	"bad":              "Nothing done: the request was incomplete.",
	"bad_limits":       "Nothing done: a concurrency or a max waiting is a number of jobs, or none for no limit; a rate is jobs per period, as 10/1m; a weight is from 1 to 1000. An empty field keeps the job name's setting.",
	"unreadable":       "Nothing done: this job name's keyed state in Redis holds another type (another program wrote it).",
	"schedule_gone":    "Nothing done: no schedule has this ID any more.",
	"schedule_damaged": "Nothing done: the schedule's record in Redis cannot be read (another program wrote it). It can be deleted, or set again.",
	"key_full":         "Nothing done: the job's key has as many jobs waiting as it may (KeyMaxWaiting).",

	"schedules_unreadable": "Nothing done: a key of the schedules in Redis holds another type (another program wrote it).",
	"error":                "The action failed; the server log says why.",
}

// flashOf reads an action's outcome from a page's query.
func flashOf(q url.Values) (flash, failure string) {
	if msg, ok := flashMessages[q.Get("done")]; ok {
		if strings.Contains(msg, "%d") {
			n, _ := strconv.ParseInt(q.Get("n"), 10, 64)
			noun, ok := flashNouns[q.Get("done")]
			if !ok {
				noun = [2]string{"job", "jobs"}
			}
			if n == 1 {
				msg = fmt.Sprintf(msg, n, noun[0])
			} else {
				msg = fmt.Sprintf(msg, n, noun[1])
			}
		}
		flash = msg
	}
	failure = failureMessages[q.Get("fail")]
	return flash, failure
}

// overviewData is the overview page's content.
type overviewData struct {
	Processed, Failed int64 // in the last hour
	Chart             *chart
	Queues            []*work.QueueStat
	Keyed             []*work.KeyStat
	Pools             int
	Workers, Busy     int
	Backlogs          []*backlogRow
}

// backlogRow is one source of the overview's Backlogs section, its durations in seconds for the
// templates.
type backlogRow struct {
	*work.Backlog
	AgeSec    int64 // how long the oldest job had waited when reported
	SilentSec int64 // since the last report
	Stale     bool  // no report for longer than work.BacklogStaleAfter
}

// newBacklogRows turns the Client's backlogs into the overview's rows.
func newBacklogRows(bs []*work.Backlog, now time.Time) []*backlogRow {
	rows := make([]*backlogRow, len(bs))
	for i, b := range bs {
		rows[i] = &backlogRow{Backlog: b, AgeSec: int64(b.Age().Seconds()), SilentSec: int64(b.Silent(now).Seconds()), Stale: b.Stale(now)}
	}
	return rows
}

func (s *Server) overview() (*overviewData, error) {
	now := time.Now()
	pts, err := s.client.NamespaceStats(now.Add(-59*time.Minute), now)
	if err != nil {
		return nil, err
	}
	d := &overviewData{Chart: newChart(pts)}
	for _, p := range pts {
		d.Processed += p.Processed
		d.Failed += p.Failed
	}
	if d.Queues, err = s.client.QueueStats(); err != nil {
		return nil, err
	}
	if d.Keyed, err = s.keyStats(); err != nil {
		return nil, err
	}
	hbs, err := s.client.WorkerPoolHeartbeats()
	if err != nil {
		return nil, err
	}
	d.Pools = len(hbs)
	obs, err := s.client.WorkerObservations()
	if err != nil {
		return nil, err
	}
	d.Workers = len(obs)
	for _, ob := range obs {
		if ob.IsBusy {
			d.Busy++
		}
	}
	bs, err := s.client.Backlogs()
	if err != nil {
		return nil, err
	}
	d.Backlogs = newBacklogRows(bs, time.Now())
	return d, nil
}

// periodicData is the periodic page's content (a struct, so that an empty list still renders).
type periodicData struct {
	Jobs []*work.PeriodicJob
}

func (s *Server) periodic() (*periodicData, error) {
	pjs, err := s.client.PeriodicJobs()
	if err != nil {
		return nil, err
	}
	return &periodicData{Jobs: pjs}, nil
}

// workersData is the workers page's content.
type workersData struct {
	Pools []*poolRow
	Busy  []*work.WorkerObservation
	Idle  int
}

type poolRow struct {
	*work.WorkerPoolHeartbeat
	Stale bool // no heartbeat for longer than the pool declared: its peers take it for dead
}

func (s *Server) workers() (*workersData, error) {
	hbs, err := s.client.WorkerPoolHeartbeats()
	if err != nil {
		return nil, err
	}
	obs, err := s.client.WorkerObservations()
	if err != nil {
		return nil, err
	}
	d := &workersData{Busy: []*work.WorkerObservation{}}
	now := time.Now()
	for _, hb := range hbs {
		d.Pools = append(d.Pools, &poolRow{WorkerPoolHeartbeat: hb, Stale: hb.Stale(now)})
	}
	for _, ob := range obs {
		if ob.IsBusy {
			d.Busy = append(d.Busy, ob)
		} else {
			d.Idle++
		}
	}
	sort.SliceStable(d.Busy, func(i, j int) bool { return d.Busy[i].StartedAt < d.Busy[j].StartedAt })
	return d, nil
}

// jobRow is one job of a list page.
type jobRow struct {
	Score int64
	Job   *work.Job
}

// jobsData is a list page's content.
type jobsData struct {
	State      string // scheduled, retry or dead
	ScoreLabel string
	Query      string
	Rows       []jobRow
	Total      int64
	Page       int64
	Pages      int64
	PrevURL    string
	NextURL    string
	NameMatch  bool // the query is the exact name of a job in the list: offer actions on the name
}

func (s *Server) jobList(r *http.Request, state work.JobState) (*jobsData, error) {
	page, err := parsePage(r)
	if err != nil {
		return nil, err
	}
	if page == 0 {
		page = 1
	}
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	d := &jobsData{State: string(state), Query: q, Page: int64(page), Rows: []jobRow{}}
	d.ScoreLabel = map[work.JobState]string{work.JobStateScheduled: "Runs", work.JobStateRetry: "Retries", work.JobStateDead: "Died"}[state]
	if q != "" {
		locs, total, err := s.client.SearchJobs(state, q, page)
		if err != nil {
			return nil, err
		}
		d.Total = total
		for _, l := range locs {
			d.Rows = append(d.Rows, jobRow{Score: l.Score, Job: l.Job})
			d.NameMatch = d.NameMatch || l.Job.Name == q
		}
	} else {
		switch state {
		case work.JobStateScheduled:
			jobs, total, err := s.client.ScheduledJobs(page)
			if err != nil {
				return nil, err
			}
			d.Total = total
			for _, j := range jobs {
				d.Rows = append(d.Rows, jobRow{Score: j.RunAt, Job: j.Job})
			}
		case work.JobStateRetry:
			jobs, total, err := s.client.RetryJobs(page)
			if err != nil {
				return nil, err
			}
			d.Total = total
			for _, j := range jobs {
				d.Rows = append(d.Rows, jobRow{Score: j.RetryAt, Job: j.Job})
			}
		case work.JobStateDead:
			jobs, total, err := s.client.DeadJobs(page)
			if err != nil {
				return nil, err
			}
			d.Total = total
			for _, j := range jobs {
				d.Rows = append(d.Rows, jobRow{Score: j.DiedAt, Job: j.Job})
			}
		}
	}
	d.Pages = pageCount(d.Total)
	link := func(p int64) string {
		v := url.Values{}
		if q != "" {
			v.Set("q", q)
		}
		v.Set("page", strconv.FormatInt(p, 10))
		return string(state) + "?" + v.Encode()
	}
	d.PrevURL, d.NextURL = pageLinks(d.Page, d.Pages, link)
	return d, nil
}

// pageCount is the number of pages of a list of total items, at the Client's 20 a page.
func pageCount(total int64) int64 { return (total + 19) / 20 }

// pageLinks returns the links to the pages before and after page of a list of pages pages ("" where
// there is none); a page past the end links back to the last one.
func pageLinks(page, pages int64, link func(int64) string) (prev, next string) {
	if page > 1 {
		prev = link(min(page-1, max(pages, 1)))
	}
	if page < pages {
		next = link(page + 1)
	}
	return prev, next
}

// jobData is the job page's content.
type jobData struct {
	*jobView
	ScoreLabel string
	Back       string // the list the job page's actions return to
}

func (s *Server) jobDetail(r *http.Request) (*jobData, error) {
	id := r.URL.Query().Get("id")
	if id == "" {
		return nil, badRequestf("missing job id")
	}
	v, err := s.findJob(id)
	if err != nil {
		return nil, err
	}
	d := &jobData{jobView: v}
	if v.Loc == nil {
		return d, nil
	}
	switch v.Loc.State {
	case work.JobStateScheduled:
		d.ScoreLabel, d.Back = "Runs at", "scheduled"
	case work.JobStateRetry:
		d.ScoreLabel, d.Back = "Retries at", "retry"
	case work.JobStateDead:
		d.ScoreLabel, d.Back = "Died at", "dead"
	default:
		d.Back = "queues"
	}
	return d, nil
}

// action serves the UI's forms: it checks the form token, acts, and sends the browser back to the
// page the form was on with the outcome.
func (s *Server) action(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		writeError(w, http.StatusBadRequest, "bad form")
		return
	}
	if !s.validToken(r) {
		writeError(w, http.StatusForbidden, "missing or bad form token: reload the page")
		return
	}
	back := safeBack(r.PostFormValue("back"))
	op := r.PostFormValue("op")
	name, id := r.PostFormValue("name"), r.PostFormValue("id")
	score, scoreErr := strconv.ParseInt(r.PostFormValue("score"), 10, 64)
	needScore := func() error {
		if scoreErr != nil || id == "" {
			return badRequestf("missing score or id")
		}
		return nil
	}
	needName := func() error {
		if name == "" {
			return badRequestf("missing name")
		}
		return nil
	}
	var (
		done string
		n    int64 = -1
		err  error
	)
	switch op {
	case "retry_dead":
		if err = needScore(); err == nil {
			done, err = "retried", s.client.RetryDeadJob(score, id)
		}
	case "delete_dead":
		if err = needScore(); err == nil {
			done, err = "deleted", s.client.DeleteDeadJob(score, id)
		}
	case "delete_retry":
		if err = needScore(); err == nil {
			done, err = "deleted", s.client.DeleteRetryJob(score, id)
		}
	case "run_retry":
		if err = needScore(); err == nil {
			done, err = "run", s.client.RunRetryJobNow(score, id)
		}
	case "delete_scheduled":
		if err = needScore(); err == nil {
			done, err = "deleted", s.client.DeleteScheduledJob(score, id)
		}
	case "run_scheduled":
		if err = needScore(); err == nil {
			done, err = "run", s.client.RunScheduledJobNow(score, id)
		}
	case "reschedule":
		var at time.Time
		if id == "" {
			err = badRequestf("missing id")
		} else if at, err = parseRunAt(r.PostFormValue("at")); err == nil {
			done, err = "rescheduled", s.client.RescheduleJob(id, at)
		}
	case "delete_queued":
		if err = needName(); err == nil && id == "" {
			err = badRequestf("missing id") // else the client's own error reads as a failure of Redis
		}
		if err == nil {
			done, err = "deleted", s.client.DeleteQueuedJob(name, id)
		}
	case "retry_all_dead":
		done, err = "retried_all", s.client.RetryAllDeadJobs()
	case "delete_all_dead":
		done, err = "deleted_all", s.client.DeleteAllDeadJobs()
	case "retry_dead_name":
		if err = needName(); err == nil {
			done = "retried_name"
			n, err = s.client.RetryDeadJobsByName(name)
		}
	case "delete_dead_name":
		if err = needName(); err == nil {
			done = "deleted_name"
			n, err = s.client.DeleteDeadJobsByName(name)
		}
	case "pause":
		if err = needName(); err == nil {
			done, err = "paused", s.client.PauseQueue(name)
		}
	case "resume":
		if err = needName(); err == nil {
			done, err = "resumed", s.client.UnpauseQueue(name)
		}
	case "pause_key", "resume_key", "set_key_limits", "clear_key_limits":
		done, err = s.keyAction(op, name, r.PostFormValue("key"), r.PostFormValue)
	case "pause_schedule", "resume_schedule", "delete_schedule", "run_schedule":
		done, err = s.scheduleAction(op, id)
	case "cancel":
		if id == "" {
			err = badRequestf("missing id")
		} else if n, err = s.cancelJob(id); err == nil && n == 0 {
			done, n = "cancel_none", -1
		} else {
			done = "cancel_sent"
		}
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("unknown action %q", op))
		return
	}
	v := url.Values{}
	var bl badLimits
	var br badRequest
	var nr notRunning
	var ur unreadable
	switch {
	case errors.Is(err, work.ErrScheduleNotFound):
		v.Set("fail", "schedule_gone")
	case errors.Is(err, work.ErrDamagedSchedule):
		v.Set("fail", "schedule_damaged")
	case errors.Is(err, work.ErrKeyFull):
		v.Set("fail", "key_full")
	case errors.As(err, &bl):
		v.Set("fail", "bad_limits")
	case errors.As(err, &br):
		v.Set("fail", "bad")
	case errors.Is(err, work.ErrNotDeleted), errors.Is(err, work.ErrNotRetried), errors.Is(err, work.ErrJobNotFound):
		v.Set("fail", "gone")
	case errors.As(err, &nr):
		v.Set("fail", "not_running")
	case errors.As(err, &ur) && strings.HasSuffix(op, "_schedule"):
		v.Set("fail", "schedules_unreadable")
	case errors.As(err, &ur):
		v.Set("fail", "unreadable")
	case err != nil:
		slog.Error("webui: action failed", "op", op, "err", err)
		v.Set("fail", "error")
	default:
		v.Set("done", done)
		if n >= 0 {
			v.Set("n", strconv.FormatInt(n, 10))
		}
	}
	sep := "?"
	if strings.Contains(back, "?") {
		sep = "&"
	}
	redirect(w, r, back+sep+v.Encode())
}

// safeBack keeps a form's return address only when it is one of the UI's pages, relative to ui/.
func safeBack(back string) string {
	u, err := url.Parse(back)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return "./"
	}
	switch u.Path {
	case "./", "":
		return selfURL("", u.Query())
	case "queues", "workers", "scheduled", "retry", "dead", "job", "keys", "schedules", "debounced":
		return selfURL(u.Path, u.Query())
	}
	return "./"
}

// actionData is what the "action" template (a form posting one action) gets.
type actionData struct {
	Root, CSRF, Back, Op, Name, Key, ID, Score, Label, Class, Confirm string
}

// act builds an action form's data from key/value pairs: op, name, key, id, score, label, class,
// confirm and back (default: the page itself).
func act(d *pageData, kv ...interface{}) (*actionData, error) {
	if len(kv)%2 != 0 {
		return nil, errors.New("act: odd number of arguments")
	}
	a := &actionData{Root: d.Root, CSRF: d.CSRF, Back: d.Self, Class: "btn"}
	for i := 0; i < len(kv); i += 2 {
		k, _ := kv[i].(string)
		v := fmt.Sprint(kv[i+1])
		switch k {
		case "op":
			a.Op = v
		case "name":
			a.Name = v
		case "key":
			a.Key = v
		case "id":
			a.ID = v
		case "score":
			a.Score = v
		case "label":
			a.Label = v
		case "class":
			a.Class = "btn " + v
		case "confirm":
			a.Confirm = v
		case "back":
			a.Back = v
		default:
			return nil, fmt.Errorf("act: unknown key %q", k)
		}
	}
	return a, nil
}

// queueTableData is what the "queue-table" template gets.
type queueTableData struct {
	Page   *pageData
	Queues []*work.QueueStat
	Keyed  map[string]*work.KeyStat // the names with keyed jobs, whose names link to their keys
}

func newQueueTable(d *pageData, qs []*work.QueueStat, keyed []*work.KeyStat) queueTableData {
	t := queueTableData{Page: d, Queues: qs, Keyed: map[string]*work.KeyStat{}}
	for _, k := range keyed {
		t.Keyed[k.JobName] = k
	}
	return t
}

// queuesData is the queues page's content: the queues, and the summary of the keyed jobs.
type queuesData struct {
	Queues []*work.QueueStat
	Keyed  []*work.KeyStat
}

func (s *Server) queues() (*queuesData, error) {
	qs, err := s.client.QueueStats()
	if err != nil {
		return nil, err
	}
	keyed, err := s.keyStats()
	return &queuesData{Queues: qs, Keyed: keyed}, err
}
