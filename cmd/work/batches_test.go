package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/workqueue/work"
	"github.com/workqueue/work/internal/redistest"
)

// batchOfFive makes a batch of 5 members served by a real worker pool: of the 3 resize members, 2
// succeed (leaving a record with a result) and 1 dies; the 2 archive members wait in a queue no pool
// serves. It returns the batch, its status once the pool is done, and the members in order.
func batchOfFive(t *testing.T, e *env) (*work.Batch, *work.BatchStatus, []*work.Job) {
	t.Helper()
	enq := work.NewEnqueuer(e.ns, e.pool)
	b, jobs, err := enq.EnqueueInBatch(work.BatchOptions{
		Description: "thumbnails for album 7",
		OnComplete:  &work.BatchCallback{Name: "album_done"},
		OnSuccess:   &work.BatchCallback{Name: "album_ok"},
	}, []work.BatchJob{
		{Name: "resize", Args: work.Q{"n": 1}},
		{Name: "resize", Args: work.Q{"n": 2}},
		{Name: "resize", Args: work.Q{"fail": true}},
		{Name: "archive"},
		{Name: "archive"},
	})
	if err != nil {
		t.Fatal(err)
	}
	e.workerPool(func(wp *work.WorkerPool, _ <-chan struct{}) {
		wp.JobWithOptions("resize", work.JobOptions{MaxFails: 1, KeepFinished: time.Hour}, func(j *work.Job) error {
			if j.ArgBool("fail") {
				return errors.New("image <corrupt>")
			}
			return j.SetResult(map[string]interface{}{"width": 640, "n": j.ArgInt64("n")})
		})
	})
	c := work.NewClient(e.ns, e.pool)
	var st *work.BatchStatus
	redistest.Eventually(t, 20*time.Second, "the served members to end", func() bool {
		st, err = c.BatchStatus(b.ID)
		if err != nil {
			t.Fatal(err)
		}
		return st.Done == 2 && st.Dead == 1
	})
	return b, st, jobs
}

func TestBatchCommand(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b, st, _ := batchOfFive(t, e)

	e.run(nil, "batch", b.ID).want(t, 0, "BATCH        "+b.ID, "thumbnails for album 7", "closed (waiting for its members to end)",
		"[############xxxxxx............] 60% ended", "TOTAL        5\n", "PENDING      2\n", "DONE         2\n",
		"DEAD         1\n", "FAILED       1 attempt", "CREATED      ", "COMPLETED    -\n",
		"ON COMPLETE  album_done: not fired yet", "ON SUCCESS   album_ok: will not fire (a member died)")
	r := e.run(nil, "batch", b.ID, "--json")
	r.want(t, 0)
	var got work.BatchStatus
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || got != *st {
		t.Errorf("batch --json: %s (%v), want %+v", r.stdout, err, *st)
	}

	r = e.run(nil, "batch", "nope")
	r.want(t, 3)
	if !strings.Contains(r.stderr, "no batch nope") {
		t.Errorf("unknown batch: %q", r.stderr)
	}
	for _, args := range [][]string{{"batch"}, {"batch", ""}, {"batch", "a b"}, {"batch", "a/b"}, {"batch", strings.Repeat("a", 65)},
		{"batch", "a", "b"}, {"batches", "extra"}, {"batches", "--page", "x"}} {
		r := e.run(nil, args...)
		if r.code != 2 || !strings.HasPrefix(r.stderr, "work: ") || r.stdout != "" {
			t.Errorf("work %q: exit %d, stdout %q, stderr %q; want 2", args, r.code, r.stdout, r.stderr)
		}
	}

	// The rest of the members end: the batch completes, and the callback that can fire fires.
	e.workerPool(func(wp *work.WorkerPool, _ <-chan struct{}) {
		wp.Job("archive", func(*work.Job) error { return nil })
	})
	c := work.NewClient(e.ns, e.pool)
	redistest.Eventually(t, 20*time.Second, "the batch to complete", func() bool {
		st, err := c.BatchStatus(b.ID)
		return err == nil && st.State == "complete"
	})
	r = e.run(nil, "batch", b.ID)
	r.want(t, 0, "complete (every member has ended)", "[########################xxxxxx] 100% ended", "ON COMPLETE  album_done: fired ",
		"ON SUCCESS   album_ok: will not fire (a member died)")
	if strings.Contains(r.stdout, "COMPLETED    -") {
		t.Errorf("a completed batch without its completion time:\n%s", r.stdout)
	}
}

