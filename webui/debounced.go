package webui

// Debounced enqueues (work.Debounce): the bursts whose job has not run yet (Client.PendingBursts),
// their page and JSON endpoint, and the actions on a waiting job by its ID (Client.RescheduleJob,
// Client.RunScheduledJobNow). What makes a burst, and what an edit does to it, is the library's.

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/workqueue/work"
)

// burstRow is one pending burst as the page shows it, its times in epoch seconds for the templates.
type burstRow struct {
	*work.PendingBurst
	FirstAt, RunsAt int64
}

// debouncedData is the debounced page's content (a struct, so that an empty list still renders).
type debouncedData struct {
	Rows []burstRow
}

func (s *Server) debounced() (*debouncedData, error) {
	bs, err := s.client.PendingBursts()
	if err != nil {
		return nil, err
	}
	d := &debouncedData{Rows: make([]burstRow, 0, len(bs))}
	for _, b := range bs {
		d.Rows = append(d.Rows, burstRow{PendingBurst: b, FirstAt: b.First.Unix(), RunsAt: b.RunAt.Unix()})
	}
	return d, nil
}

// apiDebounced answers the pending bursts (work.PendingBurst), the soonest to run first: [] when none.
func (s *Server) apiDebounced(w http.ResponseWriter, r *http.Request) {
	bs, err := s.client.PendingBursts()
	if bs == nil {
		bs = []*work.PendingBurst{}
	}
	render(w, bs, err)
}

// runAtLayouts are the forms of a run time besides epoch seconds: RFC 3339, and what a browser's
// datetime-local field sends, read in UTC as the UI shows every time in UTC.
var runAtLayouts = []struct {
	layout string
	utc    bool
}{{time.RFC3339, false}, {"2006-01-02T15:04:05", true}, {"2006-01-02T15:04", true}}

// parseRunAt reads the time a job is moved to: epoch seconds, RFC 3339, or a datetime-local value
// (UTC).
func parseRunAt(v string) (time.Time, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, badRequestf("missing at: want epoch seconds or an RFC 3339 time")
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Unix(n, 0), nil
	}
	for _, l := range runAtLayouts {
		if l.utc {
			if t, err := time.ParseInLocation(l.layout, v, time.UTC); err == nil {
				return t, nil
			}
		} else if t, err := time.Parse(l.layout, v); err == nil {
			return t, nil
		}
	}
	return time.Time{}, badRequestf("bad at %q: want epoch seconds or an RFC 3339 time", v)
}

// rescheduleAnswer is the answer of POST /reschedule_job/<job id>.
type rescheduleAnswer struct {
	Status string    `json:"status"`
	JobID  string    `json:"job_id"`
	RunAt  time.Time `json:"run_at"`
}

// apiRescheduleJob moves a job waiting in the scheduled or retry set to ?at= (or a form's at); the
// ID is the rest of the path, slashes included.
func (s *Server) apiRescheduleJob(w http.ResponseWriter, r *http.Request, rest string) {
	if rest == "" {
		renderError(w, badRequestf("want /<job id>"))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		renderError(w, badRequestf("bad form"))
		return
	}
	at, err := parseRunAt(r.Form.Get("at"))
	if err == nil {
		err = s.client.RescheduleJob(rest, at)
	}
	render(w, rescheduleAnswer{Status: "ok", JobID: rest, RunAt: at.Truncate(time.Second).UTC()}, err)
}

// apiRunScheduledJob moves the scheduled job /<run at>/<job id> to its queue at once, as the
// scheduled page's "Run now" does.
func (s *Server) apiRunScheduledJob(w http.ResponseWriter, r *http.Request, rest string) {
	runAt, id, err := scoreAndID(rest)
	if err == nil {
		err = s.client.RunScheduledJobNow(runAt, id)
	}
	render(w, statusOK, err)
}
