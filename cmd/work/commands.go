package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/workqueue/work"
)

// statsReport is what `work stats` reports.
type statsReport struct {
	Namespace   string        `json:"namespace"`
	Summary     *work.Summary `json:"summary"`
	WorkerPools int           `json:"worker_pools"`
	// StalePools counts the pools among WorkerPools whose heartbeat is older than they declared
	// (WorkerPoolHeartbeat.Stale): their peers take them for dead.
	StalePools  int       `json:"stale_worker_pools"`
	Workers     int       `json:"workers"`
	BusyWorkers int       `json:"busy_workers"`
	Since       time.Time `json:"since"`
	Processed   int64     `json:"processed"`
	Failed      int64     `json:"failed"`
	// Backlogs are what relays report waiting in other stores to be enqueued; [] when none does.
	Backlogs []*work.Backlog `json:"backlogs"`
}

func (a *app) collectStats(c *work.Client, since time.Duration) (*statsReport, error) {
	sum, err := c.Summary()
	if err != nil {
		return nil, err
	}
	hbs, err := c.WorkerPoolHeartbeats()
	if err != nil {
		return nil, err
	}
	obs, err := c.WorkerObservations()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	r := &statsReport{Namespace: a.ns, Summary: sum, WorkerPools: len(hbs), Workers: len(obs), Since: now.Add(-since).UTC().Truncate(time.Minute)}
	for _, ob := range obs {
		if ob.IsBusy {
			r.BusyWorkers++
		}
	}
	for _, hb := range hbs {
		if hb.Stale(now) {
			r.StalePools++
		}
	}
	pts, err := c.NamespaceStats(now.Add(-since), now)
	if err != nil {
		return nil, err
	}
	for _, p := range pts {
		r.Processed += p.Processed
		r.Failed += p.Failed
	}
	if r.Backlogs, err = c.Backlogs(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *statsReport) print(w io.Writer, since time.Duration) error {
	t := newTable(w, "NAMESPACE", r.Namespace)
	s := r.Summary
	t.row("QUEUED", fmt.Sprintf("%d in %d queues (%d paused)", s.Queued, s.Queues, s.Paused))
	t.row("IN FLIGHT", strconv.FormatInt(s.InFlight, 10))
	t.row("SCHEDULED", strconv.FormatInt(s.Scheduled, 10))
	t.row("DEBOUNCED", fmt.Sprintf("%d pending bursts", s.Debounced))
	t.row("RETRY", strconv.FormatInt(s.Retry, 10))
	t.row("DEAD", strconv.FormatInt(s.Dead, 10))
	workers := fmt.Sprintf("%d busy of %d in %d pools", r.BusyWorkers, r.Workers, r.WorkerPools)
	if r.StalePools > 0 {
		workers += fmt.Sprintf(" (%d stale)", r.StalePools)
	}
	t.row("WORKERS", workers)
	t.row("LAST "+seconds(int64(since.Seconds())), fmt.Sprintf("%d processed, %d failed", r.Processed, r.Failed))
	if err := t.flush(); err != nil {
		return err
	}
	return printBacklogs(w, r.Backlogs, time.Now())
}

// printBacklogs prints the backlogs under the totals, nothing when no relay reports one.
func printBacklogs(w io.Writer, bs []*work.Backlog, now time.Time) error {
	if len(bs) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	t := newTable(w, "BACKLOG", "WAITING", "OLDEST", "REPORTED")
	for _, b := range bs {
		oldest := "-"
		if !b.Oldest.IsZero() {
			oldest = seconds(int64(b.Age().Seconds()))
		}
		silent := b.Silent(now)
		reported := seconds(int64(silent.Seconds())) + " ago"
		if b.Stale(now) {
			reported += " (no relay reported for " + seconds(int64(silent.Seconds())) + ")"
		}
		t.row(b.Source, strconv.FormatInt(b.Waiting, 10), oldest, reported)
	}
	return t.flush()
}

func (a *app) statsCommand() *cobra.Command {
	var since time.Duration
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Show totals, throughput and the backlogs relays report",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if since < time.Minute || since > 8*24*time.Hour {
				return usagef("--since must be from 1m to 192h")
			}
			c, err := a.connect()
			if err != nil {
				return err
			}
			r, err := a.collectStats(c, since)
			if err != nil {
				return err
			}
			if a.json {
				return printJSON(a.stdout, r)
			}
			return r.print(a.stdout, since)
		},
	}
	cmd.Flags().DurationVar(&since, "since", time.Hour, "count the jobs finished in this last stretch of time (1m to 192h)")
	return cmd
}

