// Command work inspects and manages the jobs of a namespace from a terminal: queue and throughput
// statistics, enqueueing, the scheduled, retry and dead sets, pausing queues, finding a job by ID
// with its record, batches, the keys of keyed jobs, cancelling a running job, the periodic jobs,
// schedules, the pending bursts of debounced enqueues, moving or editing a waiting job, the groups of
// grouped jobs, a live view, and the web UI.
//
//	work stats                                  totals and the last hour's throughput
//	work queues                                 every queue: size, latency, in flight, paused
//	work enqueue send_email --args '{"to":"a@example.com"}' [--in 30s] [--unique]
//	work dead list [--page N] [--search TEXT]   also: retry list, scheduled list
//	work dead retry [DIED_AT] ID | --name NAME | --all
//	work dead delete [DIED_AT] ID | --name NAME | --all
//	work retry retry [RETRY_AT] ID              run a job waiting for a retry now; retry delete
//	work scheduled retry [RUN_AT] ID            run a scheduled job now; scheduled delete
//	work pause NAME / work resume NAME
//	work job ID [--wait]                        a job's record, progress and where it is; --wait for its end
//	work batch ID                               a batch's state, counts, progress and callbacks
//	work batches [--page N]                     the batches, newest first
//	work keys NAME [KEY] [--page N]             a job name's keys, busiest first, or one key
//	work keys pause|resume|clear NAME KEY       pause or resume a key, or clear its overrides
//	work keys set NAME KEY [--concurrency N] [--rate N/DURATION] [--weight N] [--max-waiting N]
//	work keys stats                             the keyed jobs of every job name, summed up
//	work cancel ID                              cancel a running job
//	work periodic                               the periodic jobs of the live pools, by next run
//	work schedules list [--prefix P] [--cursor C] [--all]   schedules and periodic jobs, side by side
//	work schedules show ID                      a schedule's definition, state and next ticks
//	work schedules set ID --spec SPEC --job NAME [--location ZONE] [--args JSON] [--key KEY]
//	                      [--jitter D] [--missed skip|run-latest]
//	work schedules delete|pause|resume|run ID   delete, pause or resume a schedule, or run it now
//	work debounced                              the pending bursts of debounced enqueues, soonest first
//	work reschedule ID TIME|+DURATION           move a scheduled or retry job to another time
//	work replace-args ID JSON                   give a scheduled or retry job other args
//	work groups [NAME]                          the groups of grouped jobs with jobs waiting, by next flush
//	work watch [--interval 2s] [--count N]      a live view, refreshed until Ctrl-C
//	work ui [--listen 127.0.0.1:5040]           serve the web UI
//
// Every command takes --redis (host:port, or a redis:// or rediss:// URL with user, password and
// database; default $WORK_REDIS, else 127.0.0.1:6379), --database, --ns (default $WORK_NS, else
// "work") and --json (machine-readable output). A rediss:// address also takes --tls-ca (the PEM CA
// certificates to trust instead of the system's), and --tls-cert with --tls-key (a client
// certificate), by default $WORK_REDIS_TLS_CA, $WORK_REDIS_TLS_CERT and $WORK_REDIS_TLS_KEY. Output
// goes to standard output, errors to standard error. Exit status: 0 success, 1 error (Redis
// unreachable, say), 2 bad usage (unusable TLS files among it), 3 not found (no such job, batch or
// schedule, or nothing to retry, delete or cancel).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/gomodule/redigo/redis"
	"github.com/spf13/cobra"
	"github.com/workqueue/work"
	"github.com/workqueue/work/cmd/internal/cli"
)

// Exit statuses.
const (
	exitOK       = 0
	exitError    = 1
	exitUsage    = 2
	exitNotFound = 3
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// usageError is a mistake in the command line.
type usageError struct{ error }

func usagef(format string, args ...interface{}) error { return usageError{fmt.Errorf(format, args...)} }

// notFoundError is a job or queue that is not there.
type notFoundError struct{ error }

func notFoundf(format string, args ...interface{}) error {
	return notFoundError{fmt.Errorf(format, args...)}
}

// libError is an error of the library, shown as it is (its text starts with "work: ", as the
// command's own messages do), followed by note, the command's words about it.
type libError struct {
	err  error
	note string
}

func (e libError) Error() string { return e.err.Error() + e.note }
func (e libError) Unwrap() error { return e.err }

// message is the line an error is shown as: the command's own errors after "work: ", the library's
// as they are.
func message(err error) string {
	for e := err; ; {
		switch x := e.(type) {
		case libError:
			return err.Error()
		case usageError:
			e = x.error
		case notFoundError:
			e = x.error
		default:
			return "work: " + err.Error()
		}
	}
}

// exitCode maps an error to the documented exit status.
func exitCode(err error) int {
	var ue usageError
	var nf notFoundError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		return exitUsage
	case errors.As(err, &nf), errors.Is(err, work.ErrJobNotFound), errors.Is(err, work.ErrNotDeleted), errors.Is(err, work.ErrNotRetried),
		errors.Is(err, work.ErrBatchNotFound), errors.Is(err, work.ErrScheduleNotFound):
		return exitNotFound
	case strings.HasPrefix(err.Error(), "unknown command"), strings.HasPrefix(err.Error(), "unknown flag"):
		return exitUsage
	}
	return exitError
}

