package work

import (
	"context"
	"fmt"
	"reflect"
)

// GenericHandler is a job handler without any custom context.
type GenericHandler func(*Job) error

// GenericMiddlewareHandler is a middleware without any custom context.
type GenericMiddlewareHandler func(*Job, NextMiddlewareFunc) error

// NextMiddlewareFunc is a function type (whose instances are named 'next') that you call to advance to
// the next middleware.
type NextMiddlewareFunc func() error

// ContextHandler is a job handler that receives a context.Context. The context is cancelled when the
// job's JobOptions.Timeout passes and when the pool is stopped past its deadline (StopContext).
type ContextHandler func(context.Context, *Job) error

// NextMiddlewareContextFunc advances to the next middleware or the handler with the given context, so a
// middleware can hand a derived context (a deadline, a tracing span) down the chain.
type NextMiddlewareContextFunc func(context.Context) error

// ContextMiddlewareHandler is a middleware that receives and passes on a context.Context.
type ContextMiddlewareHandler func(context.Context, *Job, NextMiddlewareContextFunc) error

var (
	typeJob     = reflect.TypeOf((*Job)(nil))
	typeError   = reflect.TypeOf((*error)(nil)).Elem()
	typeContext = reflect.TypeOf((*context.Context)(nil)).Elem()
	typeNext    = reflect.TypeOf(NextMiddlewareFunc(nil))
	typeNextCtx = reflect.TypeOf(NextMiddlewareContextFunc(nil))
)

// boundHandler and boundMiddleware are the uniform shapes every registered form is turned into once,
// at registration; cv is the per-job custom context (a *Ctx), invalid when no function needs one.
type boundHandler func(cv reflect.Value, ctx context.Context, job *Job) error
type boundMiddleware func(cv reflect.Value, ctx context.Context, job *Job, next NextMiddlewareContextFunc) error

const handlerForms = "func(*Job) error, func(*%[1]s, *Job) error, func(context.Context, *Job) error, " +
	"or func(*%[1]s, context.Context, *Job) error"

const middlewareForms = "func(*Job, NextMiddlewareFunc) error, func(*%[1]s, *Job, NextMiddlewareFunc) error, " +
	"func(context.Context, *Job, NextMiddlewareContextFunc) error, " +
	"or func(*%[1]s, context.Context, *Job, NextMiddlewareContextFunc) error"

// sameFuncType reports whether t is want or an unnamed func type with the same signature.
func sameFuncType(t, want reflect.Type) bool {
	return t == want || (t.Kind() == reflect.Func && t.ConvertibleTo(want))
}

// bindHandler turns fn into a boundHandler, reporting whether it uses the custom context. It panics
// with the list of valid forms when fn has none of them.
func bindHandler(ctxType reflect.Type, fn interface{}) (boundHandler, bool) {
	if _, _, ok := funcOf(fn); !ok {
		panic(fmt.Sprintf("work: handler is %T(nil) or not a function; valid forms are %s", fn, fmt.Sprintf(handlerForms, ctxType.Name())))
	}
	switch f := fn.(type) {
	case func(*Job) error:
		return func(_ reflect.Value, _ context.Context, j *Job) error { return f(j) }, false
	case GenericHandler:
		return func(_ reflect.Value, _ context.Context, j *Job) error { return f(j) }, false
	case func(context.Context, *Job) error:
		return func(_ reflect.Value, c context.Context, j *Job) error { return f(c, j) }, false
	case ContextHandler:
		return func(_ reflect.Value, c context.Context, j *Job) error { return f(c, j) }, false
	}
	v, t, ok := funcOf(fn)
	if ok && t.NumOut() == 1 && t.Out(0) == typeError && t.NumIn() >= 2 && t.In(0) == reflect.PointerTo(ctxType) {
		switch {
		case t.NumIn() == 2 && t.In(1) == typeJob:
			return func(cv reflect.Value, _ context.Context, j *Job) error {
				return asError(v.Call([]reflect.Value{cv, reflect.ValueOf(j)})[0])
			}, true
		case t.NumIn() == 3 && t.In(1) == typeContext && t.In(2) == typeJob:
			return func(cv reflect.Value, c context.Context, j *Job) error {
				return asError(v.Call([]reflect.Value{cv, reflect.ValueOf(c), reflect.ValueOf(j)})[0])
			}, true
		}
	}
	panic(fmt.Sprintf("work: handler has type %T; valid forms are %s", fn, fmt.Sprintf(handlerForms, ctxType.Name())))
}

