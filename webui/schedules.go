package webui

// Schedules (work.Client.SetSchedule) and the periodic jobs the pools declare in code, side by side:
// the schedules page, one schedule's view with its next ticks, their actions, and their JSON
// endpoints. Input is checked by the library (work.CheckScheduleID, and Client.SetSchedule before
// any round trip); its sentinel errors decide the answer.

import (
	"errors"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/workqueue/work"
)

// scheduleError turns the library's refusal of a schedule's ID or definition into the caller's
// mistake and a schedules key that another program overwrote into unreadable, and leaves
// ErrScheduleNotFound, ErrDamagedSchedule and ErrKeyFull for renderError (404, 409 and 409).
func scheduleError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, work.ErrMalformedSchedule), errors.Is(err, work.ErrMalformedSpec), errors.Is(err, work.ErrUnknownLocation),
		errors.Is(err, work.ErrMalformedJobName), errors.Is(err, work.ErrMalformedKey), errors.Is(err, work.ErrMalformedArgs):
		return badRequest{err.Error()}
	case errors.Is(err, work.ErrWrongType):
		return unreadable{"the schedules cannot be read or changed: a key of theirs holds another Redis type (another program wrote it)"}
	}
	return err
}

// checkScheduleID returns a badRequest for an ID the library refuses, before any round trip.
func checkScheduleID(id string) error {
	if id == "" {
		return badRequestf("missing schedule id")
	}
	return scheduleError(work.CheckScheduleID(id))
}

// scheduleRow is one schedule, or one periodic job declared in code, as the pages show it.
type scheduleRow struct {
	*work.ScheduleInfo
	URL string // its own view
}

func newScheduleRow(in *work.ScheduleInfo) scheduleRow {
	return scheduleRow{ScheduleInfo: in, URL: scheduleURL(in.ID)}
}

// scheduleURL is the address, relative to ui/, of a schedule's view.
func scheduleURL(id string) string { return "schedules?" + url.Values{"id": {id}}.Encode() }

// schedulesURL is the address of a page of the list: the schedules whose ID starts with q (all when
// empty), from cursor on.
func schedulesURL(q, cursor string) string {
	v := url.Values{}
	if q != "" {
		v.Set("q", q)
	}
	if cursor != "" {
		v.Set("cursor", cursor)
	}
	if len(v) == 0 {
		return "schedules"
	}
	return "schedules?" + v.Encode()
}

// Bounds of a page of the list: it gathers about schedulesPerPage rows, reading the schedules
// schedulesScanCount at a time (more when searching, as most do not match), in at most
// schedulesScanCalls round trips.
const (
	schedulesPerPage   = 20
	schedulesScanCount = 20
	schedulesFindCount = 1000
	schedulesScanCalls = 10
)

// schedulesData is the content of the schedules page: a page of the list, or one schedule.
type schedulesData struct {
	Query    string // the ID looked up, or the start of the IDs listed
	Rows     []scheduleRow
	Stored   int64 // schedules stored in all
	Periodic int   // periodic jobs declared in code, among the rows
	First    bool  // the first page
	NextURL  string
	ListURL  string
	One      *scheduleView
}

// scheduleView is one schedule's view: its row, its next ticks and its args as text.
type scheduleView struct {
	scheduleRow
	Next []int64
	Args string
}

// nextTickCount is how many ticks a schedule's view lists.
const nextTickCount = 5

// findSchedule returns a stored schedule, or a periodic job declared in code, by ID, after checking
// the ID before any round trip.
func (s *Server) findSchedule(id string) (*work.ScheduleInfo, error) {
	if err := checkScheduleID(id); err != nil {
		return nil, err
	}
	in, err := s.client.FindSchedule(id)
	return in, scheduleError(err)
}

