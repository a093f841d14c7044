package main

// `work schedules`: the schedules stored in Redis (work.Client.SetSchedule) and the periodic jobs
// the live pools declare in code, side by side; one schedule with its next ticks; and setting,
// deleting, pausing, resuming and running one. Input is checked by the library (work.CheckScheduleID,
// ParseArgs, ParseMissedPolicy, and SetSchedule before any round trip): its sentinel errors say which
// flag is wrong.

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/workqueue/work"
)

// scheduleFlagOf names the flag of `work schedules set` that the library's refusal is about.
var scheduleFlagOf = []struct {
	err  error
	flag string
}{
	{work.ErrMalformedSpec, "spec"},
	{work.ErrUnknownLocation, "location"},
	{work.ErrMalformedJobName, "job"},
	{work.ErrMalformedKey, "key"},
	{work.ErrMalformedArgs, "args"},
}

// scheduleError turns the library's refusal of a schedule into bad usage (naming the flag at
// fault), an unknown schedule into not found (saying that a periodic job declared in code cannot be
// changed here), and a damaged record into a clear error.
func scheduleError(id string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, work.ErrMalformedSchedule):
		return usageError{libError{err: err}}
	case errors.Is(err, work.ErrScheduleNotFound):
		return notFoundError{libError{err: err}}
	case errors.Is(err, work.ErrDamagedSchedule):
		return libError{err: err, note: "; another program wrote it: delete the schedule, or set it again"}
	case errors.Is(err, work.ErrWrongType):
		return errors.New("the schedules cannot be read or changed: a key of theirs holds another Redis type (another program wrote it)")
	}
	for _, f := range scheduleFlagOf {
		if errors.Is(err, f.err) {
			return flagError(f.flag, err)
		}
	}
	return libError{err: err}
}

// checkScheduleID refuses, as bad usage, an ID no schedule can have.
func checkScheduleID(id string) error { return scheduleError(id, work.CheckScheduleID(id)) }

// connectFor checks the schedule ID a command was given, then connects: bad usage goes before any
// dial.
func (a *app) connectFor(id string) (*work.Client, error) {
	if err := checkScheduleID(id); err != nil {
		return nil, err
	}
	return a.connect()
}

// scheduleStatus is a schedule's status (work.ScheduleInfo.Status) in a word or two.
func scheduleStatus(s *work.ScheduleInfo) string {
	switch st := s.Status(); st {
	case work.SchedulePeriodic:
		return "in code"
	case work.ScheduleDamaged:
		return "damaged: " + s.Damaged
	case work.ScheduleEnded:
		return "no tick to come"
	default:
		return st.String()
	}
}

// whenIn renders an epoch time in UTC, how far it is, and the time in the schedule's zone.
func whenIn(epoch int64, in *work.ScheduleInfo) string {
	if epoch == 0 {
		return "-"
	}
	s := when(epoch) + " UTC (" + ago(epoch) + ")"
	if loc := in.Zone(); loc != time.UTC {
		s += ", " + time.Unix(epoch, 0).In(loc).Format("2006-01-02 15:04:05 MST")
	}
	return s
}

// scheduleShown is what `work schedules show --json` prints: the schedule and its next ticks.
type scheduleShown struct {
	*work.ScheduleInfo
	NextTicks []int64 `json:"next_ticks"`
}

// printSchedule writes one schedule as a table: its definition, state and next ticks.
func printSchedule(w io.Writer, s *work.ScheduleInfo) error {
	t := newTable(w, "ID", s.ID)
	t.row("STATUS", scheduleStatus(s))
	if s.Damaged != "" {
		t.row("", "its record cannot be read (another program wrote it): it does not fire until it is set again")
		return t.flush()
	}
	if s.Periodic {
		t.row("", "a periodic job declared in code (WorkerPool.PeriodicallyEnqueue) by the pools "+strings.Join(s.WorkerPoolIDs, ", "))
	}
	t.row("JOB", s.JobName)
	t.row("SPEC", s.Spec)
	t.row("LOCATION", orDash(s.Location))
	if !s.Periodic {
		t.row("KEY", orDash(s.Key))
		args := "-"
		if s.Args != nil {
			args = compactJSON(s.Args)
		}
		t.row("ARGS", args)
		jitter := "-"
		if s.Jitter > 0 {
			jitter = seconds(int64(s.Jitter / time.Second))
		}
		t.row("JITTER", jitter)
		t.row("MISSED", s.Missed.String())
		t.row("LAST TICK", whenIn(s.LastTick, s))
	}
	t.row("NEXT RUN", whenIn(s.NextRun, s))
	for i, tick := range s.NextTicks(5) {
		label := ""
		if i == 0 {
			label = "NEXT TICKS"
		}
		t.row(label, whenIn(tick, s))
	}
	return t.flush()
}

