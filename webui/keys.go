package webui

// Keyed jobs (work.EnqueueOptions.Key): the summary of every job name's keys, the page of one name's
// keys with its actions, and their JSON endpoints.

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/workqueue/work"
)

// checkJobName returns a badRequest for a job name the library refuses (work.CheckJobName), before
// any round trip.
func checkJobName(name string) error {
	if name == "" {
		return badRequestf("missing job name")
	}
	if err := work.CheckJobName(name); err != nil {
		return badRequest{err.Error()}
	}
	return nil
}

// keyError turns the library's refusal of a key into the caller's mistake, and a key of the name's
// keyed state that another program overwrote with another type into unreadable.
func keyError(name string, err error) error {
	switch {
	case errors.Is(err, work.ErrMalformedKey):
		return badRequest{err.Error()}
	case errors.Is(err, work.ErrWrongType):
		return unreadable{fmt.Sprintf("the keys of %s cannot be read or changed: a key of its keyed state holds "+
			"another Redis type (another program wrote it)", short(80, name))}
	}
	return err
}

// badLimits is a key's overrides that the library would refuse: a badRequest of its own, so that the
// form says what a limit may be.
type badLimits struct{ badRequest }

func (e badLimits) Unwrap() error { return e.badRequest }

func badLimitsf(format string, args ...interface{}) error {
	return badLimits{badRequest{fmt.Sprintf(format, args...)}}
}

// keyLimitsOf reads a key's overrides from the parameters concurrency, rate, weight and max_waiting,
// each with the library's parser of its kind; empty keeps the job name's setting.
func keyLimitsOf(get func(string) string) (work.KeyLimits, error) {
	var l work.KeyLimits
	var err1, err2, err3, err4 error
	l.Concurrency, err1 = work.ParseKeyLimit(get("concurrency"))
	l.RateLimit, err2 = work.ParseRate(get("rate"))
	l.Weight, err3 = work.ParseKeyWeight(get("weight"))
	l.MaxWaiting, err4 = work.ParseKeyLimit(get("max_waiting"))
	for i, err := range []error{err1, err2, err3, err4} {
		if err != nil {
			field := [...]string{"concurrency", "rate", "weight", "max waiting"}[i]
			return work.KeyLimits{}, badLimitsf("bad %s: %v", field, err)
		}
	}
	return l, nil
}