// scheduleList serves the schedules page: ?id= views one schedule; else a page of the list, of the
// IDs starting with ?q= when given (the schedule whose ID is exactly q comes first, found at once),
// from ?cursor= on.
func (s *Server) scheduleList(r *http.Request) (*schedulesData, error) {
	q := r.URL.Query()
	if q.Has("id") {
		in, err := s.findSchedule(q.Get("id"))
		if err != nil {
			return nil, err
		}
		v := &scheduleView{scheduleRow: newScheduleRow(in), Next: in.NextTicks(nextTickCount)}
		if in.Args != nil {
			v.Args = indentJSON(in.Args)
		}
		return &schedulesData{One: v, ListURL: "schedules"}, nil
	}
	find, cursor := strings.TrimSpace(q.Get("q")), q.Get("cursor")
	if cursor == "0" {
		cursor = ""
	}
	if find != "" {
		if err := checkScheduleID(find); err != nil {
			return nil, err
		}
	}
	d := &schedulesData{Query: find, Rows: []scheduleRow{}, First: cursor == "", ListURL: "schedules"}
	seen := map[string]bool{}
	switch {
	case find != "" && cursor == "":
		// The exact ID, found in one round trip however many schedules there are.
		in, err := s.client.Schedule(find)
		switch {
		case err == nil:
			d.Rows = append(d.Rows, newScheduleRow(in))
			seen[in.ID] = true
		case !errors.Is(err, work.ErrScheduleNotFound):
			return nil, scheduleError(err)
		}
	case find != "":
		seen[find] = true // the first page showed it
	}
	count := schedulesScanCount
	if find != "" {
		count = schedulesFindCount
	}
	var periodic, stored []scheduleRow
	for calls := 0; calls < schedulesScanCalls; calls++ {
		page, err := s.client.Schedules(work.ScheduleQuery{Cursor: cursor, Count: count, Prefix: find})
		if err != nil {
			return nil, scheduleError(err)
		}
		d.Stored, cursor = page.Stored, page.Next
		for _, in := range page.Schedules {
			switch {
			case in.Periodic:
				periodic = append(periodic, newScheduleRow(in))
			case !seen[in.ID]:
				seen[in.ID] = true
				stored = append(stored, newScheduleRow(in))
			}
		}
		if cursor == "" || len(stored) >= schedulesPerPage {
			break
		}
	}
	// A page comes in no particular order: sort it, the periodic jobs first.
	sort.Slice(stored, func(i, j int) bool { return stored[i].ID < stored[j].ID })
	d.Periodic = len(periodic)
	d.Rows = append(append(d.Rows, periodic...), stored...)
	if cursor != "" {
		d.NextURL = schedulesURL(find, cursor)
	}
	d.ListURL = schedulesURL(find, "")
	return d, nil
}

// scheduleActs is what the "schedule-actions" template gets: the page, and the schedule whose
// actions it shows.
type scheduleActs struct {
	Page *pageData
	Row  *work.ScheduleInfo
}

// scheduleAction pauses, resumes, deletes or runs now the schedule id, and returns the outcome's
// flash code.
func (s *Server) scheduleAction(op, id string) (string, error) {
	if err := checkScheduleID(id); err != nil {
		return "", err
	}
	var done string
	var err error
	switch op {
	case "pause_schedule":
		done, err = "schedule_paused", s.client.PauseSchedule(id)
	case "resume_schedule":
		done, err = "schedule_resumed", s.client.ResumeSchedule(id)
	case "delete_schedule":
		done, err = "schedule_deleted", s.client.DeleteSchedule(id)
	case "run_schedule":
		done = "schedule_run"
		_, err = s.client.RunScheduleNow(id)
	default:
		return "", badRequestf("unknown schedule action %q", op)
	}
	return done, scheduleError(err)
}

