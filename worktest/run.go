// Package worktest helps test code that uses github.com/workqueue/work: run a handler inline, with
// its middleware, on a job made from args; check which jobs the code under test enqueued; wait for a
// worker pool to finish its queues.
//
// Run and RunJob need no Redis. Enqueued, Scheduled, AssertEnqueued, AssertNotEnqueued and Namespace
// read a real Redis through a redigo pool, in a namespace of the test's own; Drain waits for a
// started WorkerPool.
//
//	func TestSendEmail(t *testing.T) {
//		c := &Context{}
//		err := worktest.Run((*Context).SendEmail, work.Q{"address": "a@example.com"},
//			worktest.WithCustomContext(c),
//			worktest.WithMiddleware((*Context).FindCustomer))
//		if err != nil {
//			t.Fatal(err)
//		}
//	}
//
//	func TestSignupEnqueuesWelcomeEmail(t *testing.T) {
//		ns := worktest.Namespace(t, redisPool)
//		signup(work.NewEnqueuer(ns, redisPool), "a@example.com")
//		worktest.AssertEnqueued(t, redisPool, ns, "send_email", work.Q{"address": "a@example.com"})
//	}
package worktest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"runtime/debug"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work"
)

// Option configures Run and RunJob.
type Option func(*runConfig)

type runConfig struct {
	ctx        context.Context
	custom     reflect.Value // a *Ctx, or invalid
	middleware []interface{}
	name       string
	fails      int64
	timeout    time.Duration
	noRecover  bool
}

// WithContext sets the context.Context given to handlers and middleware that take one. Default:
// context.Background().
func WithContext(ctx context.Context) Option { return func(c *runConfig) { c.ctx = ctx } }

// WithCustomContext sets the custom context (the pool's context struct) given to handlers and
// middleware that take a *Ctx: pass a pointer to read what the middleware and handler left in it
// after the run, or a struct value to start from a copy of it. Default: a new zero value of the *Ctx
// type the handler or the middleware take, as a WorkerPool allocates for each job.
func WithCustomContext(v interface{}) Option {
	return func(c *runConfig) {
		rv := reflect.ValueOf(v)
		switch {
		case rv.Kind() == reflect.Ptr && !rv.IsNil() && rv.Elem().Kind() == reflect.Struct:
			c.custom = rv
		case rv.Kind() == reflect.Struct:
			p := reflect.New(rv.Type())
			p.Elem().Set(rv)
			c.custom = p
		default:
			panic(fmt.Sprintf("worktest: WithCustomContext needs a struct or a pointer to one, got %T", v))
		}
	}
}

// WithMiddleware runs the given middleware around the handler, in order, as WorkerPool.Middleware
// would. Each may have any form WorkerPool.Middleware accepts.
func WithMiddleware(middleware ...interface{}) Option {
	return func(c *runConfig) { c.middleware = append(c.middleware, middleware...) }
}

// WithJobName sets the name of the job Run makes. Default: "test_job".
func WithJobName(name string) Option { return func(c *runConfig) { c.name = name } }

// WithFails sets the job's Fails, as on a retry: Fails 2 is the third attempt.
func WithFails(fails int64) Option { return func(c *runConfig) { c.fails = fails } }

// WithTimeout runs the job as with JobOptions.Timeout: the context handed down is cancelled after d,
// and a handler that returns nil after d yields context.DeadlineExceeded.
func WithTimeout(d time.Duration) Option { return func(c *runConfig) { c.timeout = d } }

// WithoutRecover lets a panic in the handler or middleware go on to the caller instead of being
// returned as a *PanicError.
func WithoutRecover() Option { return func(c *runConfig) { c.noRecover = true } }

// PanicError is what Run and RunJob return when the handler or a middleware panicked, as a
// WorkerPool counts a panic as a failure. Its Error text is fmt.Sprintf("%v", Value), the text a
// pool records as the job's err.
type PanicError struct {
	Value interface{}
	Stack []byte
}

func (p *PanicError) Error() string { return fmt.Sprintf("%v", p.Value) }

// Run makes a job from args, as a WorkerPool would see it after the job went through Redis (the
// args encoded to JSON and decoded back, so numbers are float64 as in production), and runs it
// through the middleware and handler. It returns the error the pool would record: the chain's
// error, a *PanicError for a panic, or context.DeadlineExceeded after WithTimeout.
//
// handler may have any form WorkerPool.Job accepts; a form it rejects panics with the same message.
// Args that cannot be encoded to JSON make Run return an error without running anything.
func Run(handler interface{}, args map[string]interface{}, opts ...Option) error {
	cfg := runConfig{name: "test_job"}
	for _, o := range opts {
		o(&cfg)
	}
	job := &work.Job{Name: cfg.name, ID: newID(), EnqueuedAt: time.Now().Unix(), Args: args, Fails: cfg.fails}
	raw, err := json.Marshal(job)
	if err != nil {
		return fmt.Errorf("worktest: encoding the job: %w", err)
	}
	job, err = DecodeJob(raw)
	if err != nil {
		return err
	}
	return run(handler, job, &cfg)
}

