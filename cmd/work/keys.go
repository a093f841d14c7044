package main

// `work keys`: the keys of a job name's keyed jobs (work.EnqueueOptions.Key), busiest first, one
// key, and the controls of one key: pause, resume, overrides.

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/workqueue/work"
)

// keyError turns the library's refusal of a key into a usage error, and a key of the name's keyed
// state that another program overwrote into a clear error.
func keyError(name string, err error) error {
	switch {
	case errors.Is(err, work.ErrMalformedKey):
		return malformedKey(err)
	case errors.Is(err, work.ErrWrongType):
		return fmt.Errorf("the keys of %s cannot be read or changed: a key of its keyed state holds another Redis type (another program wrote it)", name)
	}
	return err
}

// malformedKey is the library's refusal of a key, as bad usage.
func malformedKey(err error) error { return usageError{libError{err: err}} }

// checkNameAndKey refuses, as bad usage, a job name or key that the library refuses.
func checkNameAndKey(name, key string) error {
	if err := work.CheckJobName(name); err != nil {
		return usageError{libError{err: err}}
	}
	if err := work.CheckKey(key); err != nil {
		return malformedKey(err)
	}
	return nil
}

// rateText renders a rate override: "10 per 1m", "5 per 500ms".
func rateText(r work.RateLimit) string {
	per := r.Period.String()
	if r.Period%time.Second == 0 {
		per = seconds(int64(r.Period / time.Second))
	}
	return fmt.Sprintf("%d per %s", r.Jobs, per)
}

// overridesText lists a key's overrides in words, "-" for none.
func overridesText(l work.KeyLimits) string {
	var out []string
	switch {
	case l.Concurrency > 0:
		out = append(out, fmt.Sprintf("concurrency %d", l.Concurrency))
	case l.Concurrency < 0:
		out = append(out, "no concurrency limit")
	}
	if l.RateLimit.Jobs > 0 {
		out = append(out, "rate "+rateText(l.RateLimit))
	}
	if l.Weight > 0 {
		out = append(out, fmt.Sprintf("weight %d", l.Weight))
	}
	switch {
	case l.MaxWaiting > 0:
		out = append(out, fmt.Sprintf("max waiting %d", l.MaxWaiting))
	case l.MaxWaiting < 0:
		out = append(out, "no cap on waiting")
	}
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, ", ")
}

// keyStatus is a key's status word.
func keyStatus(k *work.KeyInfo) string {
	switch {
	case k.Paused:
		return "paused"
	case k.Running > 0:
		return "running"
	case k.Waiting > 0:
		return "waiting"
	}
	return "idle"
}

// printKey writes one key as a table: its counts, status and each setting, override or not.
func printKey(w io.Writer, name string, k *work.KeyInfo) error {
	t := newTable(w, "JOB", name)
	t.row("KEY", k.Key)
	t.row("WAITING", strconv.FormatInt(k.Waiting, 10))
	t.row("RUNNING", strconv.FormatInt(k.Running, 10))
	status := keyStatus(k)
	switch status {
	case "paused":
		status += " (its jobs wait until it is resumed)"
	case "idle":
		status += " (no job of the key is waiting or running)"
	}
	t.row("STATUS", status)
	count := func(n int, option string) string {
		switch {
		case n > 0:
			return strconv.Itoa(n) + " (override)"
		case n < 0:
			return "no limit (override)"
		}
		return "the job name's (JobOptions." + option + ")"
	}
	l := k.Limits
	t.row("CONCURRENCY", count(l.Concurrency, "KeyConcurrency"))
	rate := "the job name's (JobOptions.KeyRateLimit)"
	if l.RateLimit.Jobs > 0 {
		rate = rateText(l.RateLimit) + " (override)"
	}
	t.row("RATE LIMIT", rate)
	weight := "1"
	if l.Weight > 0 {
		weight = strconv.Itoa(l.Weight) + " (override)"
	}
	t.row("WEIGHT", weight)
	t.row("MAX WAITING", count(l.MaxWaiting, "KeyMaxWaiting"))
	return t.flush()
}