func printQueues(w io.Writer, qs []*work.QueueStat) error {
	if len(qs) == 0 {
		_, err := fmt.Fprintln(w, "no queues")
		return err
	}
	t := newTable(w, "QUEUE", "COUNT", "LATENCY", "IN FLIGHT", "MAX", "STATUS")
	for _, q := range qs {
		max, status := "-", "running"
		if q.MaxConcurrency > 0 {
			max = strconv.FormatInt(q.MaxConcurrency, 10)
		}
		if q.Paused {
			status = "paused"
		}
		t.row(q.JobName, strconv.FormatInt(q.Count, 10), seconds(q.Latency), strconv.FormatInt(q.InFlight, 10), max, status)
	}
	return t.flush()
}

func (a *app) queuesCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "queues",
		Short: "List the queues: size, latency, jobs in flight, paused",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.connect()
			if err != nil {
				return err
			}
			qs, err := c.QueueStats()
			if err != nil {
				return err
			}
			if a.json {
				return printJSON(a.stdout, qs)
			}
			return printQueues(a.stdout, qs)
		},
	}
}

// enqueueResult is what `work enqueue --json` prints.
type enqueueResult struct {
	Enqueued bool      `json:"enqueued"`
	Job      *work.Job `json:"job,omitempty"`
	RunAt    int64     `json:"run_at,omitempty"`
}

