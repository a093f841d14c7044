package webui

import (
	"encoding/json"

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

// findJob looks the job up (work.Client.LookupJob: its record, then where it is unless the record
// says it cannot be in a queue or set); ErrJobNotFound when it has neither.
func (s *Server) findJob(id string) (*jobView, error) {
	l, err := s.client.LookupJob(id)
	if err != nil {
		return nil, err
	}
	v := &jobView{ID: id, Loc: l.Location, Record: l.Record}
	if l.RecordErr != nil {
		v.RecordErr = "The job's record cannot be read: its key holds another Redis type than a hash (another program wrote it)."
	}
	return v, nil
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