func (a *app) keysCommand() *cobra.Command {
	var page uint
	cmd := &cobra.Command{
		Use:   "keys NAME [KEY]",
		Short: "List a job name's keys, busiest first, or show one key; pause, resume and override keys",
		Long: `List the keys of a job name's keyed jobs (enqueued with EnqueueOptions.Key), 20 a page: first
the keys with jobs waiting, the largest backlog first, then those with jobs running only; for each,
its jobs waiting and running, whether it is paused and its overrides. Given a KEY, show that key
alone, each of its settings and whether it is an override: a key with no job waiting or running
shows too, with its overrides. Three round trips for a page, one for a key.

The subcommands pause and resume a key, set and clear its overrides, and sum up the keyed jobs of
every job name. A job name that is a subcommand's name (stats, say) goes after --:
work keys -- stats.

With --json it prints {"count":N,"keys":[...]}, or the key.`,
		Example: `  work keys sync_account
  work keys sync_account acme
  work keys pause sync_account acme
  work keys set sync_account acme --concurrency 2 --rate 10/1m
  work keys stats`,
		Args: args(cobra.RangeArgs(1, 2)),
		RunE: func(cmd *cobra.Command, pos []string) error {
			name, key := pos[0], ""
			if len(pos) == 2 {
				key = pos[1]
				if err := checkNameAndKey(name, key); err != nil {
					return err
				}
				if cmd.Flags().Changed("page") {
					return usagef("--page pages the list of keys: give no KEY with it")
				}
			} else if err := work.CheckJobName(name); err != nil {
				return usageError{libError{err: err}}
			}
			c, err := a.connect()
			if err != nil {
				return err
			}
			if key != "" {
				k, err := c.Key(name, key)
				if err != nil {
					return keyError(name, err)
				}
				if a.json {
					return printJSON(a.stdout, k)
				}
				return printKey(a.stdout, name, k)
			}
			keys, total, err := c.Keys(name, page)
			if err != nil {
				return keyError(name, err)
			}
			if a.json {
				if keys == nil {
					keys = []*work.KeyInfo{}
				}
				return printJSON(a.stdout, struct {
					Count int64           `json:"count"`
					Keys  []*work.KeyInfo `json:"keys"`
				}{total, keys})
			}
			p := max(page, 1)
			if len(keys) == 0 {
				if total == 0 {
					fmt.Fprintf(a.stdout, "no key of %s has jobs waiting or running\n", name)
				} else {
					fmt.Fprintf(a.stdout, "no keys on page %d (%d in all)\n", p, total)
				}
				return nil
			}
			t := newTable(a.stdout, "KEY", "WAITING", "RUNNING", "STATUS", "OVERRIDES")
			for _, k := range keys {
				t.row(k.Key, strconv.FormatInt(k.Waiting, 10), strconv.FormatInt(k.Running, 10), keyStatus(k), overridesText(k.Limits))
			}
			if err := t.flush(); err != nil {
				return err
			}
			pageFooter(a.stdout, page, total, "key", "keys")
			return nil
		},
	}
	cmd.Flags().UintVar(&page, "page", 1, "page to show")
	cmd.AddCommand(a.keyControlCommands()...)
	cmd.AddCommand(a.keySetCommand(), a.keyStatsCommand())
	return cmd
}

// keyResult is what the key controls print with --json.
type keyResult struct {
	JobName string `json:"job_name"`
	Key     string `json:"key"`
	Status  string `json:"status"`
}

// keyControlCommand builds pause, resume and clear: each does one thing to one key of a job name and
// says so, with --json as {"job_name":...,"key":...,"status":status}.
func (a *app) keyControlCommand(use, short, status, said string, do func(c *work.Client, name, key string) error) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, pos []string) error {
			name, key := pos[0], pos[1]
			if err := checkNameAndKey(name, key); err != nil {
				return err
			}
			c, err := a.connect()
			if err != nil {
				return err
			}
			if err := do(c, name, key); err != nil {
				return keyError(name, err)
			}
			if a.json {
				return printJSON(a.stdout, keyResult{JobName: name, Key: key, Status: status})
			}
			_, err = fmt.Fprintf(a.stdout, said+"\n", key, name)
			return err
		},
	}
}

func (a *app) keyControlCommands() []*cobra.Command {
	resume := a.keyControlCommand("resume NAME KEY", "Resume a paused key", "resumed", "resumed key %s of %s",
		func(c *work.Client, name, key string) error { return c.UnpauseKey(name, key) })
	resume.Aliases = []string{"unpause"}
	return []*cobra.Command{
		a.keyControlCommand("pause NAME KEY", "Pause a key: its jobs wait until it is resumed", "paused", "paused key %s of %s",
			func(c *work.Client, name, key string) error { return c.PauseKey(name, key) }),
		resume,
		a.keyControlCommand("clear NAME KEY", "Remove a key's overrides: the job name's settings apply to it again", "cleared",
			"cleared the overrides of key %s of %s: the job name's settings apply",
			func(c *work.Client, name, key string) error { return c.ClearKeyLimits(name, key) }),
	}
}

// flagError is the library's refusal of a flag's value, as bad usage that names the flag.
func flagError(flag string, err error) error {
	return usageError{libError{err: err, note: " (--" + flag + ")"}}
}

// keyLimitFlags are the flags of `work keys set`, each read by the library's parser of its kind
// (work.ParseKeyLimit, ParseRate, ParseKeyWeight).
type keyLimitFlags struct {
	concurrency, rate, weight, maxWaiting string
}

