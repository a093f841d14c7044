package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/workqueue/work"
)

// The groups of grouped jobs (EnqueueOptions.Group) with jobs waiting: when a group is flushed, and
// in what order they come, is the library's.

func (a *app) groupsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "groups [NAME]",
		Short: "List the groups of grouped jobs that have jobs waiting",
		Long: `List the groups of grouped jobs (EnqueueOptions.Group) that have jobs waiting, of the job name NAME
or of every name, the soonest to be flushed first: job name, group key, jobs waiting, when the
oldest of them arrived, and when the group is next flushed by time, or "when full" for a group only
its size flushes (GroupOptions with MaxSize alone), listed last.`,
		Args: args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, names []string) error {
			name := ""
			if len(names) == 1 {
				name = names[0]
			}
			c, err := a.connect()
			if err != nil {
				return err
			}
			gs, err := c.Groups(name)
			if err != nil {
				return err
			}
			if a.json {
				if gs == nil {
					gs = []*work.GroupInfo{}
				}
				return printJSON(a.stdout, gs)
			}
			if len(gs) == 0 {
				_, err := fmt.Fprintln(a.stdout, "no group has jobs waiting: EnqueueOptions.Group makes them")
				return err
			}
			t := newTable(a.stdout, "JOB", "GROUP", "WAITING", "OLDEST", "NEXT FLUSH (UTC)", "FLUSH")
			var jobs int64
			for _, g := range gs {
				oldest := "-"
				if !g.Oldest.IsZero() {
					oldest = ago(g.Oldest.Unix())
				}
				at, in := "-", "when full"
				if !g.NextFlush.IsZero() {
					at, in = when(g.NextFlush.Unix()), ago(g.NextFlush.Unix())
				}
				t.row(g.Name, short(g.Group, 40), strconv.FormatInt(g.Size, 10), oldest, at, in)
				jobs += g.Size
			}
			if err := t.flush(); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "%d %s waiting in %d %s\n", jobs, plural(jobs, "job", "jobs"),
				len(gs), plural(int64(len(gs)), "group", "groups"))
			return nil
		},
	}
}