func (a *app) enqueueCommand() *cobra.Command {
	var (
		argsJSON string
		in       time.Duration
		unique   bool
		key      string
	)
	cmd := &cobra.Command{
		Use:   "enqueue NAME",
		Short: "Enqueue a job",
		Long: `Enqueue a job named NAME with the arguments given as a JSON object.

With --in it is scheduled to run that much later; with --unique it is not enqueued when a job of
the same name and arguments is already waiting (the command then says so and succeeds). With --key
it is a keyed job: it waits in its key's queue and is served in its key's turn ("work keys").`,
		Example: `  work enqueue send_email --args '{"to":"a@example.com"}'
  work enqueue report --in 10m --unique
  work enqueue sync_account --key acme`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, pos []string) error {
			name := pos[0]
			if err := work.CheckJobName(name); err != nil {
				return usageError{libError{err: err}}
			}
			q, err := work.ParseArgs(argsJSON) // keeps large integers exact
			if err != nil {
				return flagError("args", err)
			}
			if in < 0 {
				return usagef("--in must not be negative")
			}
			secs := int64(math.Ceil(in.Seconds()))
			if _, err := a.connect(); err != nil {
				return err
			}
			e := work.NewEnqueuer(a.ns, a.pool)
			// EnqueueWith serves every combination: keyed or not, unique or not, now or later.
			opts := work.EnqueueOptions{Key: key, Unique: unique}
			if secs > 0 {
				opts.At = time.Now().Add(time.Duration(secs) * time.Second)
			}
			j, err := e.EnqueueWith(name, q, opts)
			if errors.Is(err, work.ErrMalformedKey) {
				return malformedKey(err)
			}
			if err != nil {
				return err
			}
			res := enqueueResult{}
			if j != nil {
				res = enqueueResult{Enqueued: true, Job: j}
				if secs > 0 {
					res.RunAt = opts.At.Unix()
				}
			}
			if a.json {
				return printJSON(a.stdout, res)
			}
			switch {
			case !res.Enqueued:
				fmt.Fprintf(a.stdout, "not enqueued: a %s job with the same arguments is already waiting\n", name)
			case res.RunAt != 0:
				fmt.Fprintf(a.stdout, "scheduled %s job %s%s to run at %s UTC (%s)\n", name, res.Job.ID, ofKey(key), when(res.RunAt), ago(res.RunAt))
			default:
				fmt.Fprintf(a.stdout, "enqueued %s job %s%s\n", name, res.Job.ID, ofKey(key))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&argsJSON, "args", "{}", "the job's arguments, a JSON object")
	cmd.Flags().DurationVar(&in, "in", 0, "schedule the job to run this much later (30s, 5m, 2h)")
	cmd.Flags().BoolVar(&unique, "unique", false, "skip the job when an identical one is already waiting")
	cmd.Flags().StringVar(&key, "key", "", "enqueue a keyed job of this key (a tenant, an account)")
	return cmd
}

// ofKey says which key an enqueued job has, if any.
func ofKey(key string) string {
	if key == "" {
		return ""
	}
	return " of key " + key
}

// setInfo describes one of the sorted sets for the set commands.
type setInfo struct {
	state      work.JobState
	scoreTitle string // the list's score column
	retryVerb  string // what "retry" does
	retry      func(c *work.Client, score int64, id string) error
	delete     func(c *work.Client, score int64, id string) error
}

var sets = map[work.JobState]setInfo{
	work.JobStateDead: {
		state: work.JobStateDead, scoreTitle: "DIED", retryVerb: "retried",
		retry:  func(c *work.Client, s int64, id string) error { return c.RetryDeadJob(s, id) },
		delete: func(c *work.Client, s int64, id string) error { return c.DeleteDeadJob(s, id) },
	},
	work.JobStateRetry: {
		state: work.JobStateRetry, scoreTitle: "RETRY AT", retryVerb: "queued",
		retry:  func(c *work.Client, s int64, id string) error { return c.RunRetryJobNow(s, id) },
		delete: func(c *work.Client, s int64, id string) error { return c.DeleteRetryJob(s, id) },
	},
	work.JobStateScheduled: {
		state: work.JobStateScheduled, scoreTitle: "RUN AT", retryVerb: "queued",
		retry:  func(c *work.Client, s int64, id string) error { return c.RunScheduledJobNow(s, id) },
		delete: func(c *work.Client, s int64, id string) error { return c.DeleteScheduledJob(s, id) },
	},
}

// listedJob is one job of a set, in JSON as the web UI's lists have it, with the raw bytes of a
// payload that could not be decoded as dead records keep them: text in raw_text when they are UTF-8,
// else base64 in raw_base64. RawBase64 hides the embedded Job's field of that name, which would
// hold any bytes in base64.
type listedJob struct {
	Score int64 `json:"score"`
	*work.Job
	RawText   string `json:"raw_text,omitempty"`
	RawBase64 []byte `json:"raw_base64,omitempty"`
}

func newListedJob(score int64, j *work.Job) listedJob {
	l := listedJob{Score: score, Job: j}
	if text, isBase64 := rawText(j.Raw); isBase64 {
		l.RawBase64 = j.Raw
	} else {
		l.RawText = text
	}
	return l
}

func (a *app) listSet(c *work.Client, info setInfo, page uint, search string) ([]listedJob, int64, error) {
	var out []listedJob
	if search != "" {
		locs, total, err := c.SearchJobs(info.state, search, page)
		for _, l := range locs {
			out = append(out, newListedJob(l.Score, l.Job))
		}
		return out, total, err
	}
	switch info.state {
	case work.JobStateDead:
		js, total, err := c.DeadJobs(page)
		for _, j := range js {
			out = append(out, newListedJob(j.DiedAt, j.Job))
		}
		return out, total, err
	case work.JobStateRetry:
		js, total, err := c.RetryJobs(page)
		for _, j := range js {
			out = append(out, newListedJob(j.RetryAt, j.Job))
		}
		return out, total, err
	default:
		js, total, err := c.ScheduledJobs(page)
		for _, j := range js {
			out = append(out, newListedJob(j.RunAt, j.Job))
		}
		return out, total, err
	}
}

// findScores returns the scores of the jobs with the given ID in a set.
func findScores(c *work.Client, state work.JobState, id string) ([]int64, error) {
	var scores []int64
	for page := uint(1); ; page++ {
		locs, total, err := c.SearchJobs(state, id, page)
		if err != nil {
			return nil, err
		}
		for _, l := range locs {
			if l.Job.ID == id {
				scores = append(scores, l.Score)
			}
		}
		if int64(page)*20 >= total {
			return scores, nil
		}
	}
}

// setCommand builds `work dead|retry|scheduled list|retry|delete`.
func (a *app) setCommand(state work.JobState) *cobra.Command {
	info := sets[state]
	titles := map[work.JobState]string{
		work.JobStateDead:      "Dead jobs: list, retry or delete them",
		work.JobStateRetry:     "Jobs waiting for a retry: list, run now or delete them",
		work.JobStateScheduled: "Scheduled jobs: list, run now or delete them",
	}
	var (
		page   uint
		search string
	)
	list := &cobra.Command{
		Use:   "list",
		Short: "List the jobs, 20 a page, oldest first",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.connect()
			if err != nil {
				return err
			}
			jobs, total, err := a.listSet(c, info, page, search)
			if err != nil {
				return err
			}
			if a.json {
				if jobs == nil {
					jobs = []listedJob{}
				}
				return printJSON(a.stdout, struct {
					Count int64       `json:"count"`
					Jobs  []listedJob `json:"jobs"`
				}{total, jobs})
			}
			if len(jobs) == 0 {
				fmt.Fprintf(a.stdout, "no %s jobs (%d in all)\n", state, total)
				return nil
			}
			header := []string{info.scoreTitle, "SCORE", "NAME", "ID"}
			if state != work.JobStateScheduled {
				header = append(header, "FAILS", "ERROR")
			}
			t := newTable(a.stdout, append(header, "ARGS")...)
			for _, j := range jobs {
				row := []string{when(j.Score), strconv.FormatInt(j.Score, 10), orDash(j.Name), orDash(j.ID)}
				if state != work.JobStateScheduled {
					row = append(row, strconv.FormatInt(j.Fails, 10), short(orDash(j.LastErr), 50))
				}
				t.row(append(row, short(argsOf(j.Job), 60))...)
			}
			if err := t.flush(); err != nil {
				return err
			}
			pageFooter(a.stdout, page, total, "job", "jobs")
			return nil
		},
	}
	list.Flags().UintVar(&page, "page", 1, "page to show")
	list.Flags().StringVar(&search, "search", "", "only jobs whose name, ID or batch ID contains this text")

	// act builds retry or delete: by [SCORE] ID, or (dead only) by --name or --all.
	act := func(use, short string, one func(c *work.Client, s int64, id string) error, verb string,
		byName func(c *work.Client, name string) (int64, error), all func(c *work.Client) error) *cobra.Command {
		var name string
		var everything bool
		cmd := &cobra.Command{
			Use:   use,
			Short: short,
			Args:  args(cobra.RangeArgs(0, 2)),
			RunE: func(cmd *cobra.Command, pos []string) error {
				modes := 0
				if len(pos) > 0 {
					modes++
				}
				if name != "" {
					modes++
				}
				if everything {
					modes++
				}
				if modes != 1 {
					if byName != nil {
						return usagef("give a job's [SCORE] ID, or --name NAME, or --all")
					}
					return usagef("give a job's [SCORE] ID")
				}
				c, err := a.connect()
				if err != nil {
					return err
				}
				var n int64
				switch {
				case everything:
					if err := all(c); err != nil {
						return err
					}
					n = -1
				case name != "":
					if n, err = byName(c, name); err != nil {
						return err
					}
				default:
					id := pos[len(pos)-1]
					var scores []int64
					if len(pos) == 2 {
						s, err := strconv.ParseInt(pos[0], 10, 64)
						if err != nil {
							return usagef("bad score %q: want epoch seconds, as `%s list` shows", pos[0], state)
						}
						scores = []int64{s}
					} else if scores, err = findScores(c, state, id); err != nil {
						return err
					}
					for _, s := range scores {
						if err := one(c, s, id); err == nil {
							n++
						} else if exitCode(err) != exitNotFound {
							return err
						}
					}
					if n == 0 {
						return notFoundf("no %s job %s", state, id)
					}
				}
				if a.json {
					out := map[string]interface{}{verb: n}
					if n < 0 {
						out = map[string]interface{}{verb: "all"}
					}
					return printJSON(a.stdout, out)
				}
				switch {
				case n < 0:
					fmt.Fprintf(a.stdout, "%s all %s jobs\n", verb, state)
				case n == 1:
					fmt.Fprintf(a.stdout, "%s 1 job\n", verb)
				default:
					fmt.Fprintf(a.stdout, "%s %d jobs\n", verb, n)
				}
				return nil
			},
		}
		if byName != nil {
			cmd.Flags().StringVar(&name, "name", "", "every job of this name")
			cmd.Flags().BoolVar(&everything, "all", false, "every job")
		}
		return cmd
	}

	var retry, del *cobra.Command
	if state == work.JobStateDead {
		retry = act("retry [DIED_AT] ID | --name NAME | --all", "Move dead jobs back to their queue", info.retry, info.retryVerb,
			func(c *work.Client, name string) (int64, error) { return c.RetryDeadJobsByName(name) },
			func(c *work.Client) error { return c.RetryAllDeadJobs() })
		del = act("delete [DIED_AT] ID | --name NAME | --all", "Delete dead jobs", info.delete, "deleted",
			func(c *work.Client, name string) (int64, error) { return c.DeleteDeadJobsByName(name) },
			func(c *work.Client) error { return c.DeleteAllDeadJobs() })
	} else {
		score := map[work.JobState]string{work.JobStateRetry: "RETRY_AT", work.JobStateScheduled: "RUN_AT"}[state]
		retry = act("retry ["+score+"] ID", "Move a job to its queue now", info.retry, info.retryVerb, nil, nil)
		retry.Aliases = []string{"run"}
		del = act("delete ["+score+"] ID", "Delete a job", info.delete, "deleted", nil, nil)
	}
	return group(&cobra.Command{Use: string(state), Short: titles[state]}, list, retry, del)
}

