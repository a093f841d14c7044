package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/workqueue/work"
)

// progressBar draws done, dead and pending members in width cells: '#' done, 'x' dead, '.'
// pending. The cells are shared out over done+dead+pending, which is the total unless the batch is
// damaged.
func progressBar(done, dead, pending int64, width int) string {
	done, dead, pending = max(done, 0), max(dead, 0), max(pending, 0)
	sum := done + dead + pending
	if sum == 0 {
		return "[" + strings.Repeat(" ", width) + "]"
	}
	// Cumulative rounding, so that the parts always fill the bar exactly.
	d := int((done*int64(width) + sum/2) / sum)
	dx := int(((done+dead)*int64(width) + sum/2) / sum)
	return "[" + strings.Repeat("#", d) + strings.Repeat("x", dx-d) + strings.Repeat(".", width-dx) + "]"
}

// endedPercent is the share of members that ended (done or dead), rounded down.
func endedPercent(st *work.BatchStatus) int64 {
	done, dead, pending := max(st.Done, 0), max(st.Dead, 0), max(st.Pending, 0)
	if sum := done + dead + pending; sum > 0 {
		return (done + dead) * 100 / sum
	}
	return 0
}

// batchStatus reads a batch for the commands: a usage error for a malformed ID, not found, or a
// clear error when another program overwrote its key with another type.
func batchStatus(c *work.Client, id string) (*work.BatchStatus, error) {
	if err := work.CheckID(id); err != nil {
		return nil, usageError{libError{err: err, note: " (the batch ID)"}}
	}
	st, err := c.BatchStatus(id)
	switch {
	case errors.Is(err, work.ErrBatchNotFound):
		return nil, notFoundf("no batch %s (never created, or its status expired)", id)
	case errors.Is(err, work.ErrWrongType):
		return nil, fmt.Errorf("batch %s cannot be read: its key holds another Redis type than a hash (another program wrote it)", id)
	}
	return st, err
}

// callbackState says whether a batch's callback fired.
func callbackState(st *work.BatchStatus, name string, fired int64, onSuccess bool) string {
	switch {
	case fired != 0:
		return fmt.Sprintf("%s: fired %s UTC (%s)", name, when(fired), ago(fired))
	case onSuccess && st.Dead > 0:
		return name + ": will not fire (a member died)"
	case onSuccess:
		return name + ": not fired yet (it fires once every member has succeeded)"
	}
	return name + ": not fired yet (it fires once every member has ended)"
}

// printBatch writes a batch's status as a table.
func printBatch(w io.Writer, st *work.BatchStatus) error {
	t := newTable(w, "BATCH", st.ID)
	t.row("DESCRIPTION", orDash(st.Description))
	state := st.State
	switch st.State {
	case "open":
		state += " (members may still be added from outside)"
	case "closed":
		state += " (waiting for its members to end)"
	case "complete":
		state += " (every member has ended)"
	}
	t.row("STATE", state)
	t.row("PROGRESS", fmt.Sprintf("%s %d%% ended", progressBar(st.Done, st.Dead, st.Pending, 30), endedPercent(st)))
	t.row("TOTAL", strconv.FormatInt(st.Total, 10))
	t.row("PENDING", strconv.FormatInt(st.Pending, 10))
	t.row("DONE", strconv.FormatInt(st.Done, 10))
	t.row("DEAD", strconv.FormatInt(st.Dead, 10))
	t.row("FAILED", fmt.Sprintf("%d %s (each retry and each death of a member)", st.Failed, plural(st.Failed, "attempt", "attempts")))
	t.row("CREATED", timeAgo(st.CreatedAt))
	t.row("COMPLETED", timeAgo(st.CompletedAt))
	if st.OnComplete == "" && st.OnSuccess == "" {
		t.row("CALLBACKS", "none")
	}
	if st.OnComplete != "" {
		t.row("ON COMPLETE", callbackState(st, st.OnComplete, st.OnCompleteFired, false))
	}
	if st.OnSuccess != "" {
		t.row("ON SUCCESS", callbackState(st, st.OnSuccess, st.OnSuccessFired, true))
	}
	if st.Damaged {
		t.row("DAMAGED", "yes: its hash holds values no writer of the library wrote; the counts are unreliable")
	}
	return t.flush()
}

