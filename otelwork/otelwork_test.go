package otelwork_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work"
	"github.com/workqueue/work/internal/redistest"
	"github.com/workqueue/work/otelwork"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// The tests run against the Redis at $WORK_TEST_REDIS (default 127.0.0.1:6379), each in a namespace of
// its own that it deletes when it ends.

func TestMain(m *testing.M) {
	if os.Getenv("WORK_TEST_LOG") == "" {
		slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	}
	os.Exit(m.Run())
}

func testPool(t *testing.T) *redis.Pool { return redistest.Pool(t, 20) }

func testNamespace(t *testing.T, pool *redis.Pool) string {
	return redistest.Namespace(t, pool, "otelwork-test")
}

func newProvider() (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	sr := tracetest.NewSpanRecorder()
	return sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr)), sr
}

// traced is the start of most tests: a Redis pool, a namespace of the test's own, and a tracer
// provider whose spans sr records, with the option that makes the helpers use it.
func traced(t *testing.T) (*redis.Pool, string, *sdktrace.TracerProvider, *tracetest.SpanRecorder, otelwork.Option) {
	pool := testPool(t)
	tp, sr := newProvider()
	return pool, testNamespace(t, pool), tp, sr, otelwork.WithTracerProvider(tp)
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

func byName(spans []sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// waitSpans waits until sr has ended n spans named name.
func waitSpans(t *testing.T, sr *tracetest.SpanRecorder, name string, n int) []sdktrace.ReadOnlySpan {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := byName(sr.Ended(), name)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d spans %q ended, want %d", len(got), name, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestEnqueueAndProcessAreOneTrace(t *testing.T) {
	pool, ns, tp, sr, opt := traced(t)

	// The enqueue side: inside a request's span.
	ctx, parent := tp.Tracer("app").Start(context.Background(), "POST /signup")
	args := work.Q{"address": "a@example.com", "n": 7}
	before := fmt.Sprint(args)
	enq := work.NewEnqueuer(ns, pool)
	job, err := otelwork.Enqueue(ctx, enq, "send_email", args, opt)
	if err != nil {
		t.Fatal(err)
	}
	parent.End()
	if fmt.Sprint(args) != before {
		t.Fatalf("the caller's args changed: %v", args)
	}

	// The job's JSON carries the producer span's traceparent under TraceArg.
	producer := waitSpans(t, sr, "send send_email", 1)[0]
	c := pool.Get()
	raw, err := redis.Bytes(c.Do("LINDEX", ns+":jobs:send_email", 0))
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	var stored struct {
		Args map[string]json.RawMessage `json:"args"`
	}
	if err := json.Unmarshal(raw, &stored); err != nil {
		t.Fatal(err)
	}
	var tc map[string]string
	if err := json.Unmarshal(stored.Args[otelwork.TraceArg], &tc); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	psc := producer.SpanContext()
	want := fmt.Sprintf("00-%s-%s-01", psc.TraceID(), psc.SpanID())
	if tc["traceparent"] != want {
		t.Fatalf("traceparent %q, want %q (job %s)", tc["traceparent"], want, raw)
	}

	// The worker side: the handler sees the consumer span in its context.
	var handlerSpan atomic.Value
	wp := work.NewWorkerPool(struct{}{}, 2, ns, pool)
	wp.Middleware(otelwork.Middleware(opt))
	wp.Job("send_email", func(ctx context.Context, j *work.Job) error {
		handlerSpan.Store(trace.SpanContextFromContext(ctx))
		if j.ArgString("address") != "a@example.com" || j.ArgInt64("n") != 7 {
			return errors.New("wrong args")
		}
		return j.ArgError()
	})
	wp.Start()
	defer wp.Stop()
	consumer := waitSpans(t, sr, "process send_email", 1)[0]

	for _, s := range []sdktrace.ReadOnlySpan{producer, consumer} {
		var kv []string
		for _, a := range s.Attributes() {
			kv = append(kv, string(a.Key)+"="+a.Value.Emit())
		}
		t.Logf("span %q kind=%v trace=%s span=%s parent=%s remote-parent=%v attrs=%s",
			s.Name(), s.SpanKind(), s.SpanContext().TraceID(), s.SpanContext().SpanID(), s.Parent().SpanID(),
			s.Parent().IsRemote(), strings.Join(kv, " "))
	}
	if got := producer.Parent().SpanID(); got != parent.SpanContext().SpanID() {
		t.Errorf("producer's parent %s, want the request span %s", got, parent.SpanContext().SpanID())
	}
	if producer.SpanKind() != trace.SpanKindProducer || consumer.SpanKind() != trace.SpanKindConsumer {
		t.Errorf("kinds %v, %v", producer.SpanKind(), consumer.SpanKind())
	}
	if consumer.Parent().SpanID() != psc.SpanID() || consumer.SpanContext().TraceID() != psc.TraceID() {
		t.Errorf("consumer parent %s trace %s, want producer %s trace %s",
			consumer.Parent().SpanID(), consumer.SpanContext().TraceID(), psc.SpanID(), psc.TraceID())
	}
	if !consumer.Parent().IsRemote() {
		t.Error("consumer's parent is not remote")
	}
	if got, _ := handlerSpan.Load().(trace.SpanContext); got.SpanID() != consumer.SpanContext().SpanID() {
		t.Errorf("handler's span %s, want the consumer span %s", got.SpanID(), consumer.SpanContext().SpanID())
	}
	if consumer.Status().Code != codes.Unset {
		t.Errorf("status %v", consumer.Status())
	}
	a := attrs(consumer)
	for k, v := range map[attribute.Key]interface{}{
		"messaging.system":           "work",
		"messaging.operation.type":   "process",
		"messaging.destination.name": "send_email",
		"messaging.message.id":       job.ID,
		"work.job.name":              "send_email",
		"work.job.id":                job.ID,
		"work.job.attempt":           int64(1),
		"work.job.fails":             int64(0),
		"work.job.enqueued_at":       job.EnqueuedAt,
	} {
		if got := a[k].AsInterface(); !reflect.DeepEqual(got, v) {
			t.Errorf("consumer %s = %v, want %v", k, got, v)
		}
	}
	pa := attrs(producer)
	if pa["messaging.message.id"].AsString() != job.ID || pa["work.namespace"].AsString() != ns ||
		pa["messaging.operation.type"].AsString() != "send" {
		t.Errorf("producer attributes %v", pa)
	}
}

func TestFailuresPanicsAndRetries(t *testing.T) {
	pool, ns, tp, sr, opt := traced(t)

	ctx, parent := tp.Tracer("app").Start(context.Background(), "batch")
	enq := work.NewEnqueuer(ns, pool)
	if _, err := otelwork.Enqueue(ctx, enq, "flaky", nil, opt); err != nil {
		t.Fatal(err)
	}
	if _, err := otelwork.Enqueue(ctx, enq, "panicky", work.Q{}, opt); err != nil {
		t.Fatal(err)
	}
	parent.End()

	var attempts atomic.Int64
	wp := work.NewWorkerPool(struct{}{}, 2, ns, pool)
	wp.Middleware(otelwork.Middleware(opt))
	// Retry at once, so that the second attempt runs within the test.
	wp.JobWithOptions("flaky", work.JobOptions{MaxFails: 3, Backoff: func(*work.Job) int64 { return 0 }},
		func(job *work.Job) error {
			if attempts.Add(1) == 1 {
				return errors.New("smtp timeout")
			}
			return nil
		})
	wp.JobWithOptions("panicky", work.JobOptions{MaxFails: 1}, func(job *work.Job) error { panic("nil map") })
	wp.Job("sleepy", func(job *work.Job) error { return work.Snooze(time.Hour) })
	wp.JobWithOptions("slow", work.JobOptions{Timeout: time.Millisecond}, func(job *work.Job) error {
		time.Sleep(20 * time.Millisecond)
		return nil
	})
	enq.Enqueue("sleepy", nil)
	enq.Enqueue("slow", nil)
	wp.Start()
	defer wp.Stop()

	flaky := waitSpans(t, sr, "process flaky", 2)
	panicky := waitSpans(t, sr, "process panicky", 1)[0]
	producer := waitSpans(t, sr, "send flaky", 1)[0]

	first, second := flaky[0], flaky[1]
	if first.Status().Code != codes.Error || first.Status().Description != "smtp timeout" {
		t.Errorf("first attempt status %v", first.Status())
	}
	if len(first.Events()) == 0 || first.Events()[0].Name != "exception" {
		t.Errorf("first attempt events %v, want the recorded error", first.Events())
	}
	if second.Status().Code != codes.Unset {
		t.Errorf("second attempt status %v", second.Status())
	}
	if a := attrs(second); a["work.job.attempt"].AsInt64() != 2 || a["work.job.fails"].AsInt64() != 1 {
		t.Errorf("second attempt attributes %v", a)
	}
	// The retried job keeps its trace context: both attempts are children of the producer span.
	for _, s := range flaky {
		if s.Parent().SpanID() != producer.SpanContext().SpanID() {
			t.Errorf("attempt %v parent %s, want %s", attrs(s)["work.job.attempt"], s.Parent().SpanID(), producer.SpanContext().SpanID())
		}
	}
	if panicky.Status().Code != codes.Error || panicky.Status().Description != "nil map" {
		t.Errorf("panicking attempt status %v", panicky.Status())
	}
	sleepy := waitSpans(t, sr, "process sleepy", 1)[0]
	if sleepy.Status().Code != codes.Unset || len(sleepy.Events()) != 1 || sleepy.Events()[0].Name != "snoozed" {
		t.Errorf("snoozed attempt: status %v events %v", sleepy.Status(), sleepy.Events())
	}
	slow := waitSpans(t, sr, "process slow", 1)[0]
	if slow.Status().Code != codes.Error || slow.Status().Description != context.DeadlineExceeded.Error() {
		t.Errorf("attempt past its timeout: status %v", slow.Status())
	}
	// The panic went on to the pool, which sent the job (MaxFails 1) to the dead set.
	client := work.NewClient(ns, pool)
	deadline := time.Now().Add(5 * time.Second)
	for {
		dead, _, err := client.DeadJobs(1)
		if err != nil {
			t.Fatal(err)
		}
		if len(dead) == 1 && dead[0].Name == "panicky" && dead[0].LastErr == "nil map" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dead jobs %v", dead)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestWithLinks(t *testing.T) {
	pool, ns, tp, sr, opt := traced(t)

	ctx, parent := tp.Tracer("app").Start(context.Background(), "request")
	enq := work.NewEnqueuer(ns, pool)
	if _, err := otelwork.Enqueue(ctx, enq, "report", work.Q{"id": 1}, opt); err != nil {
		t.Fatal(err)
	}
	parent.End()
	wp := work.NewWorkerPool(struct{}{}, 1, ns, pool)
	wp.Middleware(otelwork.Middleware(opt, otelwork.WithLinks(), otelwork.WithAttributes(attribute.String("work.namespace", ns))))
	wp.Job("report", func(job *work.Job) error { return nil })
	wp.Start()
	defer wp.Stop()

	consumer := waitSpans(t, sr, "process report", 1)[0]
	producer := waitSpans(t, sr, "send report", 1)[0]
	if consumer.Parent().IsValid() {
		t.Errorf("consumer has parent %s, want a root span", consumer.Parent().SpanID())
	}
	if consumer.SpanContext().TraceID() == producer.SpanContext().TraceID() {
		t.Error("consumer is in the producer's trace, want a new one")
	}
	links := consumer.Links()
	if len(links) != 1 || links[0].SpanContext.SpanID() != producer.SpanContext().SpanID() ||
		links[0].SpanContext.TraceID() != producer.SpanContext().TraceID() {
		t.Errorf("links %v, want one to the producer span", links)
	}
	if attrs(consumer)["work.namespace"].AsString() != ns {
		t.Errorf("attributes %v", attrs(consumer))
	}
}

func TestJobsWithoutTraceContext(t *testing.T) {
	pool, ns, _, sr, opt := traced(t)

	// Enqueued by a plain Enqueuer (or another language): a root consumer span.
	enq := work.NewEnqueuer(ns, pool)
	if _, err := enq.Enqueue("plain", work.Q{otelwork.TraceArg: "not an object"}); err != nil {
		t.Fatal(err)
	}
	wp := work.NewWorkerPool(struct{}{}, 1, ns, pool)
	wp.Middleware(otelwork.Middleware(opt))
	wp.Job("plain", func(job *work.Job) error { return nil })
	wp.Start()
	defer wp.Stop()
	s := waitSpans(t, sr, "process plain", 1)[0]
	if s.Parent().IsValid() || len(s.Links()) != 0 {
		t.Errorf("parent %v links %v, want none", s.Parent(), s.Links())
	}
}

func TestInjectExtract(t *testing.T) {
	tp, _ := newProvider()
	ctx, span := tp.Tracer("t").Start(context.Background(), "s")
	defer span.End()

	args := map[string]interface{}{"a": 1}
	got := otelwork.Inject(ctx, args)
	if _, ok := args[otelwork.TraceArg]; ok || len(args) != 1 {
		t.Fatalf("Inject changed its argument: %v", args)
	}
	if got["a"] != 1 || got[otelwork.TraceArg] == nil {
		t.Fatalf("Inject = %v", got)
	}
	// Through JSON, as a worker sees it.
	b, _ := json.Marshal(got)
	job := &work.Job{}
	if err := json.Unmarshal(b, &job.Args); err != nil {
		t.Fatal(err)
	}
	sc := trace.SpanContextFromContext(otelwork.Extract(context.Background(), job))
	if sc.SpanID() != span.SpanContext().SpanID() || sc.TraceID() != span.SpanContext().TraceID() || !sc.IsRemote() {
		t.Fatalf("Extract = %v, want %v", sc, span.SpanContext())
	}

	// No span in ctx: args come back as they were, and nil stays nil.
	if out := otelwork.Inject(context.Background(), nil); out != nil {
		t.Fatalf("Inject without a span = %v, want nil", out)
	}
}

func TestEnqueueInAndUniqueByKey(t *testing.T) {
	pool, ns, tp, sr, opt := traced(t)
	enq := work.NewEnqueuer(ns, pool)

	ctx, parent := tp.Tracer("app").Start(context.Background(), "request")
	defer parent.End()
	sj, err := otelwork.EnqueueIn(ctx, enq, "later", 60, work.Q{"x": 1}, opt)
	if err != nil || sj == nil || sj.RunAt == 0 {
		t.Fatalf("EnqueueIn = %v, %v", sj, err)
	}
	if _, ok := sj.Args[otelwork.TraceArg]; !ok {
		t.Errorf("scheduled job args %v, want %s", sj.Args, otelwork.TraceArg)
	}

	// Two enqueues from different spans with the same args: the second is a duplicate.
	args := work.Q{"user": 5}
	j1, err := otelwork.EnqueueUniqueByKey(ctx, enq, "reindex", args, nil, opt)
	if err != nil || j1 == nil {
		t.Fatalf("first unique enqueue = %v, %v", j1, err)
	}
	ctx2, other := tp.Tracer("app").Start(context.Background(), "another request")
	j2, err := otelwork.EnqueueUniqueByKey(ctx2, enq, "reindex", args, nil, opt)
	other.End()
	if err != nil || j2 != nil {
		t.Fatalf("duplicate unique enqueue = %v, %v; want nil, nil", j2, err)
	}
	// Same unique key as a plain EnqueueUnique of the same args.
	if j3, err := enq.EnqueueUnique("reindex", args); err != nil || j3 != nil {
		t.Fatalf("EnqueueUnique after the traced one = %v, %v; want a duplicate", j3, err)
	}
	spans := byName(sr.Ended(), "send reindex")
	if len(spans) != 2 || !attrs(spans[1])["work.job.duplicate"].AsBool() {
		t.Errorf("unique producer spans %d; duplicate attribute %v", len(spans), attrs(spans[len(spans)-1]))
	}
}

// A keyed job's key is an attribute of its producer and consumer spans; a job without a key has none.
func TestKeyedJobsCarryTheirKey(t *testing.T) {
	pool, ns, tp, sr, opt := traced(t)
	enq := work.NewEnqueuer(ns, pool)

	ctx, parent := tp.Tracer("app").Start(context.Background(), "request")
	keyed, err := otelwork.EnqueueWith(ctx, enq, "sync", work.Q{"n": 1}, work.EnqueueOptions{Key: "tenant-a"}, opt)
	if err != nil || keyed == nil || keyed.Key != "tenant-a" {
		t.Fatalf("EnqueueWith = %+v, %v", keyed, err)
	}
	plain, err := otelwork.Enqueue(ctx, enq, "sync", work.Q{"n": 2}, opt)
	if err != nil {
		t.Fatal(err)
	}
	// Unique by its args as given: the trace context, which differs per request, is left out.
	uniq := work.EnqueueOptions{Key: "tenant-b", Unique: true}
	if j, err := otelwork.EnqueueWith(ctx, enq, "sync", work.Q{"n": 3}, uniq, opt); err != nil || j == nil {
		t.Fatalf("unique EnqueueWith = %v, %v", j, err)
	}
	ctx2, other := tp.Tracer("app").Start(context.Background(), "another request")
	if j, err := otelwork.EnqueueWith(ctx2, enq, "sync", work.Q{"n": 3}, uniq, opt); err != nil || j != nil {
		t.Fatalf("duplicate unique EnqueueWith = %v, %v; want nil, nil", j, err)
	}
	other.End()
	parent.End()

	wp := work.NewWorkerPool(struct{}{}, 2, ns, pool)
	wp.Middleware(otelwork.Middleware(opt))
	wp.JobWithOptions("sync", work.JobOptions{KeyConcurrency: 1}, func(job *work.Job) error { return nil })
	wp.Start()
	defer wp.Stop()
	consumers := waitSpans(t, sr, "process sync", 3)
	producers := byName(sr.Ended(), "send sync")
	if len(producers) != 4 {
		t.Fatalf("%d producer spans, want 4", len(producers))
	}

	key := func(s sdktrace.ReadOnlySpan) (string, bool) {
		v, ok := attrs(s)["work.job.key"]
		return v.AsString(), ok
	}
	byID := map[string]string{keyed.ID: "tenant-a", plain.ID: ""}
	for _, s := range consumers {
		id := attrs(s)["work.job.id"].AsString()
		want, known := byID[id]
		if !known {
			want = "tenant-b"
		}
		if got, ok := key(s); got != want || ok != (want != "") {
			t.Errorf("consumer span of job %s: work.job.key %q (present %v), want %q", id, got, ok, want)
		}
		if id == keyed.ID && s.Parent().SpanID() != producers[0].SpanContext().SpanID() {
			t.Errorf("the keyed job's consumer span is not the child of its producer span")
		}
	}
	for i, want := range []string{"tenant-a", "", "tenant-b", "tenant-b"} {
		if got, ok := key(producers[i]); got != want || ok != (want != "") {
			t.Errorf("producer span %d: work.job.key %q (present %v), want %q", i, got, ok, want)
		}
	}
	if !attrs(producers[3])["work.job.duplicate"].AsBool() {
		t.Errorf("the duplicate's producer span: %v", attrs(producers[3]))
	}
}