func (a *app) pauseCommand(pause bool) *cobra.Command {
	use, short, done := "pause NAME", "Pause a queue: its jobs wait until it is resumed", "paused"
	if !pause {
		use, short, done = "resume NAME", "Resume a paused queue", "resumed"
	}
	return &cobra.Command{
		Use:     use,
		Short:   short,
		Aliases: map[bool][]string{true: nil, false: {"unpause"}}[pause],
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, pos []string) error {
			if err := work.CheckJobName(pos[0]); err != nil {
				return usageError{libError{err: err}}
			}
			c, err := a.connect()
			if err != nil {
				return err
			}
			if pause {
				err = c.PauseQueue(pos[0])
			} else {
				err = c.UnpauseQueue(pos[0])
			}
			if err != nil {
				return err
			}
			if a.json {
				return printJSON(a.stdout, map[string]string{"queue": pos[0], "status": done})
			}
			fmt.Fprintf(a.stdout, "%s queue %s\n", done, pos[0])
			return nil
		},
	}
}

func (a *app) jobCommand() *cobra.Command {
	var wait bool
	cmd := &cobra.Command{
		Use:   "job ID [--wait]",
		Short: "Find a job by ID and show it",
		Long: `Find a job by ID and show it: its record, when it has one, and where it is (scheduled, retry,
queued, in progress or dead).

A job has a record when it is tracked (enqueued with EnqueueOptions.Track, a step of a chain, a job
with dependencies) or when its pool keeps records of its name (JobOptions.KeepFinished): state,
attempts, times, the pool of its last attempt, its error, its result and its batch, read in one
round trip. Finding where a job is reads every job of the namespace in the worst case, so it is
skipped when the record says the job is in no queue or set (done, dropped, deleted, or waiting for
its dependencies). Meant for operators, not for scripts that run often.

A running job with a record shows its attempt, when it started and the progress its handler
reported (Job.SetProgress), written by its pool at most once a second.

With --wait it first waits until the job has ended (done, dead, dropped or deleted), listening for
its end rather than polling, then shows it; Ctrl-C stops waiting. Only a job with a record can be
waited for: a tracked job, or a job of a name whose pools keep records once it has started. It exits
3 at once for a job without one.

With --json it prints the job's location (state, score, pool_id, job, decoded, payload) and, when
it has one, "record".`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, pos []string) error {
			if pos[0] == "" {
				return usagef("the job ID is empty")
			}
			c, err := a.connect()
			if err != nil {
				return err
			}
			if wait {
				if work.CheckID(pos[0]) != nil {
					return notFoundf("job %s cannot have a record, so it cannot be waited for", pos[0])
				}
				_, err := c.WaitJob(cmd.Context(), pos[0])
				if errors.Is(err, work.ErrNoRecord) {
					return notFoundf("job %s has no record, so its end cannot be waited for: only a tracked job, or a job of a name whose pools keep records once it has started, has one", pos[0])
				}
				if err != nil {
					return err
				}
			}
			r, err := findJob(c, pos[0])
			if err == work.ErrJobNotFound {
				return notFoundf("no job %s", pos[0])
			}
			if err != nil {
				return err
			}
			if a.json {
				return printJSON(a.stdout, r)
			}
			return r.print(a.stdout, pos[0])
		},
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the job has ended, then show it")
	return cmd
}

