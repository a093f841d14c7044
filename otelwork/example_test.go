package otelwork_test

import (
	"context"
	"log"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work"
	"github.com/workqueue/work/otelwork"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
)

func Example() {
	pool := &redis.Pool{Dial: func() (redis.Conn, error) { return redis.Dial("tcp", ":6379") }}

	// Worker side: the middleware goes first, so that the others run inside the job's span.
	wp := work.NewWorkerPool(struct{}{}, 10, "my_app", pool)
	wp.Middleware(otelwork.Middleware())
	wp.Job("send_email", func(ctx context.Context, job *work.Job) error {
		// ctx carries the "process send_email" span: spans started from it are its children.
		_, span := otel.Tracer("mailer").Start(ctx, "smtp")
		defer span.End()
		return nil
	})
	wp.Start()
	defer wp.Stop()

	// Enqueue side, in a request handler whose ctx holds the request's span.
	ctx, span := otel.Tracer("web").Start(context.Background(), "POST /signup", trace.WithSpanKind(trace.SpanKindServer))
	defer span.End()
	enqueuer := work.NewEnqueuer("my_app", pool)
	if _, err := otelwork.Enqueue(ctx, enqueuer, "send_email", work.Q{"address": "a@example.com"}); err != nil {
		log.Print(err)
	}
}
