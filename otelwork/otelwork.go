// Package otelwork traces work jobs with OpenTelemetry, from the enqueue to every attempt to run them.
//
// Enqueue (and EnqueueIn, EnqueueUniqueByKey, EnqueueWith) start a producer span and carry its W3C trace
// context in the job; Middleware starts a consumer span for every attempt, child of that producer span (or, with
// WithLinks, the root of a new trace linked to it), and hands its context down the middleware chain
// to the handler:
//
//	// Enqueue side:
//	job, err := otelwork.Enqueue(ctx, enqueuer, "send_email", work.Q{"address": addr})
//
//	// Worker side:
//	wp.Middleware(otelwork.Middleware())
//	wp.Job("send_email", func(ctx context.Context, job *work.Job) error {
//		// trace.SpanFromContext(ctx) is the job's "process send_email" span.
//		return send(ctx, job.ArgString("address"))
//	})
//
// # Where the trace context goes
//
// A job's JSON has no room for headers, so the trace context is one reserved argument, TraceArg
// ("_trace"), an object of the propagator's fields, by default the W3C Trace Context ones:
//
//	{"name":"send_email","id":"…","t":1700000000,
//	 "args":{"address":"a@example.com",
//	         "_trace":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}}
//
// Producers in other languages can add the same object to have their trace continued. Pools without
// this middleware, and gocraft/work pools, run such jobs as usual: the argument is just one more key
// that handlers do not read. Handlers that iterate over all the arguments should skip TraceArg.
//
// The helpers copy the args map before adding TraceArg: the caller's map is never changed. A unique
// job compares its arguments, and every trace context differs, so EnqueueUnique would never find a
// duplicate: use EnqueueUniqueByKey, whose key map leaves the trace context out.
//
// # Spans
//
// The producer span is named "send <job name>" (kind producer) and the consumer span
// "process <job name>" (kind consumer). Both carry messaging.system "work",
// messaging.operation.type, messaging.destination.name (the job name) and messaging.message.id (the
// job ID), plus work.job.name and work.job.id, and work.job.key for a keyed job (EnqueueOptions.Key;
// an attribute of the span only, never a metric label, since keys have no bound). The consumer span
// adds work.job.attempt (1 for the first run), work.job.fails (failures so far) and
// work.job.enqueued_at (epoch seconds). An attempt that
// returns an error, panics or outlives its JobOptions.Timeout ends with status Error (the error is
// recorded as an exception event); the panic goes on to the pool. An attempt that returns work.Snooze
// is not an error: its span gets a "snoozed" event.
package otelwork