// periodText renders a rate's period briefly: "1m", "1h30m", "500ms".
func periodText(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// countText renders a count override as the form takes it: "" for none, "none" for no limit.
func countText(n int) string {
	switch {
	case n == 0:
		return ""
	case n < 0:
		return "none"
	}
	return strconv.Itoa(n)
}

// keyForm is the values of the form that sets a key's overrides.
type keyForm struct{ Concurrency, Rate, Weight, MaxWaiting string }

// keyRow is one key as the pages show it.
type keyRow struct {
	*work.KeyInfo
	URL       string   // the key's own view
	Overrides []string // its overrides, in words
	Form      keyForm
}

func newKeyRow(name string, k *work.KeyInfo) keyRow {
	l := k.Limits
	row := keyRow{KeyInfo: k, URL: keysURL(name, k.Key)}
	switch {
	case l.Concurrency > 0:
		row.Overrides = append(row.Overrides, fmt.Sprintf("%d at once", l.Concurrency))
	case l.Concurrency < 0:
		row.Overrides = append(row.Overrides, "no concurrency limit")
	}
	if l.RateLimit.Jobs > 0 {
		period := periodText(l.RateLimit.Period)
		row.Form.Rate = fmt.Sprintf("%d/%s", l.RateLimit.Jobs, period)
		row.Overrides = append(row.Overrides, fmt.Sprintf("%d per %s", l.RateLimit.Jobs, period))
	}
	if l.Weight > 0 {
		row.Overrides = append(row.Overrides, fmt.Sprintf("weight %d", l.Weight))
	}
	switch {
	case l.MaxWaiting > 0:
		row.Overrides = append(row.Overrides, fmt.Sprintf("at most %d waiting", l.MaxWaiting))
	case l.MaxWaiting < 0:
		row.Overrides = append(row.Overrides, "no cap on waiting")
	}
	row.Form.Concurrency, row.Form.Weight, row.Form.MaxWaiting = countText(l.Concurrency), countText(l.Weight), countText(l.MaxWaiting)
	return row
}

// keysURL is the address, relative to ui/, of a job name's keys page, or of one key's view.
func keysURL(name, key string) string {
	v := url.Values{"name": {name}}
	if key != "" {
		v.Set("q", key)
	}
	return "keys?" + v.Encode()
}

// keyedData is the content of the keys page without a job name: every name's summary.
type keyedData struct {
	Stats []*work.KeyStat
}

func (s *Server) keyStats() ([]*work.KeyStat, error) {
	stats, err := s.client.KeyStats()
	if stats == nil {
		stats = []*work.KeyStat{}
	}
	return stats, err
}

// keysData is the content of a job name's keys page: its summary, and a page of its keys or the
// key looked up.
type keysData struct {
	Name    string
	Query   string // the key looked up; "" for the list
	Stat    *work.KeyStat
	Rows    []keyRow
	One     *keyRow // the key looked up
	Total   int64
	Page    int64
	Pages   int64
	PrevURL string
	NextURL string
	ListURL string
}

func (s *Server) keyed() (*keyedData, error) {
	stats, err := s.keyStats()
	return &keyedData{Stats: stats}, err
}

func (s *Server) keyList(r *http.Request) (*keysData, error) {
	q := r.URL.Query()
	name := q.Get("name")
	if err := checkJobName(name); err != nil {
		return nil, err
	}
	page, err := parsePage(r)
	if err != nil {
		return nil, err
	}
	page = max(page, 1)
	d := &keysData{Name: name, Query: strings.TrimSpace(q.Get("q")), Page: int64(page), Stat: &work.KeyStat{JobName: name},
		Rows: []keyRow{}, ListURL: keysURL(name, "")}
	stats, err := s.client.KeyStats()
	if err != nil {
		return nil, err
	}
	for _, st := range stats {
		if st.JobName == name {
			d.Stat = st
			break
		}
	}
	if d.Query != "" {
		k, err := s.client.Key(name, d.Query)
		if err != nil {
			return nil, keyError(name, err)
		}
		row := newKeyRow(name, k)
		d.One = &row
		return d, nil
	}
	keys, total, err := s.client.Keys(name, page)
	if err != nil {
		return nil, keyError(name, err)
	}
	for _, k := range keys {
		d.Rows = append(d.Rows, newKeyRow(name, k))
	}
	d.Total, d.Pages = total, pageCount(total)
	link := func(p int64) string { return d.ListURL + "&" + url.Values{"page": {strconv.FormatInt(p, 10)}}.Encode() }
	d.PrevURL, d.NextURL = pageLinks(d.Page, d.Pages, link)
	return d, nil
}

// keyAction pauses or resumes a key of a job name, or sets or clears its overrides (read with form),
// and returns the outcome's flash code.
func (s *Server) keyAction(op, name, key string, form func(string) string) (string, error) {
	if err := checkJobName(name); err != nil {
		return "", err
	}
	if key == "" {
		return "", badRequestf("missing key")
	}
	var done string
	var err error
	switch op {
	case "pause_key":
		done, err = "key_paused", s.client.PauseKey(name, key)
	case "resume_key":
		done, err = "key_resumed", s.client.UnpauseKey(name, key)
	case "set_key_limits":
		var l work.KeyLimits
		if l, err = keyLimitsOf(form); err != nil {
			return "", err
		}
		done, err = "key_limits_set", s.client.SetKeyLimits(name, key, l)
	case "clear_key_limits":
		done, err = "key_limits_cleared", s.client.ClearKeyLimits(name, key)
	default:
		return "", badRequestf("unknown key action %q", op)
	}
	return done, keyError(name, err)
}

// apiKeyStats answers the summary of the keyed jobs of every job name that has had some.
func (s *Server) apiKeyStats(w http.ResponseWriter, r *http.Request) {
	stats, err := s.keyStats()
	render(w, stats, err)
}

// keysPage is the answer of GET /keys/<job name>.
type keysPage struct {
	Count int64           `json:"count"`
	Keys  []*work.KeyInfo `json:"keys"`
}

// apiKeys answers a page of the keys of the job name that is the rest of the path, busiest first,
// 20 a page.
func (s *Server) apiKeys(w http.ResponseWriter, r *http.Request, rest string) {
	if rest == "" {
		renderError(w, badRequestf("want /keys/<job name>"))
		return
	}
	page, err := parsePage(r)
	if err == nil {
		err = checkJobName(rest)
	}
	if err != nil {
		renderError(w, err)
		return
	}
	keys, total, err := s.client.Keys(rest, page)
	if keys == nil {
		keys = []*work.KeyInfo{}
	}
	render(w, keysPage{Count: total, Keys: keys}, keyError(rest, err))
}

// apiKey answers one key (the key parameter) of the job name that is the rest of the path.
func (s *Server) apiKey(w http.ResponseWriter, r *http.Request, rest string) {
	key := r.URL.Query().Get("key")
	if rest == "" || key == "" {
		renderError(w, badRequestf("want /key/<job name>?key=<key>"))
		return
	}
	if err := checkJobName(rest); err != nil {
		renderError(w, err)
		return
	}
	k, err := s.client.Key(rest, key)
	render(w, k, keyError(rest, err))
}

// apiKeyAction returns the handler of POST /<path>/<job name>?key=<key>, which does op; the key and
// the overrides may also come in a form body.
func (s *Server) apiKeyAction(path, op string) pathHandler {
	return func(w http.ResponseWriter, r *http.Request, rest string) {
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		if err := r.ParseForm(); err != nil {
			renderError(w, badRequestf("bad form"))
			return
		}
		if rest == "" || r.Form.Get("key") == "" {
			renderError(w, badRequestf("want /%s/<job name>?key=<key>", path))
			return
		}
		_, err := s.keyAction(op, rest, r.Form.Get("key"), r.Form.Get)
		render(w, statusOK, err)
	}
}