// schedulePageSize is how many schedules `work schedules list` shows a page by default; gathering
// them takes at most scheduleScanCalls round trips (a search reads the schedules 1,000 at a time).
const (
	schedulePageSize  = 50
	scheduleScanCalls = 10
)

func (a *app) schedulesCommand() *cobra.Command {
	var (
		prefix, cursor string
		count          int
		storedOnly     bool
		all            bool
	)
	list := &cobra.Command{
		Use:   "list [--prefix P] [--cursor C] [--count N] [--stored-only] [--all]",
		Short: "List the schedules, and the periodic jobs of the live pools, a page at a time",
		Long: `List the schedules stored in Redis (Client.Schedules) and, on the first page, the periodic jobs
that the live pools declare in code, marked "in code": for each, its job, spec and time zone, key,
next run, last tick and status (active, paused, or damaged with the reason). A page holds about
--count schedules, sorted by ID, the periodic jobs first; its last line gives the --cursor of the
next page. With --prefix, only the IDs that start with it. With --all, every page.

With --json it prints {"schedules":[...],"next":CURSOR,"stored":N} (next "" on the last page).`,
		Example: `  work schedules list
  work schedules list --prefix report:
  work schedules list --all --stored-only --json`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if prefix != "" {
				if err := work.CheckScheduleID(prefix); err != nil {
					return flagError("prefix", err)
				}
			}
			if count < 1 || count > 10000 {
				return usagef("--count must be from 1 to 10000")
			}
			if all && cmd.Flags().Changed("cursor") {
				return usagef("--all walks every page: give no --cursor with it")
			}
			c, err := a.connect()
			if err != nil {
				return err
			}
			// Gather about count schedules, in a few round trips: a search reads more, most not
			// matching.
			scan := count
			if prefix != "" {
				scan = max(count, 1000)
			}
			page := &work.SchedulePage{Schedules: []*work.ScheduleInfo{}}
			next := cursor
			for calls := 0; all || calls < scheduleScanCalls; calls++ {
				p, err := c.Schedules(work.ScheduleQuery{Cursor: next, Count: scan, Prefix: prefix, StoredOnly: storedOnly})
				if err != nil {
					return scheduleError("", err)
				}
				page.Schedules = append(page.Schedules, p.Schedules...)
				page.Stored, next = p.Stored, p.Next
				if next == "" || (!all && len(page.Schedules) >= count) {
					break
				}
			}
			page.Next = next
			sort.SliceStable(page.Schedules, func(i, j int) bool {
				si, sj := page.Schedules[i], page.Schedules[j]
				if si.Periodic != sj.Periodic {
					return si.Periodic
				}
				return si.ID < sj.ID
			})
			if a.json {
				return printJSON(a.stdout, page)
			}
			if len(page.Schedules) == 0 {
				switch {
				case prefix != "" && next != "":
					fmt.Fprintf(a.stdout, "no schedule's ID starts with %s among those read so far; next page: --cursor %s\n", prefix, next)
				case prefix != "":
					fmt.Fprintf(a.stdout, "no schedule's ID starts with %s\n", prefix)
				case next != "":
					fmt.Fprintf(a.stdout, "no schedules on this page; next page: --cursor %s\n", next)
				default:
					fmt.Fprintln(a.stdout, "no schedules: none is stored, and no live worker pool declares a periodic job")
				}
				return nil
			}
			t := newTable(a.stdout, "ID", "JOB", "SPEC", "LOCATION", "KEY", "NEXT RUN (UTC)", "WHEN", "LAST TICK (UTC)", "STATUS")
			for _, s := range page.Schedules {
				in := "-"
				if s.NextRun != 0 {
					in = ago(s.NextRun)
				}
				t.row(short(s.ID, 60), orDash(s.JobName), orDash(s.Spec), orDash(s.Location), short(orDash(s.Key), 40), when(s.NextRun), in,
					when(s.LastTick), short(scheduleStatus(s), 80))
			}
			if err := t.flush(); err != nil {
				return err
			}
			footer := fmt.Sprintf("%d %s stored", page.Stored, plural(page.Stored, "schedule", "schedules"))
			if next != "" {
				footer += "; next page: --cursor " + next
			}
			_, err = fmt.Fprintln(a.stdout, footer)
			return err
		},
	}
	f := list.Flags()
	f.StringVar(&prefix, "prefix", "", "only the schedules whose ID starts with this")
	f.StringVar(&cursor, "cursor", "", "the page that starts at this cursor (from the last line of the page before)")
	f.IntVar(&count, "count", schedulePageSize, "about how many schedules a page shows")
	f.BoolVar(&storedOnly, "stored-only", false, "leave out the periodic jobs declared in code")
	f.BoolVar(&all, "all", false, "every page")

	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show one schedule: its definition, state and next ticks",
		Long: `Show one schedule, or a periodic job declared in code (its ID as "work schedules list" shows
it): job, spec, time zone, key, args, jitter, what becomes of missed ticks, its last tick, its next
run and next five ticks, in UTC and in its zone. A damaged record shows with the reason.

With --json it prints the schedule with "next_ticks".`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, pos []string) error {
			id := pos[0]
			c, err := a.connectFor(id)
			if err != nil {
				return err
			}
			s, err := c.FindSchedule(id)
			if err != nil {
				return scheduleError(id, err)
			}
			if a.json {
				return printJSON(a.stdout, scheduleShown{ScheduleInfo: s, NextTicks: s.NextTicks(5)})
			}
			return printSchedule(a.stdout, s)
		},
	}

	cmd := group(&cobra.Command{
		Use:   "schedules",
		Short: "Schedules set at run time, and the periodic jobs of the live pools: list, show, set, delete, pause, resume, run",
		Long: `Schedules enqueue a job on a cron spec, in a time zone, with args and a key; they are set at run
time (Client.SetSchedule) and kept in Redis, and any live worker pool enqueues each of their ticks
once. The periodic jobs that pools declare in code (WorkerPool.PeriodicallyEnqueue) are listed
beside them, but change with the code only.

An unknown schedule exits with status 3; a malformed ID, spec, zone, job name, key or args is bad
usage (status 2).`,
		Example: `  work schedules list --prefix report:
  work schedules show report:acme
  work schedules set report:acme --spec "0 0 9 * * MON" --location Europe/Berlin --job send_report \
      --args '{"customer":"acme"}' --key acme --jitter 5m --missed run-latest
  work schedules pause report:acme
  work schedules run report:acme`,
	}, list, show, a.scheduleSetCommand())
	cmd.AddCommand(a.scheduleControlCommands()...)
	return cmd
}