// scheduleOf reads a schedule from the parameters id, spec, location, job, args (a JSON object), key,
// jitter (a duration) and missed (skip or run-latest), with the library's parsers; SetSchedule
// checks the rest.
func scheduleOf(get func(string) string) (work.Schedule, error) {
	sc := work.Schedule{ID: get("id"), Spec: get("spec"), Location: get("location"), JobName: get("job"), Key: get("key")}
	var err error
	if sc.Args, err = work.ParseArgs(get("args")); err != nil {
		return sc, badRequest{err.Error()}
	}
	if sc.Missed, err = work.ParseMissedPolicy(get("missed")); err != nil {
		return sc, badRequest{err.Error()}
	}
	if j := strings.TrimSpace(get("jitter")); j != "" {
		if sc.Jitter, err = time.ParseDuration(j); err != nil {
			return sc, badRequestf("bad jitter %q: want a duration, as 30s or 5m", j)
		}
	}
	return sc, nil
}

// scheduleAnswer is the answer of GET /schedule: the schedule and its next ticks.
type scheduleAnswer struct {
	*work.ScheduleInfo
	NextTicks []int64 `json:"next_ticks"`
}

// apiSchedules answers a page of the schedules (work.SchedulePage): ?cursor= (the next of the page
// before), ?count= (about how many), ?prefix= and ?stored_only=1.
func (s *Server) apiSchedules(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	sq := work.ScheduleQuery{Cursor: q.Get("cursor"), Prefix: q.Get("prefix")}
	var err error
	if v := q.Get("count"); v != "" {
		n, perr := strconv.Atoi(v)
		if perr != nil || n < 1 || n > 10000 {
			err = badRequestf("bad count %q: want a number from 1 to 10000", v)
		}
		sq.Count = n
	}
	if v := q.Get("stored_only"); err == nil && v != "" {
		if sq.StoredOnly, err = strconv.ParseBool(v); err != nil {
			err = badRequestf("bad stored_only %q: want 1 or 0", v)
		}
	}
	if err == nil && sq.Prefix != "" {
		err = checkScheduleID(sq.Prefix)
	}
	if err != nil {
		renderError(w, err)
		return
	}
	page, err := s.client.Schedules(sq)
	render(w, page, scheduleError(err))
}

// apiSchedule answers one schedule (?id=), stored or declared in code, with its next ticks.
func (s *Server) apiSchedule(w http.ResponseWriter, r *http.Request) {
	in, err := s.findSchedule(r.URL.Query().Get("id"))
	if err != nil {
		renderError(w, err)
		return
	}
	render(w, scheduleAnswer{ScheduleInfo: in, NextTicks: in.NextTicks(nextTickCount)}, nil)
}

// scheduleActionAnswer is the answer of the schedules' POST endpoints; run_schedule adds the job it
// enqueued, set_schedule the schedule as set.
type scheduleActionAnswer struct {
	Status   string             `json:"status"`
	Job      *work.Job          `json:"job,omitempty"`
	Schedule *work.ScheduleInfo `json:"schedule,omitempty"`
}

// apiScheduleAction returns the handler of POST /<op>?id=<id>; the ID may also come in a form body.
func (s *Server) apiScheduleAction(op string) pathHandler {
	return func(w http.ResponseWriter, r *http.Request, rest string) {
		if rest != "" {
			writeError(w, http.StatusNotFound, "not found")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 128<<10)
		if err := r.ParseForm(); err != nil {
			renderError(w, badRequestf("bad form"))
			return
		}
		id := r.Form.Get("id")
		if err := checkScheduleID(id); err != nil {
			renderError(w, err)
			return
		}
		var ans scheduleActionAnswer
		var err error
		switch op {
		case "run_schedule":
			ans.Job, err = s.client.RunScheduleNow(id)
			err = scheduleError(err)
		case "set_schedule":
			var sc work.Schedule
			if sc, err = scheduleOf(r.Form.Get); err == nil {
				err = scheduleError(s.client.SetSchedule(sc))
			}
			if err == nil {
				ans.Schedule, err = s.client.Schedule(id)
				err = scheduleError(err)
			}
		default:
			_, err = s.scheduleAction(op, id)
		}
		ans.Status = "ok"
		render(w, ans, err)
	}
}
