package webui

import (
	"encoding/json"
	"errors"

	"github.com/workqueue/work"
)

// jobView is what the UI knows of a job: its record, when it has one (tracked jobs, and jobs of
// names whose pool keeps records), and where it is, when it is still in a queue or set.
type jobView struct {
	ID        string
	Loc       *work.JobLocation
	Record    *work.JobRecord
	RecordErr string // the record exists but cannot be read
}

// findJob reads a job's record first (one round trip), then looks for the job in the queues and sets
// (FindJob, which reads every job in the worst case) unless the record says it cannot be there. It
// returns ErrJobNotFound when the job has neither.
func (s *Server) findJob(id string) (*jobView, error) {
	v := &jobView{ID: id}
	// IDs a record cannot have (those of periodic jobs, say) are only looked for in the queues.
	if work.CheckID(id) == nil {
		rec, err := s.client.JobRecord(id)
		switch {
		case err == nil:
			v.Record = rec
		case errors.Is(err, work.ErrNoRecord):
		case isWrongType(err):
			v.RecordErr = "The job's record cannot be read: its key holds another Redis type than a hash (another program wrote it)."
		default:
			return nil, err
		}
	}
	if v.Record != nil && !mayBeLocated(v.Record.State) {
		return v, nil
	}
	loc, err := s.client.FindJob(id)
	if errors.Is(err, work.ErrJobNotFound) && v.Record != nil {
		return v, nil // it moved on meanwhile (finished, say): its record says where it ended
	}
	if err != nil {
		return nil, err
	}
	v.Loc = loc
	return v, nil
}

// mayBeLocated reports whether a job whose record is in the given state may be in a queue or set: a
// job waiting for its dependencies is kept in its record only, and one that is done, dropped or
// deleted is gone.
func mayBeLocated(recordState string) bool {
	switch recordState {
	case "waiting", "done", "dropped", "deleted":
		return false
	}
	return true
}

// MarshalJSON encodes the view as GET /job answers it: the location's fields, as they were before
// records existed, with "record" (or "record_error") added.
func (v *jobView) MarshalJSON() ([]byte, error) {
	out := []byte("{")
	if v.Loc != nil {
		b, err := json.Marshal(v.Loc)
		if err != nil {
			return nil, err
		}
		out = b[:len(b)-1]
	}
	add := func(key string, val interface{}) error {
		b, err := json.Marshal(val)
		if err != nil {
			return err
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		k, _ := json.Marshal(key)
		out = append(append(append(out, k...), ':'), b...)
		return nil
	}
	if v.Record != nil {
		if err := add("record", v.Record); err != nil {
			return nil, err
		}
	}
	if v.RecordErr != "" {
		if err := add("record_error", v.RecordErr); err != nil {
			return nil, err
		}
	}
	return append(out, '}'), nil
}
