// Command workwebui serves the web UI and JSON API of a namespace (see package webui).
//
//	workwebui -redis redis://:password@redis.internal:6379/2 -ns my_app -listen 127.0.0.1:5040
//
// Flags:
//
//	-redis     Redis address: host:port, or a redis:// or rediss:// URL with user, password and
//	           database (default $WORK_REDIS, else 127.0.0.1:6379)
//	-tls-ca    PEM file of the CA certificates to trust for a rediss:// address, instead of the
//	           system's (default $WORK_REDIS_TLS_CA)
//	-tls-cert, -tls-key  a client certificate to present to a rediss:// address, for a server that
//	           asks for one (default $WORK_REDIS_TLS_CERT, $WORK_REDIS_TLS_KEY)
//	-database  Redis database, overriding the URL's (default: the URL's, else 0)
//	-ns        namespace (default $WORK_NS, else "work")
//	-listen    address to serve on (default 127.0.0.1:5040: this host only)
//	-user, -password  require basic authentication (default $WORK_WEBUI_USER, $WORK_WEBUI_PASSWORD)
//	-token     require a bearer token, or basic authentication with it as password
//	           (default $WORK_WEBUI_TOKEN)
//	-read-only refuse every action
//
// Prefer the environment variables to the -password and -token flags, which other users of the host
// can see in its process list. It exits with status 1, saying why, when Redis cannot be reached or the
// address cannot be listened on, with 2 on bad flags, and with 0 after SIGINT or SIGTERM, once the
// requests in progress are answered.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/workqueue/work/cmd/internal/cli"
	"github.com/workqueue/work/webui"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stderr))
}

func run(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("workwebui", flag.ContinueOnError)
	fs.SetOutput(stderr)
	redisAddr := fs.String("redis", cli.Env(cli.EnvRedis, cli.DefaultRedis), "Redis address: host:port, or a redis:// or rediss:// URL with user, password and database ($"+cli.EnvRedis+")")
	var tlsFiles cli.TLSFlags
	tlsFiles.AddFlags(fs)
	database := fs.Int("database", 0, "Redis database, overriding the URL's (default: the URL's, else 0)")
	ns := fs.String("ns", cli.Env(cli.EnvNamespace, cli.DefaultNamespace), "namespace ($"+cli.EnvNamespace+")")
	ui := &cli.UIFlags{}
	fs.StringVar(&ui.Listen, "listen", cli.DefaultListen, "address to serve on (host:port; \":5040\" serves every interface)")
	fs.StringVar(&ui.User, "user", os.Getenv(cli.EnvWebUIUser), "basic authentication user ($"+cli.EnvWebUIUser+")")
	fs.StringVar(&ui.Password, "password", os.Getenv(cli.EnvWebUIPassword), "basic authentication password ($"+cli.EnvWebUIPassword+")")
	fs.StringVar(&ui.Token, "token", os.Getenv(cli.EnvWebUIToken), "bearer token ($"+cli.EnvWebUIToken+")")
	fs.BoolVar(&ui.ReadOnly, "read-only", false, "refuse every action")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "workwebui: unexpected arguments %q\n", fs.Args())
		return 2
	}
	db := -1
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "database" {
			db = *database
		}
	})
	target, err := cli.ParseRedis(*redisAddr, db)
	if err == nil {
		err = target.UseTLSFiles(tlsFiles)
	}
	if err != nil {
		fmt.Fprintf(stderr, "workwebui: %v\n", err)
		return 2
	}
	opts, err := ui.Options()
	if err != nil {
		fmt.Fprintf(stderr, "workwebui: %v\n", err)
		return 2
	}
	pool := target.Pool(10)
	defer pool.Close()
	if err := target.Ping(pool); err != nil {
		fmt.Fprintf(stderr, "workwebui: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "workwebui: redis %s, database %d, namespace %q\n", target, target.Database(), *ns)
	srv := webui.NewServerWithOptions(*ns, pool, ui.Listen, opts)
	if err := cli.ServeUI(ctx, srv.Handler(), ui, stderr); err != nil {
		fmt.Fprintf(stderr, "workwebui: %v\n", err)
		return 1
	}
	fmt.Fprintln(stderr, "workwebui: stopped")
	return 0
}