// RunJob runs job through the middleware and handler as Run does, but with job as given: its args
// are not encoded and decoded, so a handler sees exactly the values in job.Args. WithJobName and
// WithFails do not apply.
func RunJob(handler interface{}, job *work.Job, opts ...Option) error {
	cfg := runConfig{}
	for _, o := range opts {
		o(&cfg)
	}
	return run(handler, job, &cfg)
}

var (
	typeJob     = reflect.TypeOf((*work.Job)(nil))
	typeError   = reflect.TypeOf((*error)(nil)).Elem()
	typeContext = reflect.TypeOf((*context.Context)(nil)).Elem()
)

func run(handler interface{}, job *work.Job, cfg *runConfig) (err error) {
	ctxType := customType(cfg, handler)
	validate(ctxType, handler, cfg.middleware)

	var custom reflect.Value
	if ctxType != nil {
		custom = cfg.custom
		if !custom.IsValid() {
			custom = reflect.New(ctxType)
		}
	}
	ctx := cfg.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	if cfg.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.timeout)
		defer cancel()
	}
	if !cfg.noRecover {
		defer func() {
			if p := recover(); p != nil {
				err = &PanicError{Value: p, Stack: debug.Stack()}
			}
		}()
	}

	i := 0
	var next func(context.Context) error
	next = func(c context.Context) error {
		if i < len(cfg.middleware) {
			m := cfg.middleware[i]
			i++
			return call(m, custom, c, job, next)
		}
		return call(handler, custom, c, job, nil)
	}
	err = next(ctx)
	if err == nil && cfg.timeout > 0 && ctx.Err() == context.DeadlineExceeded {
		err = context.DeadlineExceeded
	}
	return err
}

// customType returns the custom context type: the type of WithCustomContext, or the struct that the
// first parameter of the handler or a middleware points to, or nil when none takes one.
func customType(cfg *runConfig, handler interface{}) reflect.Type {
	if cfg.custom.IsValid() {
		return cfg.custom.Type().Elem()
	}
	for _, fn := range append([]interface{}{handler}, cfg.middleware...) {
		t := reflect.TypeOf(fn)
		if t == nil || t.Kind() != reflect.Func || t.NumIn() == 0 {
			continue
		}
		if in := t.In(0); in.Kind() == reflect.Ptr && in.Elem().Kind() == reflect.Struct && in != typeJob {
			return in.Elem()
		}
	}
	return nil
}

// validate registers the handler and middleware on a WorkerPool that is never started, so that a form
// the pool rejects panics here with the pool's own message.
func validate(ctxType reflect.Type, handler interface{}, middleware []interface{}) {
	ctx := interface{}(struct{}{})
	if ctxType != nil {
		ctx = reflect.New(ctxType).Elem().Interface()
	}
	wp := work.NewWorkerPool(ctx, 1, "worktest", &redis.Pool{})
	for _, m := range middleware {
		wp.Middleware(m)
	}
	wp.Job("worktest", handler)
}

// call calls a handler (next == nil) or a middleware of any accepted form, filling in its parameters
// by type.
func call(fn interface{}, custom reflect.Value, ctx context.Context, job *work.Job, next func(context.Context) error) error {
	v := reflect.ValueOf(fn)
	t := v.Type()
	in := make([]reflect.Value, t.NumIn())
	for k := 0; k < t.NumIn(); k++ {
		pt := t.In(k)
		switch {
		case pt == typeJob:
			in[k] = reflect.ValueOf(job)
		case pt == typeContext:
			in[k] = reflect.ValueOf(&ctx).Elem()
		case pt.Kind() == reflect.Ptr:
			in[k] = custom
		case pt.Kind() == reflect.Func && pt.NumIn() == 0:
			in[k] = reflect.MakeFunc(pt, func([]reflect.Value) []reflect.Value {
				return errorResult(next(ctx))
			})
		case pt.Kind() == reflect.Func && pt.NumIn() == 1:
			in[k] = reflect.MakeFunc(pt, func(args []reflect.Value) []reflect.Value {
				c, _ := args[0].Interface().(context.Context)
				if c == nil {
					c = ctx
				}
				return errorResult(next(c))
			})
		default:
			panic(fmt.Sprintf("worktest: cannot call %T", fn))
		}
	}
	out := v.Call(in)
	if e := out[0]; !e.IsNil() {
		return e.Interface().(error)
	}
	return nil
}

func errorResult(err error) []reflect.Value {
	v := reflect.New(typeError).Elem()
	if err != nil {
		v.Set(reflect.ValueOf(err))
	}
	return []reflect.Value{v}
}
