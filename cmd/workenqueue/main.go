// Command workenqueue enqueues one job, as gocraft/work's command of the same name does:
//
//	workenqueue -redis 127.0.0.1:6379 -ns my_app -job send_email -args '{"address":"a@example.com"}'
//
// -redis accepts host:port or a redis:// or rediss:// URL (default $WORK_REDIS, else
// 127.0.0.1:6379); -tls-ca, -tls-cert and -tls-key secure a rediss:// one as in the work command.
// -ns defaults to $WORK_NS, else "work". -payload is accepted for -args, as older versions named it.
// It prints the job's ID. It exits with 1 when the job cannot be enqueued, and, as gocraft/work's
// command does, when -job is missing or -args is not a JSON object; with 2 on other bad flags. The
// work command (`work enqueue`) does the same and more.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/workqueue/work"
	"github.com/workqueue/work/cmd/internal/cli"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("workenqueue", flag.ContinueOnError)
	fs.SetOutput(stderr)
	redisAddr := fs.String("redis", cli.Env(cli.EnvRedis, cli.DefaultRedis), "Redis address: host:port, or a redis:// or rediss:// URL")
	var tlsFiles cli.TLSFlags
	tlsFiles.AddFlags(fs)
	database := fs.Int("database", -1, "Redis database, overriding the URL's (default: the URL's, else 0)")
	ns := fs.String("ns", cli.Env(cli.EnvNamespace, cli.DefaultNamespace), "namespace")
	job := fs.String("job", "", "job name")
	jobArgs := fs.String("args", "{}", "job arguments, a JSON object")
	fs.StringVar(jobArgs, "payload", "{}", "the same as -args")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	// gocraft/work's command exits with 1 for these two, and scripts may test for it.
	if *job == "" {
		fmt.Fprintln(stderr, "workenqueue: no job name: use -job NAME")
		return 1
	}
	var q map[string]interface{}
	dec := json.NewDecoder(bytes.NewReader([]byte(*jobArgs)))
	dec.UseNumber()
	if err := dec.Decode(&q); err != nil {
		fmt.Fprintf(stderr, "workenqueue: -args must be a JSON object: %v\n", err)
		return 1
	}
	target, err := cli.ParseRedis(*redisAddr, *database)
	if err == nil {
		err = target.UseTLSFiles(tlsFiles)
	}
	if err != nil {
		fmt.Fprintf(stderr, "workenqueue: %v\n", err)
		return 2
	}
	pool := target.Pool(2)
	defer pool.Close()
	j, err := work.NewEnqueuer(*ns, pool).Enqueue(*job, q)
	if err != nil {
		fmt.Fprintf(stderr, "workenqueue: cannot enqueue on %s: %v\n", target, err)
		return 1
	}
	fmt.Fprintln(stdout, j.ID)
	return 0
}