import (
	"context"
	"errors"
	"fmt"

	"github.com/workqueue/work"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// TraceArg is the reserved job argument that carries the trace context: an object whose keys and
// values are the propagator's fields, "traceparent" and, when set, "tracestate" by default.
const TraceArg = "_trace"

// ScopeName is the instrumentation scope of the tracers otelwork uses.
const ScopeName = "github.com/workqueue/work/otelwork"

// Option configures the helpers and the middleware.
type Option func(*config)

type config struct {
	tp         trace.TracerProvider
	propagator propagation.TextMapPropagator
	links      bool
	attrs      []attribute.KeyValue
}

// WithTracerProvider sets the TracerProvider. Default: otel.GetTracerProvider(), the global one.
func WithTracerProvider(tp trace.TracerProvider) Option { return func(c *config) { c.tp = tp } }

// WithPropagator sets how the trace context is written into and read from TraceArg. Default: the
// W3C Trace Context propagator (traceparent and tracestate), whatever the global propagator is, so that
// jobs carry the same fields whichever process enqueued them. Use a composite propagator to carry
// baggage too; enqueuers and middleware must agree.
func WithPropagator(p propagation.TextMapPropagator) Option {
	return func(c *config) { c.propagator = p }
}

// WithLinks makes the middleware start each consumer span as the root of a new trace, linked to the
// enqueuer's span, instead of as its child. Use it when jobs often run long after their enqueue, or
// when one request enqueues many jobs, to keep traces short.
func WithLinks() Option { return func(c *config) { c.links = true } }

// WithAttributes adds attributes to every span started, such as the namespace
// (attribute.String("work.namespace", ns)).
func WithAttributes(attrs ...attribute.KeyValue) Option {
	return func(c *config) { c.attrs = append(c.attrs, attrs...) }
}

func newConfig(opts []Option) *config {
	c := &config{propagator: propagation.TraceContext{}}
	for _, o := range opts {
		o(c)
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	return c
}

func (c *config) tracer() trace.Tracer { return c.tp.Tracer(ScopeName) }

// carrier is TraceArg's object as a propagation.TextMapCarrier.
type carrier map[string]interface{}

func (c carrier) Get(key string) string {
	s, _ := c[key].(string)
	return s
}

func (c carrier) Set(key, value string) { c[key] = value }

func (c carrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// Inject returns a copy of args with TraceArg set to the trace context of ctx, written by the W3C
// Trace Context propagator (or the one given with WithPropagator). args itself is not changed. When ctx
// holds no valid span context it returns args unchanged.
func Inject(ctx context.Context, args map[string]interface{}, opts ...Option) map[string]interface{} {
	return inject(ctx, args, newConfig(opts).propagator)
}

func inject(ctx context.Context, args map[string]interface{}, p propagation.TextMapPropagator) map[string]interface{} {
	c := carrier{}
	p.Inject(ctx, c)
	if len(c) == 0 {
		return args
	}
	out := make(map[string]interface{}, len(args)+1)
	for k, v := range args {
		out[k] = v
	}
	out[TraceArg] = map[string]interface{}(c)
	return out
}

// Extract returns ctx with the remote span context that job carries in TraceArg, as the parent for
// spans started from it. Without a valid trace context in the job it returns ctx unchanged.
func Extract(ctx context.Context, job *work.Job, opts ...Option) context.Context {
	return extract(ctx, job, newConfig(opts).propagator)
}

func extract(ctx context.Context, job *work.Job, p propagation.TextMapPropagator) context.Context {
	if job == nil {
		return ctx
	}
	m, ok := job.Args[TraceArg].(map[string]interface{})
	if !ok {
		return ctx
	}
	return p.Extract(ctx, carrier(m))
}

func commonAttrs(op, jobName string) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.String("messaging.system", "work"),
		attribute.String("messaging.operation.type", op),
		attribute.String("messaging.destination.name", jobName),
		attribute.String("work.job.name", jobName),
	}
}

// keyAttrs is the job's key, for a keyed job; nothing otherwise.
func keyAttrs(key string) []attribute.KeyValue {
	if key == "" {
		return nil
	}
	return []attribute.KeyValue{attribute.String("work.job.key", key)}
}

func idAttrs(id string) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.String("messaging.message.id", id),
		attribute.String("work.job.id", id),
	}
}

// produce runs enqueue inside a producer span whose context is injected into a copy of args; key is
// the job's key ("" for none).
func produce(ctx context.Context, e *work.Enqueuer, jobName, key string, args map[string]interface{}, opts []Option,
	enqueue func(args map[string]interface{}) (*work.Job, error)) (*work.Job, error) {
	cfg := newConfig(opts)
	attrs := append(append(commonAttrs("send", jobName), keyAttrs(key)...), cfg.attrs...)
	if e != nil {
		attrs = append(attrs, attribute.String("work.namespace", e.Namespace))
	}
	ctx, span := cfg.tracer().Start(ctx, "send "+jobName,
		trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
	defer span.End()
	job, err := enqueue(inject(ctx, args, cfg.propagator))
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return job, err
	}
	if job != nil {
		span.SetAttributes(idAttrs(job.ID)...)
	} else {
		span.SetAttributes(attribute.Bool("work.job.duplicate", true))
	}
	return job, nil
}

// Enqueue enqueues a job like e.Enqueue, inside a producer span "send <jobName>" that is a child of
// ctx's span, and with that span's trace context in the job's TraceArg. args is not changed.
func Enqueue(ctx context.Context, e *work.Enqueuer, jobName string, args map[string]interface{}, opts ...Option) (*work.Job, error) {
	return produce(ctx, e, jobName, "", args, opts, func(a map[string]interface{}) (*work.Job, error) {
		return e.Enqueue(jobName, a)
	})
}

// EnqueueIn schedules a job like e.EnqueueIn, traced like Enqueue.
func EnqueueIn(ctx context.Context, e *work.Enqueuer, jobName string, secondsFromNow int64, args map[string]interface{}, opts ...Option) (*work.ScheduledJob, error) {
	var sj *work.ScheduledJob
	_, err := produce(ctx, e, jobName, "", args, opts, func(a map[string]interface{}) (*work.Job, error) {
		var err error
		sj, err = e.EnqueueIn(jobName, secondsFromNow, a)
		if sj == nil {
			return nil, err
		}
		return sj.Job, err
	})
	return sj, err
}

