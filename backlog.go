package work

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/workqueue/work/internal/rdb"
)

// Backlog is what waits in another store to be enqueued into the namespace, such as the rows of a
// transactional outbox (the pgwork module) not moved to Redis yet, as the program that moves them
// last reported it (Enqueuer.ReportBacklog).
type Backlog struct {
	// Source names the store and what in it: "postgres:work_outbox", say.
	Source string `json:"source"`
	// Waiting is how many jobs wait there.
	Waiting int64 `json:"waiting"`
	// Oldest is when the oldest of them was written; zero when none waits.
	Oldest time.Time `json:"oldest"`
	// ReportedAt is when the report was made: a report that stops being renewed means that no
	// program moves that source's jobs any more.
	ReportedAt time.Time `json:"reported_at"`
}

// Age is how long the oldest waiting job had waited when the report was made; zero when none waits.
func (b *Backlog) Age() time.Duration {
	if b.Oldest.IsZero() || b.Waiting == 0 {
		return 0
	}
	return max(b.ReportedAt.Sub(b.Oldest), 0)
}

// BacklogStaleAfter is how long a backlog's report may go unrenewed before it is stale: no program
// moves that source's jobs any more, or none can reach Redis. Relays report on every pass, which
// comes far more often.
const BacklogStaleAfter = time.Minute

// Silent is how long the report had gone unrenewed at now.
func (b *Backlog) Silent(now time.Time) time.Duration { return max(now.Sub(b.ReportedAt), 0) }

// Stale reports whether the report had gone unrenewed for longer than BacklogStaleAfter at now.
func (b *Backlog) Stale(now time.Time) bool { return b.Silent(now) > BacklogStaleAfter }

// ReportBacklog records how many jobs wait in source to be enqueued, and when the oldest was
// written (zero when none), for Client.Backlogs, the web UI, the CLI and the metrics. A relay calls
// it on each of its passes; the last report stands until the next.
func (e *Enqueuer) ReportBacklog(source string, waiting int64, oldest time.Time) error {
	if source == "" {
		return errors.New("work: ReportBacklog needs a source")
	}
	r := rdb.BacklogReport{Waiting: waiting, ReportedAt: time.Now().UnixMilli()}
	if !oldest.IsZero() && waiting > 0 {
		r.Oldest = oldest.UnixMilli()
	}
	return e.store.ReportBacklog(context.Background(), source, r)
}

// Backlogs returns the backlogs reported by Enqueuer.ReportBacklog, by source.
func (c *Client) Backlogs() ([]*Backlog, error) {
	reports, err := c.store.Backlogs(context.Background())
	if err != nil {
		return nil, err
	}
	out := make([]*Backlog, 0, len(reports))
	for src, r := range reports {
		b := &Backlog{Source: src, Waiting: r.Waiting, ReportedAt: time.UnixMilli(r.ReportedAt)}
		if r.Oldest > 0 {
			b.Oldest = time.UnixMilli(r.Oldest)
		}
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Source < out[j].Source })
	return out, nil
}

// ForgetBacklog drops the report of a source no program moves jobs from any more.
func (c *Client) ForgetBacklog(source string) error {
	return c.store.ForgetBacklog(context.Background(), source)
}