// timeAgo renders an epoch time in UTC and relative to now, "-" for 0.
func timeAgo(epoch int64) string {
	if epoch == 0 {
		return "-"
	}
	return fmt.Sprintf("%s UTC (%s)", when(epoch), ago(epoch))
}

func (a *app) batchCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "batch ID",
		Short: "Show a batch: its state, counts, progress and callbacks",
		Long: `Show the status of a batch: description, state (open, closed or complete), members in all,
pending, done and dead, failed attempts, a progress bar ('#' done, 'x' dead, '.' pending), when it
was created and completed, and whether its callbacks fired. One round trip.

It exits 3 when no batch has the ID (never created, or its status expired), 2 for an ID no batch
can have, and 1 when the batch's key holds another Redis type (another program overwrote it).`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, pos []string) error {
			if pos[0] == "" {
				return usagef("the batch ID is empty")
			}
			c, err := a.connect()
			if err != nil {
				return err
			}
			st, err := batchStatus(c, pos[0])
			if err != nil {
				return err
			}
			if a.json {
				return printJSON(a.stdout, st)
			}
			return printBatch(a.stdout, st)
		},
	}
}

func (a *app) batchesCommand() *cobra.Command {
	var page uint
	cmd := &cobra.Command{
		Use:   "batches",
		Short: "List the batches, newest first, 20 a page",
		Long: `List the batches whose status is still kept, newest first, 20 a page: state, progress ('#' done,
'x' dead, '.' pending), counts, creation time and description.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.connect()
			if err != nil {
				return err
			}
			bs, total, err := c.Batches(page)
			if errors.Is(err, work.ErrWrongType) {
				return errors.New("the batches of this page cannot be read: the key of one of them holds another Redis type than a hash (another program wrote it)")
			}
			if err != nil {
				return err
			}
			if a.json {
				return printJSON(a.stdout, struct {
					Count   int64               `json:"count"`
					Batches []*work.BatchStatus `json:"batches"`
				}{total, bs})
			}
			if len(bs) == 0 {
				fmt.Fprintf(a.stdout, "no batches on this page (%d in all)\n", total)
				return nil
			}
			t := newTable(a.stdout, "BATCH", "STATE", "PROGRESS", "DONE", "DEAD", "PENDING", "TOTAL", "CREATED", "DESCRIPTION")
			for _, st := range bs {
				state := st.State
				if st.Damaged {
					state += " (damaged)"
				}
				t.row(st.ID, state, fmt.Sprintf("%s %3d%%", progressBar(st.Done, st.Dead, st.Pending, 20), endedPercent(st)),
					strconv.FormatInt(st.Done, 10), strconv.FormatInt(st.Dead, 10), strconv.FormatInt(st.Pending, 10),
					strconv.FormatInt(st.Total, 10), ago(st.CreatedAt), short(orDash(st.Description), 50))
			}
			if err := t.flush(); err != nil {
				return err
			}
			pageFooter(a.stdout, page, total, "batch", "batches")
			return nil
		},
	}
	cmd.Flags().UintVar(&page, "page", 1, "page to show")
	return cmd
}

// jobReport is what `work job` knows of a job: its record, when it has one, and where it is, when
// it is still in a queue or set.
type jobReport struct {
	loc       *work.JobLocation
	record    *work.JobRecord
	recordErr string // the record exists but cannot be read
}

// findJob looks the job up (work.Client.LookupJob: its record, then where it is unless the record
// says it cannot be in a queue or set); ErrJobNotFound when it has neither.
func findJob(c *work.Client, id string) (*jobReport, error) {
	l, err := c.LookupJob(id)
	if err != nil {
		return nil, err
	}
	r := &jobReport{loc: l.Location, record: l.Record}
	if l.RecordErr != nil {
		r.recordErr = "the job's record cannot be read: its key holds another Redis type than a hash (another program wrote it)"
	}
	return r, nil
}

// MarshalJSON encodes the report as `work job --json` prints it: the location's fields, as they
// were before records existed, with "record" (or "record_error") added.
func (r *jobReport) MarshalJSON() ([]byte, error) {
	encode := func(v interface{}) ([]byte, error) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return nil, err
		}
		return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
	}
	out := []byte("{")
	if r.loc != nil {
		b, err := encode(r.loc)
		if err != nil {
			return nil, err
		}
		out = b[:len(b)-1]
	}
	add := func(key string, val interface{}) error {
		b, err := encode(val)
		if err != nil {
			return err
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(append(append(out, strconv.Quote(key)...), ':'), b...)
		return nil
	}
	if r.record != nil {
		if err := add("record", r.record); err != nil {
			return nil, err
		}
	}
	if r.recordErr != "" {
		if err := add("record_error", r.recordErr); err != nil {
			return nil, err
		}
	}
	return append(out, '}'), nil
}

// print writes the report as a table: the record's rows, then the location's.
func (r *jobReport) print(w io.Writer, id string) error {
	t := newTable(w, "ID", orDash(id))
	if rec := r.record; rec != nil {
		t.row("NAME", orDash(rec.Name))
		state := string(rec.State)
		if rec.State == work.JobStateWaiting && rec.WaitingFor > 0 {
			state += fmt.Sprintf(" for %d %s", rec.WaitingFor, plural(rec.WaitingFor, "dependency", "dependencies"))
		}
		if r.loc == nil && rec.State.Findable() {
			state += " (in no queue or set any more)"
		}
		if rec.State == work.JobStateRunning && rec.Attempt > 0 {
			state += fmt.Sprintf(" (attempt %d)", rec.Attempt)
		}
		t.row("STATE", state)
		if rec.StartedAt != 0 {
			t.row("STARTED", timeAgo(rec.StartedAt))
		}
		if p := rec.Progress; p != nil {
			progress := fmt.Sprintf("%d%%", p.Percent())
			if p.Message != "" {
				progress += " " + p.Message
			}
			if p.At != 0 {
				progress += " (" + ago(p.At) + ")"
			}
			t.row("PROGRESS", progress)
		}
		t.row("ATTEMPTS", strconv.FormatInt(rec.Attempts, 10))
		if rec.EnqueuedAt != 0 {
			t.row("ENQUEUED", timeAgo(rec.EnqueuedAt))
		}
		t.row("FINISHED", timeAgo(rec.FinishedAt))
		if rec.Pool != "" {
			t.row("POOL", rec.Pool)
		}
		if rec.Err != "" {
			t.row("ERROR", rec.Err)
		}
		if len(rec.Result) > 0 {
			t.row("RESULT", compactJSON(rec.Result))
		}
		if rec.Batch != "" {
			t.row("BATCH", rec.Batch)
		}
	}
	if r.recordErr != "" {
		t.row("RECORD", r.recordErr)
	}
	if loc := r.loc; loc != nil {
		j := loc.Job
		where := string(loc.State)
		if loc.PoolID != "" {
			where += " (pool " + loc.PoolID + ")"
		}
		if r.record == nil {
			t.row("NAME", orDash(j.Name))
			t.row("STATE", where)
		} else {
			t.row("WHERE", where)
		}
		if loc.Score != 0 {
			label := map[work.JobState]string{work.JobStateScheduled: "RUN AT", work.JobStateRetry: "RETRY AT", work.JobStateDead: "DIED AT"}[loc.State]
			t.row(label, fmt.Sprintf("%s UTC (%s; score %d)", when(loc.Score), ago(loc.Score), loc.Score))
		}
		if r.record == nil || r.record.EnqueuedAt == 0 {
			t.row("ENQUEUED", when(j.EnqueuedAt)+" UTC")
		}
		if r.record == nil {
			// A record counts the attempts: one figure is enough.
			t.row("FAILS", strconv.FormatInt(j.Fails, 10))
		}
		switch {
		case j.LastErr == "":
		case r.record == nil:
			t.row("ERROR", j.LastErr)
		case j.LastErr != r.record.Err:
			t.row("LAST ERROR", j.LastErr)
		}
		if j.FailedAt != 0 {
			t.row("FAILED AT", when(j.FailedAt)+" UTC")
		}
		if j.Unique {
			t.row("UNIQUE", orDash(j.UniqueKey))
		}
		if j.Batch != "" && (r.record == nil || r.record.Batch == "") {
			t.row("BATCH", j.Batch)
		}
		if len(j.Raw) > 0 {
			text, isBase64 := rawText(j.Raw)
			label := "RAW PAYLOAD"
			if isBase64 {
				label += " (BASE64)"
			}
			t.row(label, text)
		} else {
			t.row("ARGS", compactJSON(j.Args))
		}
		t.row("STORED AS", loc.Payload)
	}
	return t.flush()
}
