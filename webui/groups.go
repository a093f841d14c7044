package webui

// Grouped jobs (EnqueueOptions.Group): the groups with jobs waiting (Client.Groups), their page and
// JSON endpoint. When a group is flushed, and in what order they come, is the library's.

import (
	"net/http"

	"github.com/workqueue/work"
)

// groupRow is one group as the page shows it, its times in epoch seconds for the templates (0: a
// group only its size flushes).
type groupRow struct {
	*work.GroupInfo
	OldestAt, FlushAt int64
}

// groupsData is the groups page's content (a struct, so that an empty list still renders).
type groupsData struct {
	Rows []groupRow
	Jobs int64
}

func (s *Server) groups() (*groupsData, error) {
	gs, err := s.client.Groups("")
	if err != nil {
		return nil, err
	}
	d := &groupsData{Rows: make([]groupRow, 0, len(gs))}
	for _, g := range gs {
		row := groupRow{GroupInfo: g}
		if !g.Oldest.IsZero() {
			row.OldestAt = g.Oldest.Unix()
		}
		if !g.NextFlush.IsZero() {
			row.FlushAt = g.NextFlush.Unix()
		}
		d.Rows = append(d.Rows, row)
		d.Jobs += g.Size
	}
	return d, nil
}

// apiGroups answers the groups with jobs waiting (work.GroupInfo), of ?name= or of every name, the
// soonest to be flushed first: [] when none.
func (s *Server) apiGroups(w http.ResponseWriter, r *http.Request) {
	gs, err := s.client.Groups(r.URL.Query().Get("name"))
	if gs == nil {
		gs = []*work.GroupInfo{}
	}
	render(w, gs, err)
}