func TestBatchesCommand(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.run(nil, "batches").want(t, 0, "no batches on this page (0 in all)")
	r := e.run(nil, "batches", "--json")
	r.want(t, 0, `"count": 0`, `"batches": []`)

	b, st, _ := batchOfFive(t, e)
	r = e.run(nil, "batches")
	r.want(t, 0, "BATCH", "PROGRESS", b.ID+"  closed  [########xxxx........]  60%  2     1     2        5", "thumbnails for album 7",
		"page 1 of 1, 1 batch\n")
	r = e.run(nil, "batches", "--json")
	r.want(t, 0)
	var page struct {
		Count   int64               `json:"count"`
		Batches []*work.BatchStatus `json:"batches"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &page); err != nil || page.Count != 1 || len(page.Batches) != 1 || *page.Batches[0] != *st {
		t.Errorf("batches --json: %s (%v)", r.stdout, err)
	}
	e.run(nil, "batches", "--page", "2").want(t, 0, "no batches on this page (1 in all)")

	enq := work.NewEnqueuer(e.ns, e.pool)
	for i := 0; i < 21; i++ {
		if _, _, err := enq.EnqueueInBatch(work.BatchOptions{}, []work.BatchJob{{Name: "archive"}}); err != nil {
			t.Fatal(err)
		}
	}
	r = e.run(nil, "batches", "--page", "2")
	r.want(t, 0, "page 2 of 2, 22 batches\n")
	if n := strings.Count(r.stdout, "\n"); n != 4 { // the header, 2 batches, the page line
		t.Errorf("page 2 of 22 batches has %d lines:\n%s", n, r.stdout)
	}
}

func TestDamagedBatches(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	enq := work.NewEnqueuer(e.ns, e.pool)
	b, _, err := enq.EnqueueInBatch(work.BatchOptions{}, []work.BatchJob{{Name: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	// Values no writer of the library wrote: shown, flagged.
	e.do("DEL", e.key("batch:"+b.ID))
	e.do("HSET", e.key("batch:"+b.ID), "state", "exploded", "total", "many", "c", "-3")
	e.run(nil, "batch", b.ID).want(t, 0, "STATE        exploded", "DAMAGED      yes")
	e.run(nil, "batches").want(t, 0, "exploded (damaged)")
	// Another program overwrote the hash with a string: a clear error for the batch; the list still
	// reads, with the batch flagged as damaged.
	e.do("DEL", e.key("batch:"+b.ID))
	e.do("SET", e.key("batch:"+b.ID), "garbage")
	r := e.run(nil, "batch", b.ID)
	r.want(t, 1)
	if !strings.Contains(r.stderr, "another Redis type") {
		t.Errorf("work batch: %q", r.stderr)
	}
	e.run(nil, "batches").want(t, 0, b.ID)
	e.run(nil, "batches", "--json").want(t, 0, `"damaged": true`)
}

// jobJSONAnswer is what `work job --json` prints: the location's fields and the record.
type jobJSONAnswer struct {
	State       string          `json:"state"`
	Job         *work.Job       `json:"job"`
	Record      *work.JobRecord `json:"record"`
	RecordError string          `json:"record_error"`
}

func TestJobShowsItsRecord(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b, _, members := batchOfFive(t, e)
	done, died, pending := members[0], members[2], members[3]
	enq := work.NewEnqueuer(e.ns, e.pool)
	waiting, err := enq.EnqueueWith("notify", nil, work.EnqueueOptions{AfterBatches: []string{b.ID}})
	if err != nil {
		t.Fatal(err)
	}
	broken, err := enq.EnqueueWith("ping", work.Q{"x": 1}, work.EnqueueOptions{Track: true})
	if err != nil {
		t.Fatal(err)
	}
	jsonOf := func(id string) jobJSONAnswer {
		t.Helper()
		r := e.run(nil, "job", id, "--json")
		r.want(t, 0)
		var a jobJSONAnswer
		if err := json.Unmarshal([]byte(r.stdout), &a); err != nil {
			t.Fatalf("job --json: %s (%v)", r.stdout, err)
		}
		return a
	}

	// Done: in no queue any more, its record tells all.
	r := e.run(nil, "job", done.ID)
	r.want(t, 0, "STATE     done\n", "ATTEMPTS  1\n", "FINISHED  ", `RESULT    {"n":1,"width":640}`, "BATCH     "+b.ID, "POOL      ")
	if strings.Contains(r.stdout, "WHERE") || strings.Contains(r.stdout, "STORED AS") {
		t.Errorf("a done job shows a location:\n%s", r.stdout)
	}
	a := jsonOf(done.ID)
	if a.State != "" || a.Job != nil || a.Record == nil || a.Record.State != "done" || a.Record.Batch != b.ID {
		t.Fatalf("job --json of a done job: %+v %+v", a, a.Record)
	}
	var result bytes.Buffer
	if err := json.Compact(&result, a.Record.Result); err != nil || result.String() != `{"n":1,"width":640}` {
		t.Errorf("job --json of a done job: result %s (%v)", a.Record.Result, err)
	}

	// Dead: its record and its place in the dead set.
	e.run(nil, "job", died.ID).want(t, 0, "STATE      dead\n", "ERROR      image <corrupt>\n", "WHERE      dead\n", "DIED AT", "STORED AS")
	a = jsonOf(died.ID)
	if a.State != "dead" || a.Job == nil || a.Record == nil || a.Record.State != "dead" || a.Record.Err != "image <corrupt>" {
		t.Errorf("job --json of a dead job: %+v %+v", a, a.Record)
	}

	// Pending, without a record: as before, with its batch.
	r = e.run(nil, "job", pending.ID)
	r.want(t, 0, "STATE      queued\n", "BATCH      "+b.ID)
	if a = jsonOf(pending.ID); a.State != "queued" || a.Record != nil || a.Job.Batch != b.ID {
		t.Errorf("job --json of a pending member: %+v", a)
	}

	// Waiting for the batch: in its record only.
	e.run(nil, "job", waiting.ID).want(t, 0, "STATE     waiting for 1 dependency\n")
	if a = jsonOf(waiting.ID); a.State != "" || a.Record == nil || a.Record.WaitingFor != 1 {
		t.Errorf("job --json of a waiting job: %+v", a)
	}

	// A record another program overwrote with a string: the job shows, with a note.
	e.do("DEL", e.key("job:"+broken.ID))
	e.do("SET", e.key("job:"+broken.ID), "garbage")
	e.run(nil, "job", broken.ID).want(t, 0, "RECORD     the job's record cannot be read", "STATE      queued\n", `ARGS       {"x":1}`)
	if a = jsonOf(broken.ID); a.State != "queued" || a.Record != nil || !strings.Contains(a.RecordError, "another Redis type") {
		t.Errorf("job --json with an overwritten record: %+v", a)
	}

	// An ID no record can have is only looked for in the queues and sets.
	e.do("ZADD", e.key("scheduled"), 9999999999, `{"name":"report","id":"periodic:report:0 * * * * *:1","t":1,"args":null}`)
	e.run(nil, "job", "periodic:report:0 * * * * *:1").want(t, 0, "STATE      scheduled\n")
	e.run(nil, "job", "nope").want(t, 3)
}

func TestProgressBarFillsItsWidth(t *testing.T) {
	for _, tc := range []struct {
		done, dead, pending int64
		want                string
	}{
		{0, 0, 0, "[          ]"},
		{0, 0, 7, "[..........]"},
		{1, 1, 1, "[###xxxx...]"},
		{2, 1, 2, "[####xx....]"},
		{9, 0, 0, "[##########]"},
		{1, 0, 999, "[..........]"},
		{3, 1, 0, "[########xx]"},       // more done than the total says: over the parts
		{-5, 2, 2, "[xxxxx.....]"},      // negative counts read as none
		{1 << 40, 1, 0, "[##########]"}, // no overflow
	} {
		got := progressBar(tc.done, tc.dead, tc.pending, 10)
		if got != tc.want {
			t.Errorf("progressBar(%d, %d, %d) = %q, want %q", tc.done, tc.dead, tc.pending, got, tc.want)
		}
		if n := len(got); n != 12 {
			t.Errorf("progressBar(%d, %d, %d) is %d wide", tc.done, tc.dead, tc.pending, n)
		}
	}
}

// TestMalformedBatchIDIsBadUsage: an ID the library refuses (work.CheckID) is refused as bad usage,
// before any round trip; one it accepts reaches Redis and is not found.
func TestMalformedBatchIDIsBadUsage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, id := range []string{"a", "A-b_c.9", strings.Repeat("z", 64), strings.Repeat("z", 65), "a b", "a/b", "a:b", "é", "<x>", "a\n", ".."} {
		r := e.run(nil, "batch", id)
		want := 3 // not found
		if work.CheckID(id) != nil {
			want = 2
		}
		if r.code != want {
			t.Errorf("work batch %q: exit %d (%q), want %d", id, r.code, r.stderr, want)
		}
	}
}
