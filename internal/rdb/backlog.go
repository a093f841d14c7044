package rdb

// Backlogs: what waits in another store to be enqueued into the namespace (a transactional outbox's
// rows), as the relay that moves it last reported. One hash, a field per source.

import (
	"context"
	"encoding/json"

	"github.com/gomodule/redigo/redis"
)

// Backlogs is the hash of reported backlogs: field the source, value a BacklogReport's JSON.
func (k Keyspace) Backlogs() string { return k.P + "backlogs" }

// BacklogReport is one source's last report, times in Unix milliseconds (Oldest 0: nothing waits).
type BacklogReport struct {
	Waiting    int64 `json:"waiting"`
	Oldest     int64 `json:"oldest_ms"`
	ReportedAt int64 `json:"reported_ms"`
}

// ReportBacklog writes source's report.
func (s *Store) ReportBacklog(ctx context.Context, source string, r BacklogReport) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return s.do(ctx, func(c redis.Conn) error {
		_, err := c.Do("HSET", s.Ks.Backlogs(), source, b)
		return err
	})
}

// Backlogs reads every source's last report; a value that does not read as a report (another
// program wrote it) is left out.
func (s *Store) Backlogs(ctx context.Context) (map[string]BacklogReport, error) {
	var h map[string]string
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		h, err = redis.StringMap(c.Do("HGETALL", s.Ks.Backlogs()))
		return wrongType(err)
	})
	out := make(map[string]BacklogReport, len(h))
	for src, v := range h {
		var r BacklogReport
		if json.Unmarshal([]byte(v), &r) == nil {
			out[src] = r
		}
	}
	return out, err
}

// ForgetBacklog drops source's report.
func (s *Store) ForgetBacklog(ctx context.Context, source string) error {
	return s.do(ctx, func(c redis.Conn) error {
		_, err := c.Do("HDEL", s.Ks.Backlogs(), source)
		return err
	})
}