// cancelResult is what `work cancel --json` prints.
type cancelResult struct {
	JobID string `json:"job_id"`
	Pools int64  `json:"pools"` // how many worker pools heard the request
}

func (a *app) cancelCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel a running job",
		Long: `Cancel the job with the given ID while a worker runs it: every worker pool of the namespace
hears the request, and the one running the job cancels the handler's context. A handler that then
returns an error sends its job to the dead set with the error "cancelled", without retries; one that
finishes anyway counts as done.

It exits 0 once the request is sent and says how many pools heard it. None heard it when the job
runs in a pool of gocraft/work, which does not listen, or in a pool that is gone (its jobs are
requeued once it is reaped): the command says so and still exits 0. It exits 3 when no job has the
ID, or when the job is not running (queued, scheduled, retry or dead), which a cancel would not
change. Finding a job that was not seen running reads, in the worst case, every job of the
namespace, as "work job" does.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, pos []string) error {
			id := pos[0]
			if id == "" {
				return usagef("the job ID is empty")
			}
			c, err := a.connect()
			if err != nil {
				return err
			}
			if err := checkRunning(c, id); err != nil {
				return err
			}
			n, err := c.CancelJob(id)
			if err != nil {
				return err
			}
			if a.json {
				return printJSON(a.stdout, cancelResult{JobID: id, Pools: n})
			}
			if n == 0 {
				fmt.Fprintf(a.stdout, "sent the cancel of job %s, but no worker pool heard it: the job runs in a pool that does not listen (gocraft/work), or its pool is gone\n", id)
				return nil
			}
			fmt.Fprintf(a.stdout, "sent the cancel of job %s: %d worker %s heard it\n", id, n, plural(n, "pool", "pools"))
			return nil
		},
	}
}

// checkRunning returns nil when the job with the given ID is running, else a not-found error that
// says where it is.
func checkRunning(c *work.Client, id string) error {
	obs, err := c.WorkerObservations()
	if err != nil {
		return err
	}
	for _, ob := range obs {
		if ob.IsBusy && ob.JobID == id {
			return nil
		}
	}
	// Workers publish what they run up to a second late; FindJob sees a job as soon as a pool has
	// fetched it (and reads every job in the worst case, so it comes second).
	loc, err := c.FindJob(id)
	if err == work.ErrJobNotFound {
		return notFoundf("no job %s", id)
	}
	if err != nil {
		return err
	}
	if loc.State != work.JobStateInProgress {
		return notFoundf("job %s is %s, not running: nothing to cancel", id, loc.State)
	}
	return nil
}

func (a *app) periodicCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "periodic",
		Short: "List the periodic jobs of the live worker pools, by next run",
		Long: `List the periodic jobs that the live worker pools declare in their heartbeats: job name, cron
spec, next run (computed from this machine's clock) and the pools that enqueue it. Pools of
gocraft/work do not publish theirs, so they are not listed.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.connect()
			if err != nil {
				return err
			}
			pjs, err := c.PeriodicJobs()
			if err != nil {
				return err
			}
			if a.json {
				return printJSON(a.stdout, pjs)
			}
			if len(pjs) == 0 {
				_, err := fmt.Fprintln(a.stdout, "no periodic jobs: no live worker pool declares one (pools of gocraft/work do not publish theirs)")
				return err
			}
			t := newTable(a.stdout, "JOB", "SPEC", "NEXT RUN (UTC)", "WHEN", "POOLS")
			for _, pj := range pjs {
				next, in := "unknown", "-"
				if pj.NextRunAt != 0 {
					next, in = when(pj.NextRunAt), ago(pj.NextRunAt)
				}
				t.row(pj.JobName, pj.Spec, next, in, strings.Join(pj.WorkerPoolIDs, ","))
			}
			return t.flush()
		},
	}
}
