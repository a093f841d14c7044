package webui

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/workqueue/work"
)

// checkBatchID returns a badRequest for an ID no batch can have (work.CheckID).
func checkBatchID(id string) error {
	if id == "" {
		return badRequestf("missing batch id")
	}
	if err := work.CheckID(id); err != nil {
		return badRequestf("malformed batch id (%v)", err)
	}
	return nil
}

// unreadable is data in Redis that another program overwrote with a value of another type: the UI
// says so (409) rather than failing as if Redis were down.
type unreadable struct{ msg string }

func (e unreadable) Error() string { return e.msg }

// batchStatus reads one batch: a badRequest for a malformed ID, ErrBatchNotFound, or unreadable
// when its key holds another type.
func (s *Server) batchStatus(id string) (*work.BatchStatus, error) {
	if err := checkBatchID(id); err != nil {
		return nil, err
	}
	st, err := s.client.BatchStatus(id)
	if errors.Is(err, work.ErrWrongType) {
		return nil, unreadable{fmt.Sprintf("batch %s cannot be read: its key holds another Redis type than a hash "+
			"(another program wrote it), so its counts are lost", id)}
	}
	return st, err
}

// batches reads a page of batches, or unreadable when one of them has a key of another type.
func (s *Server) batches(page uint) ([]*work.BatchStatus, int64, error) {
	bs, total, err := s.client.Batches(page)
	if errors.Is(err, work.ErrWrongType) {
		return nil, 0, unreadable{"the batches of this page cannot be read: the key of one of them holds another " +
			"Redis type than a hash (another program wrote it)"}
	}
	return bs, total, err
}

// batchesPage is the answer of GET /batches.
type batchesPage struct {
	Count   int64               `json:"count"`
	Batches []*work.BatchStatus `json:"batches"`
}

// apiBatches answers a page of batches, newest first, 20 a page.
func (s *Server) apiBatches(w http.ResponseWriter, r *http.Request) {
	page, err := parsePage(r)
	if err != nil {
		renderError(w, err)
		return
	}
	bs, total, err := s.batches(page)
	render(w, batchesPage{Count: total, Batches: bs}, err)
}

// apiBatch answers the status of the batch whose ID is the rest of the path.
func (s *Server) apiBatch(w http.ResponseWriter, r *http.Request, rest string) {
	if rest == "" {
		renderError(w, badRequestf("want /batch/<batch id>"))
		return
	}
	st, err := s.batchStatus(rest)
	render(w, st, err)
}

// progress is a bar of a batch's members: done, dead and pending, drawn as SVG rectangles whose
// widths are percents of the bar (the Content-Security-Policy forbids inline styles, not SVG
// attributes).
type progress struct {
	Done, Dead, Pending int64
	DoneW, DeadW, PendW string // widths, in percent
	DeadX, PendX        string // left edges, in percent
	Percent             int64  // members ended (done or dead), in whole percent, rounded down
	Label               string
}

func pct(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// newProgress lays out a batch's bar. The widths are over done+dead+pending, which is the total
// unless the batch is damaged, so the bar never overflows.
func newProgress(st *work.BatchStatus) *progress {
	p := &progress{Done: max(st.Done, 0), Dead: max(st.Dead, 0), Pending: max(st.Pending, 0)}
	sum := p.Done + p.Dead + p.Pending
	if sum > 0 {
		dw := float64(p.Done) / float64(sum) * 100
		xw := float64(p.Dead) / float64(sum) * 100
		p.DoneW, p.DeadW, p.PendW = pct(dw), pct(xw), pct(max(100-dw-xw, 0))
		p.DeadX, p.PendX = pct(dw), pct(dw+xw)
		p.Percent = (p.Done + p.Dead) * 100 / sum
	} else {
		p.DoneW, p.DeadW, p.PendW, p.DeadX, p.PendX = "0", "0", "0", "0", "0"
	}
	p.Label = fmt.Sprintf("%d done, %d dead, %d pending", p.Done, p.Dead, p.Pending)
	return p
}

// callbackRow is one callback of a batch, as the batch page shows it.
type callbackRow struct {
	Kind, Name string
	FiredAt    int64
	Never      bool   // it will not fire: an on-success callback of a batch with a dead member
	Note       string // when it fires, while it has not
}

// callbacks describes a batch's callbacks and whether they fired.
func callbacks(st *work.BatchStatus) []callbackRow {
	var out []callbackRow
	if st.OnComplete != "" {
		out = append(out, callbackRow{Kind: "On complete", Name: st.OnComplete, FiredAt: st.OnCompleteFired,
			Note: "it fires once every member has ended"})
	}
	if st.OnSuccess != "" {
		c := callbackRow{Kind: "On success", Name: st.OnSuccess, FiredAt: st.OnSuccessFired,
			Note: "it fires once every member has succeeded"}
		if c.FiredAt == 0 && st.Dead > 0 {
			c.Never, c.Note = true, "a member died"
		}
		out = append(out, c)
	}
	return out
}

// batchesData is the batches page's content.
type batchesData struct {
	Rows    []*work.BatchStatus
	Total   int64
	Page    int64
	Pages   int64
	PrevURL string
	NextURL string
}

func (s *Server) batchList(r *http.Request) (*batchesData, error) {
	page, err := parsePage(r)
	if err != nil {
		return nil, err
	}
	if page == 0 {
		page = 1
	}
	bs, total, err := s.batches(page)
	if err != nil {
		return nil, err
	}
	d := &batchesData{Rows: bs, Total: total, Page: int64(page), Pages: pageCount(total)}
	link := func(p int64) string { return "batches?" + url.Values{"page": {strconv.FormatInt(p, 10)}}.Encode() }
	d.PrevURL, d.NextURL = pageLinks(d.Page, d.Pages, link)
	return d, nil
}

// batchData is the batch page's content.
type batchData struct {
	*work.BatchStatus
	Progress  *progress
	Callbacks []callbackRow
}

func (s *Server) batchDetail(id string) (*batchData, error) {
	st, err := s.batchStatus(id)
	if err != nil {
		return nil, err
	}
	return &batchData{BatchStatus: st, Progress: newProgress(st), Callbacks: callbacks(st)}, nil
}
