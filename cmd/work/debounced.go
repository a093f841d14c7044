package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/workqueue/work"
)

// The pending bursts of debounced enqueues (work.Debounce), and the edits of a job waiting in the
// scheduled or retry set by its ID: what makes a burst, and what an edit does to it, is the
// library's.

func (a *app) debouncedCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "debounced",
		Short: "List the bursts of debounced enqueues whose job has not run yet",
		Long: `List the bursts of debounced enqueues (EnqueueOptions.Debounce) whose job has not run yet, the
soonest to run first: job name, debounce ID, enqueues so far, when the burst began, when its job
runs (unless more enqueues come), window, maximum wait, and the pending job's ID and args.

The job ID is what "work job", "work reschedule" and "work replace-args" take.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.connect()
			if err != nil {
				return err
			}
			bs, err := c.PendingBursts()
			if err != nil {
				return err
			}
			if a.json {
				if bs == nil {
					bs = []*work.PendingBurst{}
				}
				return printJSON(a.stdout, bs)
			}
			if len(bs) == 0 {
				_, err := fmt.Fprintln(a.stdout, "no pending bursts: EnqueueOptions.Debounce makes them")
				return err
			}
			t := newTable(a.stdout, "JOB", "DEBOUNCE ID", "ENQUEUES", "FIRST", "RUNS AT (UTC)", "RUNS", "WINDOW", "MAX WAIT", "JOB ID", "ARGS")
			for _, b := range bs {
				maxWait := "none"
				if b.MaxWait > 0 {
					maxWait = seconds(int64(b.MaxWait / time.Second))
				}
				t.row(b.Name, short(b.ID, 40), strconv.FormatInt(b.Enqueues, 10), ago(b.First.Unix()), when(b.RunAt.Unix()),
					ago(b.RunAt.Unix()), seconds(int64(b.Window/time.Second)), maxWait, orDash(b.Job.ID), short(argsOf(b.Job), 60))
			}
			if err := t.flush(); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "%d pending %s\n", len(bs), plural(int64(len(bs)), "burst", "bursts"))
			return nil
		},
	}
}

// runAtLayouts are the absolute forms of a run time: RFC 3339, and the form the tables print (UTC).
var runAtLayouts = []string{time.RFC3339, "2006-01-02 15:04:05", "2006-01-02T15:04:05"}

// parseRunAt reads a run time: "+DURATION" from now, or an absolute time (UTC unless it says).
func parseRunAt(s string, now time.Time) (time.Time, error) {
	if d, ok := strings.CutPrefix(s, "+"); ok {
		dur, err := time.ParseDuration(d)
		if err != nil {
			return time.Time{}, usagef("bad duration %q: want +DURATION, as +10m or +1h30m", s)
		}
		return now.Add(dur), nil
	}
	for _, l := range runAtLayouts {
		if t, err := time.ParseInLocation(l, s, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, usagef("bad time %q: want an RFC 3339 time (2030-01-02T15:04:05Z), a UTC time as the tables print it (\"2030-01-02 15:04:05\"), or +DURATION from now", s)
}

// pendingError turns the library's answer to an edit of a waiting job into the command's: no such
// job waiting is not found, args it refuses bad usage.
func pendingError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, work.ErrJobNotFound):
		return notFoundError{libError{err: err, note: " (a queued or running job cannot be edited)"}}
	case errors.Is(err, work.ErrMalformedArgs):
		return usageError{libError{err: err}}
	}
	return libError{err: err}
}

func (a *app) rescheduleCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "reschedule JOB-ID TIME|+DURATION",
		Short: "Move a job waiting in the scheduled or retry set to another time",
		Long: `Move a job waiting in the scheduled or retry set to run at another time, to the second, unchanged
otherwise. TIME is RFC 3339 (2030-01-02T15:04:05Z), or a UTC time as the tables print it
("2030-01-02 15:04:05"); +DURATION is from now (+10m, +1h30m; +0s: due now).

The pending job of a debounced burst stays the burst's: a later enqueue of the burst still
replaces it and moves it again. It exits 3 when no job with the ID waits in either set (a queued or
running job cannot be moved).`,
		Args: args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, pos []string) error {
			if pos[0] == "" {
				return usagef("the job ID is empty")
			}
			at, err := parseRunAt(pos[1], time.Now())
			if err != nil {
				return err
			}
			c, err := a.connect()
			if err != nil {
				return err
			}
			if err := pendingError(c.RescheduleJob(pos[0], at)); err != nil {
				return err
			}
			if a.json {
				return printJSON(a.stdout, map[string]interface{}{"job_id": pos[0], "status": "rescheduled", "run_at": at.Truncate(time.Second).UTC()})
			}
			fmt.Fprintf(a.stdout, "job %s runs at %s UTC (%s)\n", pos[0], when(at.Unix()), ago(at.Unix()))
			return nil
		},
	}
}

func (a *app) replaceArgsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "replace-args JOB-ID JSON",
		Short: "Give a job waiting in the scheduled or retry set other args",
		Long: `Give a job waiting in the scheduled or retry set other args (a JSON object, or null for none),
keeping its ID, its run time and the rest.

The pending job of a debounced burst stays the burst's: a later enqueue of the burst still
replaces it (unless its burst keeps the first args). It exits 3 when no job with the ID waits in
either set (a queued or running job cannot be edited), and 2 for args that are not a JSON object.`,
		Args: args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, pos []string) error {
			if pos[0] == "" {
				return usagef("the job ID is empty")
			}
			jobArgs, err := work.ParseArgs(pos[1])
			if err != nil {
				return pendingError(err)
			}
			c, err := a.connect()
			if err != nil {
				return err
			}
			if err := pendingError(c.ReplaceJobArgs(pos[0], jobArgs)); err != nil {
				return err
			}
			if a.json {
				return printJSON(a.stdout, map[string]interface{}{"job_id": pos[0], "status": "replaced", "args": jobArgs})
			}
			fmt.Fprintf(a.stdout, "job %s has new args: %s\n", pos[0], compactJSON(jobArgs))
			return nil
		},
	}
}
