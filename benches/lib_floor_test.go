package main

import (
	"encoding/json"
	"testing"

	"github.com/workqueue/work"
)

// The floor consumer reads the enqueue time straight from the job's JSON; this holds it to the
// JSON that work writes.
func TestArgsTReadsTheEnqueueTimeOfWorkJobs(t *testing.T) {
	raw, err := json.Marshal(&work.Job{Name: "job0", ID: "a1", EnqueuedAt: 1700000000, Args: map[string]interface{}{"t": int64(1700000000123456)}})
	if err != nil {
		t.Fatal(err)
	}
	if got := argsT(raw); got != 1700000000123456 {
		t.Fatalf("argsT(%s) = %d, want 1700000000123456", raw, got)
	}
	for _, raw := range []string{`{"name":"job0","id":"a1","t":1700000000}`, `{"args":{"n":1}}`, `{"args":{"t":`} {
		if got := argsT([]byte(raw)); got != 0 {
			t.Errorf("argsT(%s) = %d, want 0", raw, got)
		}
	}
}