// bindMiddleware turns fn into a boundMiddleware, like bindHandler.
func bindMiddleware(ctxType reflect.Type, fn interface{}) (boundMiddleware, bool) {
	if _, _, ok := funcOf(fn); !ok {
		panic(fmt.Sprintf("work: middleware is %T(nil) or not a function; valid forms are %s", fn, fmt.Sprintf(middlewareForms, ctxType.Name())))
	}
	switch f := fn.(type) {
	case func(*Job, NextMiddlewareFunc) error:
		return legacyMiddleware(f), false
	case GenericMiddlewareHandler:
		return legacyMiddleware(f), false
	case func(context.Context, *Job, NextMiddlewareContextFunc) error:
		return func(_ reflect.Value, c context.Context, j *Job, next NextMiddlewareContextFunc) error {
			return f(c, j, next)
		}, false
	case ContextMiddlewareHandler:
		return func(_ reflect.Value, c context.Context, j *Job, next NextMiddlewareContextFunc) error {
			return f(c, j, next)
		}, false
	case func(context.Context, *Job, func(context.Context) error) error:
		return func(_ reflect.Value, c context.Context, j *Job, next NextMiddlewareContextFunc) error {
			return f(c, j, next)
		}, false
	case func(*Job, func() error) error:
		return legacyMiddleware(func(j *Job, next NextMiddlewareFunc) error { return f(j, next) }), false
	}
	v, t, ok := funcOf(fn)
	if ok && t.NumOut() == 1 && t.Out(0) == typeError && t.NumIn() >= 3 && t.In(0) == reflect.PointerTo(ctxType) {
		switch {
		case t.NumIn() == 3 && t.In(1) == typeJob && sameFuncType(t.In(2), typeNext):
			nextType := t.In(2)
			return func(cv reflect.Value, c context.Context, j *Job, next NextMiddlewareContextFunc) error {
				n := reflect.ValueOf(NextMiddlewareFunc(func() error { return next(c) })).Convert(nextType)
				return asError(v.Call([]reflect.Value{cv, reflect.ValueOf(j), n})[0])
			}, true
		case t.NumIn() == 4 && t.In(1) == typeContext && t.In(2) == typeJob && sameFuncType(t.In(3), typeNextCtx):
			nextType := t.In(3)
			return func(cv reflect.Value, c context.Context, j *Job, next NextMiddlewareContextFunc) error {
				n := reflect.ValueOf(next).Convert(nextType)
				return asError(v.Call([]reflect.Value{cv, reflect.ValueOf(c), reflect.ValueOf(j), n})[0])
			}, true
		}
	}
	panic(fmt.Sprintf("work: middleware has type %T; valid forms are %s", fn, fmt.Sprintf(middlewareForms, ctxType.Name())))
}

// receivesContext reports whether fn, a handler or middleware, has a context.Context parameter.
func receivesContext(fn interface{}) bool {
	t := reflect.TypeOf(fn)
	if t == nil || t.Kind() != reflect.Func {
		return false
	}
	for i := 0; i < t.NumIn(); i++ {
		if t.In(i) == typeContext {
			return true
		}
	}
	return false
}

// funcOf returns fn's value and type when fn is a non-nil function.
func funcOf(fn interface{}) (reflect.Value, reflect.Type, bool) {
	if fn == nil {
		return reflect.Value{}, nil, false
	}
	v := reflect.ValueOf(fn)
	if v.Kind() != reflect.Func || v.IsNil() {
		return v, v.Type(), false
	}
	return v, v.Type(), true
}

func legacyMiddleware(f func(*Job, NextMiddlewareFunc) error) boundMiddleware {
	return func(_ reflect.Value, c context.Context, j *Job, next NextMiddlewareContextFunc) error {
		return f(j, func() error { return next(c) })
	}
}

func asError(v reflect.Value) error {
	if v.IsNil() {
		return nil
	}
	return v.Interface().(error)
}

// runChain runs the middleware in registration order, then the handler, with one fresh custom
// context (when any of them takes one) shared by the whole chain.
func runChain(ctxType reflect.Type, needsCtx bool, mws []boundMiddleware, h boundHandler, ctx context.Context, job *Job) error {
	var cv reflect.Value
	if needsCtx {
		cv = reflect.New(ctxType)
	}
	if len(mws) == 0 {
		return h(cv, ctx, job)
	}
	i := 0
	var next NextMiddlewareContextFunc
	next = func(c context.Context) error {
		if i < len(mws) {
			m := mws[i]
			i++
			return m(cv, c, job, next)
		}
		return h(cv, c, job)
	}
	return next(ctx)
}