// EnqueueUniqueByKey enqueues a unique job like e.EnqueueUniqueByKey, traced like Enqueue. keyMap
// decides uniqueness, so the trace context added to the args does not; a nil keyMap means args (as
// they were given, without the trace context). A duplicate returns (nil, nil) and, as with
// EnqueueUniqueByKey, replaces the args of the waiting job, trace context included.
func EnqueueUniqueByKey(ctx context.Context, e *work.Enqueuer, jobName string, args, keyMap map[string]interface{}, opts ...Option) (*work.Job, error) {
	keyMap = uniqueBy(keyMap, args)
	return produce(ctx, e, jobName, "", args, opts, func(a map[string]interface{}) (*work.Job, error) {
		return e.EnqueueUniqueByKey(jobName, a, keyMap)
	})
}

// uniqueBy returns what decides a unique job's uniqueness: keyMap, or else args as they were given
// (before the trace context is added to them), or else an empty map.
func uniqueBy(keyMap, args map[string]interface{}) map[string]interface{} {
	switch {
	case keyMap != nil:
		return keyMap
	case args != nil:
		return args
	}
	return map[string]interface{}{}
}

// EnqueueWith enqueues a job with options like e.EnqueueWith (a key, dependencies, a record, a time,
// uniqueness), traced like Enqueue; the producer span carries the job's key, if any, as
// work.job.key. A unique job (Unique without UniqueBy) compares args as they were given, without the
// trace context, as EnqueueUniqueByKey does; a duplicate returns (nil, nil).
func EnqueueWith(ctx context.Context, e *work.Enqueuer, jobName string, args map[string]interface{}, eo work.EnqueueOptions, opts ...Option) (*work.Job, error) {
	if eo.Unique {
		eo.UniqueBy = uniqueBy(eo.UniqueBy, args)
	}
	return produce(ctx, e, jobName, eo.Key, args, opts, func(a map[string]interface{}) (*work.Job, error) {
		return e.EnqueueWith(jobName, a, eo)
	})
}

// Middleware returns a middleware that runs every job attempt inside a consumer span
// "process <job name>" and passes the span's context down the chain, so that handlers and later
// middleware that take a context.Context see it. Register it first:
//
//	wp.Middleware(otelwork.Middleware())
//
// The span is a child of the enqueuer's span carried in TraceArg (with WithLinks: a new root linked to
// it); a job without TraceArg gets a root span. An error or a panic sets the span's status to Error;
// the error is returned and the panic goes on, unchanged.
func Middleware(opts ...Option) work.ContextMiddlewareHandler {
	cfg := newConfig(opts)
	tracer := cfg.tracer()
	return func(ctx context.Context, job *work.Job, next work.NextMiddlewareContextFunc) (err error) {
		attrs := append(append(commonAttrs("process", job.Name), idAttrs(job.ID)...), keyAttrs(job.Key)...)
		attrs = append(attrs,
			attribute.Int64("work.job.attempt", job.Fails+1),
			attribute.Int64("work.job.fails", job.Fails),
			attribute.Int64("work.job.enqueued_at", job.EnqueuedAt),
		)
		attrs = append(attrs, cfg.attrs...)
		startOpts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...)}
		parent := extract(ctx, job, cfg.propagator)
		if cfg.links {
			if sc := trace.SpanContextFromContext(parent); sc.IsValid() {
				startOpts = append(startOpts, trace.WithLinks(trace.Link{SpanContext: sc}))
			}
			startOpts = append(startOpts, trace.WithNewRoot())
			parent = ctx
		}
		spanCtx, span := tracer.Start(parent, "process "+job.Name, startOpts...)
		ended := false
		defer func() {
			if !ended { // the chain panicked; the pool recovers it
				if p := recover(); p != nil {
					msg := fmt.Sprintf("%v", p)
					span.AddEvent("panic", trace.WithAttributes(attribute.String("panic.value", msg)))
					span.SetStatus(codes.Error, msg)
					span.End()
					panic(p)
				}
				span.SetStatus(codes.Error, "job did not return")
			}
			span.End()
		}()
		err = next(spanCtx)
		ended = true
		var snooze *work.SnoozeError
		switch {
		case errors.As(err, &snooze):
			// Not a failure: the job runs again later.
			span.AddEvent("snoozed", trace.WithAttributes(attribute.String("work.job.snooze", snooze.Delay.String())))
		case err != nil:
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		case spanCtx.Err() == context.DeadlineExceeded:
			// Past JobOptions.Timeout: the pool fails the job although the handler returned nil.
			span.SetStatus(codes.Error, context.DeadlineExceeded.Error())
		}
		return err
	}
}