func (a *app) scheduleSetCommand() *cobra.Command {
	var (
		s              work.Schedule
		argsJSON, miss string
	)
	cmd := &cobra.Command{
		Use:   "set ID --spec SPEC --job NAME [--location ZONE] [--args JSON] [--key KEY] [--jitter D] [--missed skip|run-latest]",
		Short: "Create a schedule, or replace its definition",
		Long: `Create the schedule ID, or replace its whole definition (a flag not given takes its default),
atomically. Setting a schedule to the definition it has changes nothing, so a deploy may run it on
each start; a replaced schedule stays paused if it was, and no tick it enqueued is enqueued again.

  --spec      when the ticks fall, seconds first: "0 0 9 * * MON" (Mondays at 9:00), or a
              descriptor: "@daily", "@every 1h"
  --location  the IANA time zone the spec is read in (default UTC): Europe/Berlin
  --job       the name of the job each tick enqueues
  --args      its args, a JSON object
  --key       its key, for a keyed job (a customer, an account)
  --jitter    delays each tick's job by up to this (less a second), the same in every pool
  --missed    a tick missed while no pool ran: skip (default), or run-latest (enqueue the latest
              once, however late)

It prints the schedule as "work schedules show" does.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, pos []string) error {
			s.ID = pos[0]
			if err := checkScheduleID(s.ID); err != nil {
				return err
			}
			for _, f := range []string{"spec", "job"} {
				if !cmd.Flags().Changed(f) {
					return usagef("--%s is required", f)
				}
			}
			var err error
			if s.Args, err = work.ParseArgs(argsJSON); err != nil { // keeps large integers exact
				return flagError("args", err)
			}
			if s.Missed, err = work.ParseMissedPolicy(miss); err != nil {
				return flagError("missed", err)
			}
			c, err := a.connect()
			if err != nil {
				return err
			}
			if err := c.SetSchedule(s); errors.Is(err, work.ErrMalformedSchedule) {
				// The ID and the missed policy passed: the jitter is out of bounds.
				return flagError("jitter", err)
			} else if err != nil {
				return scheduleError(s.ID, err)
			}
			got, err := c.Schedule(s.ID)
			if err != nil {
				return scheduleError(s.ID, err)
			}
			if a.json {
				return printJSON(a.stdout, scheduleShown{ScheduleInfo: got, NextTicks: got.NextTicks(5)})
			}
			return printSchedule(a.stdout, got)
		},
	}
	f := cmd.Flags()
	f.StringVar(&s.Spec, "spec", "", `when the ticks fall: "second minute hour day-of-month month [day-of-week]", or "@daily", "@every 1h"`)
	f.StringVar(&s.Location, "location", "", "the IANA time zone of the spec (default UTC)")
	f.StringVar(&s.JobName, "job", "", "the name of the job each tick enqueues")
	f.StringVar(&argsJSON, "args", "", "the job's args, a JSON object")
	f.StringVar(&s.Key, "key", "", "the job's key, for a keyed job")
	f.DurationVar(&s.Jitter, "jitter", 0, "delay each tick's job by up to this, as 30s or 5m")
	f.StringVar(&miss, "missed", "skip", "a tick missed while no pool ran: skip or run-latest")
	return cmd
}

// scheduleResult is what delete, pause, resume and run print with --json; run adds the job.
type scheduleResult struct {
	ID     string    `json:"id"`
	Status string    `json:"status"`
	Job    *work.Job `json:"job,omitempty"`
}

func (a *app) scheduleControlCommands() []*cobra.Command {
	control := func(use, short, status string, do func(c *work.Client, id string) (*work.Job, error), said func(id string, j *work.Job) string) *cobra.Command {
		return &cobra.Command{
			Use:   use,
			Short: short,
			Args:  args(cobra.ExactArgs(1)),
			RunE: func(cmd *cobra.Command, pos []string) error {
				id := pos[0]
				c, err := a.connectFor(id)
				if err != nil {
					return err
				}
				j, err := do(c, id)
				if err != nil {
					return scheduleError(id, err)
				}
				if a.json {
					return printJSON(a.stdout, scheduleResult{ID: id, Status: status, Job: j})
				}
				_, err = fmt.Fprintln(a.stdout, said(id, j))
				return err
			},
		}
	}
	noJob := func(f func(c *work.Client, id string) error) func(c *work.Client, id string) (*work.Job, error) {
		return func(c *work.Client, id string) (*work.Job, error) { return nil, f(c, id) }
	}
	resume := control("resume ID", "Resume a paused schedule from its next tick", "resumed",
		noJob(func(c *work.Client, id string) error { return c.ResumeSchedule(id) }),
		func(id string, _ *work.Job) string {
			return "resumed schedule " + id + " from its next tick (the ticks that fell while it was paused are not enqueued)"
		})
	resume.Aliases = []string{"unpause"}
	return []*cobra.Command{
		control("delete ID", "Delete a schedule; its jobs already enqueued stay", "deleted",
			noJob(func(c *work.Client, id string) error { return c.DeleteSchedule(id) }),
			func(id string, _ *work.Job) string { return "deleted schedule " + id }),
		control("pause ID", "Pause a schedule: none of its ticks is enqueued until it is resumed", "paused",
			noJob(func(c *work.Client, id string) error { return c.PauseSchedule(id) }),
			func(id string, _ *work.Job) string { return "paused schedule " + id }),
		resume,
		control("run ID", "Enqueue a schedule's job now, paused or not; its own ticks do not change", "run",
			func(c *work.Client, id string) (*work.Job, error) { return c.RunScheduleNow(id) },
			func(id string, j *work.Job) string {
				return fmt.Sprintf("enqueued %s job %s%s for schedule %s (tick %d)", j.Name, j.ID, ofKey(j.Key), id, j.Tick)
			}),
	}
}
