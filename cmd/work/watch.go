package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/workqueue/work"
	"github.com/workqueue/work/cmd/internal/cli"
	"github.com/workqueue/work/webui"
)

// minWatchInterval bounds how often `work watch` reads Redis.
const minWatchInterval = 500 * time.Millisecond

// isTerminal reports whether w is a terminal.
func isTerminal(w interface{}) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// frame is one refresh of `work watch`.
type frame struct {
	Time   time.Time                 `json:"time"`
	Stats  *statsReport              `json:"stats"`
	Queues []*work.QueueStat         `json:"queues"`
	Busy   []*work.WorkerObservation `json:"busy_workers"`
}

func (a *app) watchCommand() *cobra.Command {
	var (
		interval time.Duration
		count    int
	)
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Show queues, throughput and busy workers, refreshed until interrupted",
		Long: `Show the namespace's totals, queues and busy workers, refreshed every --interval (at least
500ms) until Ctrl-C, or --count times. On a terminal the screen is redrawn; otherwise, and with
--json (one JSON object a line), each refresh is appended.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if interval < minWatchInterval {
				return usagef("--interval must be at least %v", minWatchInterval)
			}
			if count < 0 {
				return usagef("--count must not be negative")
			}
			c, err := a.connect()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			tty := isTerminal(a.stdout) && !a.json
			ticker := time.NewTicker(interval)
			defer ticker.Stop()
			for n := 0; count == 0 || n < count; n++ {
				if n > 0 {
					select {
					case <-ctx.Done():
						return nil
					case <-ticker.C:
					}
				}
				f, err := a.collectFrame(c)
				if err != nil {
					return err
				}
				if a.json {
					b, err := json.Marshal(f)
					if err != nil {
						return err
					}
					fmt.Fprintf(a.stdout, "%s\n", b)
					continue
				}
				var buf bytes.Buffer
				if tty {
					buf.WriteString("\x1b[H\x1b[2J") // home, clear
				} else if n > 0 {
					buf.WriteString("\n")
				}
				a.printFrame(&buf, f, interval)
				if _, err := a.stdout.Write(buf.Bytes()); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&interval, "interval", 2*time.Second, "time between refreshes (at least 500ms)")
	cmd.Flags().IntVar(&count, "count", 0, "stop after this many refreshes (0: until interrupted)")
	return cmd
}

func (a *app) collectFrame(c *work.Client) (*frame, error) {
	st, err := a.collectStats(c, time.Hour)
	if err != nil {
		return nil, err
	}
	qs, err := c.QueueStats()
	if err != nil {
		return nil, err
	}
	obs, err := c.WorkerObservations()
	if err != nil {
		return nil, err
	}
	f := &frame{Time: time.Now().UTC(), Stats: st, Queues: qs, Busy: []*work.WorkerObservation{}}
	for _, ob := range obs {
		if ob.IsBusy {
			f.Busy = append(f.Busy, ob)
		}
	}
	return f, nil
}

func (a *app) printFrame(buf *bytes.Buffer, f *frame, interval time.Duration) {
	fmt.Fprintf(buf, "work watch: namespace %s on %s, %s UTC, every %v (Ctrl-C stops)\n\n",
		a.ns, a.target, f.Time.Format("15:04:05"), interval)
	f.Stats.print(buf, time.Hour)
	buf.WriteString("\n")
	printQueues(buf, f.Queues)
	if len(f.Busy) > 0 {
		buf.WriteString("\n")
		t := newTable(buf, "WORKER", "JOB", "ID", "RUNNING", "CHECK-IN")
		for i, ob := range f.Busy {
			if i == 20 {
				t.row("…", strconv.Itoa(len(f.Busy)-20)+" more", "", "", "")
				break
			}
			t.row(ob.WorkerID, ob.JobName, ob.JobID, seconds(time.Now().Unix()-ob.StartedAt), short(orDash(ob.Checkin), 40))
		}
		t.flush()
	}
}

func (a *app) uiCommand() *cobra.Command {
	ui := &cli.UIFlags{}
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Serve the web UI",
		Long: `Serve the web UI and its JSON API until interrupted (SIGINT or SIGTERM stop it gracefully).

It listens on 127.0.0.1:5040 by default: this host only. Give --user and --password (or
WORK_WEBUI_USER and WORK_WEBUI_PASSWORD) for basic authentication, or --token (WORK_WEBUI_TOKEN)
for a bearer token, before listening on other interfaces. Prefer the environment variables: other
users of the host can see flags in its process list.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts, err := ui.Options()
			if err != nil {
				return usageError{err}
			}
			if _, err := a.connect(); err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "work ui: redis %s, database %d, namespace %q\n", a.target, a.target.Database(), a.ns)
			srv := webui.NewServerWithOptions(a.ns, a.pool, ui.Listen, opts)
			return cli.ServeUI(cmd.Context(), srv.Handler(), ui, a.stderr)
		},
	}
	f := cmd.Flags()
	f.StringVar(&ui.Listen, "listen", cli.DefaultListen, "address to serve on (\":5040\" serves every interface)")
	f.StringVar(&ui.User, "user", os.Getenv(cli.EnvWebUIUser), "basic authentication user ($WORK_WEBUI_USER)")
	f.StringVar(&ui.Password, "password", os.Getenv(cli.EnvWebUIPassword), "basic authentication password ($WORK_WEBUI_PASSWORD)")
	f.StringVar(&ui.Token, "token", os.Getenv(cli.EnvWebUIToken), "bearer token ($WORK_WEBUI_TOKEN)")
	f.BoolVar(&ui.ReadOnly, "read-only", false, "refuse every action")
	return cmd
}