// run runs the command line and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a := &app{stdout: stdout, stderr: stderr}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if a.pool != nil {
		a.pool.Close()
	}
	code := exitCode(err)
	if err != nil {
		fmt.Fprintln(stderr, message(err))
		if code == exitUsage {
			fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
		}
	}
	return code
}

// app holds the global flags and the connection.
type app struct {
	stdout, stderr io.Writer

	redisAddr string
	tls       cli.TLSFlags
	database  int
	ns        string
	json      bool

	target *cli.Target
	pool   *redis.Pool
	client *work.Client
}

// connect opens the pool and checks that Redis answers.
func (a *app) connect() (*work.Client, error) {
	if a.client != nil {
		return a.client, nil
	}
	t, err := cli.ParseRedis(a.redisAddr, a.database)
	if err != nil {
		return nil, usageError{err}
	}
	if err := t.UseTLSFiles(a.tls); err != nil {
		return nil, usageError{err}
	}
	pool := t.Pool(8)
	if err := t.Ping(pool); err != nil {
		pool.Close()
		return nil, err
	}
	a.target, a.pool, a.client = t, pool, work.NewClient(a.ns, pool)
	return a.client, nil
}

// args wraps a cobra argument check so that its failures are usage errors.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := check(cmd, a); err != nil {
			return usageError{err}
		}
		return nil
	}
}

// group makes a command that only holds subcommands: run alone or with an unknown subcommand, it is
// a usage error.
func group(cmd *cobra.Command, subs ...*cobra.Command) *cobra.Command {
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(c *cobra.Command, a []string) error {
		if len(a) == 0 {
			return usagef("%s needs a subcommand", c.CommandPath())
		}
		return usagef("unknown subcommand %q for %s", a[0], c.CommandPath())
	}
	cmd.AddCommand(subs...)
	return cmd
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "work",
		Short: "Inspect and manage the background jobs of a namespace",
		Long: `work inspects and manages the background jobs that the work library keeps in Redis.

Exit status: 0 success, 1 error, 2 bad usage, 3 not found.

Environment: WORK_REDIS and WORK_NS set the defaults of --redis and --ns;
WORK_REDIS_TLS_CA, WORK_REDIS_TLS_CERT and WORK_REDIS_TLS_KEY those of --tls-ca,
--tls-cert and --tls-key; WORK_WEBUI_USER, WORK_WEBUI_PASSWORD and WORK_WEBUI_TOKEN those of "work ui".`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return usagef("missing command")
		},
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	pf := root.PersistentFlags()
	pf.StringVar(&a.redisAddr, "redis", cli.Env(cli.EnvRedis, cli.DefaultRedis), "Redis address: host:port, or a redis:// or rediss:// URL with user, password and database ($WORK_REDIS)")
	a.tls.AddFlags(pf)
	pf.IntVar(&a.database, "database", -1, "Redis database, overriding the URL's (-1: the URL's, else 0)")
	pf.StringVar(&a.ns, "ns", cli.Env(cli.EnvNamespace, cli.DefaultNamespace), "namespace ($WORK_NS)")
	pf.BoolVar(&a.json, "json", false, "print JSON instead of tables")

	root.AddCommand(
		a.statsCommand(),
		a.queuesCommand(),
		a.enqueueCommand(),
		a.setCommand(work.JobStateDead),
		a.setCommand(work.JobStateRetry),
		a.setCommand(work.JobStateScheduled),
		a.pauseCommand(true),
		a.pauseCommand(false),
		a.jobCommand(),
		a.batchCommand(),
		a.batchesCommand(),
		a.keysCommand(),
		a.cancelCommand(),
		a.periodicCommand(),
		a.schedulesCommand(),
		a.debouncedCommand(),
		a.rescheduleCommand(),
		a.replaceArgsCommand(),
		a.groupsCommand(),
		a.watchCommand(),
		a.uiCommand(),
	)
	return root
}