// patch checks the flags given (changed reports which) and returns what they change in a key's
// overrides; the overrides of the flags not given stay.
func (kf *keyLimitFlags) patch(changed func(string) bool) (func(*work.KeyLimits), error) {
	var steps []func(*work.KeyLimits)
	if changed("concurrency") {
		n, err := work.ParseKeyLimit(kf.concurrency)
		if err != nil {
			return nil, flagError("concurrency", err)
		}
		steps = append(steps, func(l *work.KeyLimits) { l.Concurrency = n })
	}
	if changed("rate") {
		r, err := work.ParseRate(kf.rate)
		if err != nil {
			return nil, flagError("rate", err)
		}
		steps = append(steps, func(l *work.KeyLimits) { l.RateLimit = r })
	}
	if changed("weight") {
		n, err := work.ParseKeyWeight(kf.weight)
		if err != nil {
			return nil, flagError("weight", err)
		}
		steps = append(steps, func(l *work.KeyLimits) { l.Weight = n })
	}
	if changed("max-waiting") {
		n, err := work.ParseKeyLimit(kf.maxWaiting)
		if err != nil {
			return nil, flagError("max-waiting", err)
		}
		steps = append(steps, func(l *work.KeyLimits) { l.MaxWaiting = n })
	}
	if len(steps) == 0 {
		return nil, usagef("give at least one of --concurrency, --rate, --weight and --max-waiting")
	}
	return func(l *work.KeyLimits) {
		for _, step := range steps {
			step(l)
		}
	}, nil
}

func (a *app) keySetCommand() *cobra.Command {
	var kf keyLimitFlags
	cmd := &cobra.Command{
		Use:   "set NAME KEY [--concurrency N] [--rate N/DURATION] [--weight N] [--max-waiting N]",
		Short: "Override the per-key settings of a job name for one key",
		Long: `Override the per-key settings of a job name (JobOptions.KeyConcurrency, KeyRateLimit,
KeyMaxWaiting) for one key, across every pool, and give the key a weight: the turns it gets for
another key's one while both have jobs waiting. The flags given change; the key's other overrides
stay. 0 gives a setting back to the job name; none lifts a concurrency or max-waiting limit for the
key. A key with jobs waiting that may now run more gets a turn at once.

It prints the key, as "work keys NAME KEY" does.`,
		Example: `  work keys set sync_account acme --concurrency 4 --weight 3
  work keys set sync_account acme --rate 100/1m --max-waiting none
  work keys set sync_account acme --concurrency 0   # back to the job name's`,
		Args: args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, pos []string) error {
			name, key := pos[0], pos[1]
			if err := checkNameAndKey(name, key); err != nil {
				return err
			}
			change, err := kf.patch(cmd.Flags().Changed)
			if err != nil {
				return err
			}
			c, err := a.connect()
			if err != nil {
				return err
			}
			// Read, change, write: a change made meanwhile by someone else to another override of
			// the key is undone.
			k, err := c.Key(name, key)
			if err != nil {
				return keyError(name, err)
			}
			change(&k.Limits)
			if err := c.SetKeyLimits(name, key, k.Limits); err != nil {
				return keyError(name, err)
			}
			if k, err = c.Key(name, key); err != nil {
				return keyError(name, err)
			}
			if a.json {
				return printJSON(a.stdout, k)
			}
			return printKey(a.stdout, name, k)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kf.concurrency, "concurrency", "", "most jobs of the key running at once (0: the job name's; none: no limit)")
	f.StringVar(&kf.rate, "rate", "", "most jobs of the key started per period, as 10/1m or 5/s (0: the job name's)")
	f.StringVar(&kf.weight, "weight", "", "turns the key gets for another key's one, 1 to 1000 (0: 1)")
	f.StringVar(&kf.maxWaiting, "max-waiting", "", "most jobs of the key waiting; enqueues past it fail (0: the job name's; none: no limit)")
	return cmd
}

func (a *app) keyStatsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "stats",
		Short: "Sum up the keyed jobs of every job name",
		Long: `Sum up the keyed jobs of every job name that has had some: jobs and keys waiting, jobs and keys
running, the largest backlog of one key and that key, the keys paused and those with overrides.
Three round trips, whatever the number of keys.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.connect()
			if err != nil {
				return err
			}
			stats, err := c.KeyStats()
			if err != nil {
				return err
			}
			if a.json {
				if stats == nil {
					stats = []*work.KeyStat{}
				}
				return printJSON(a.stdout, stats)
			}
			if len(stats) == 0 {
				_, err := fmt.Fprintln(a.stdout, "no keyed jobs: no job name has had a job with a key")
				return err
			}
			t := newTable(a.stdout, "JOB", "WAITING", "KEYS WAITING", "RUNNING", "KEYS RUNNING", "LARGEST BACKLOG", "PAUSED", "OVERRIDDEN")
			for _, s := range stats {
				largest := "-"
				if s.LargestBacklogKey != "" {
					largest = fmt.Sprintf("%s (%d)", short(s.LargestBacklogKey, 40), s.LargestBacklog)
				}
				t.row(s.JobName, strconv.FormatInt(s.Waiting, 10), strconv.FormatInt(s.WaitingKeys, 10), strconv.FormatInt(s.Running, 10),
					strconv.FormatInt(s.RunningKeys, 10), largest, strconv.FormatInt(s.PausedKeys, 10), strconv.FormatInt(s.OverriddenKeys, 10))
			}
			return t.flush()
		},
	}
}
