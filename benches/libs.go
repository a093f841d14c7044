package main

import (
	"context"
	"encoding/json"
	"net"
	"sync/atomic"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/hibiken/asynq"
	goredis "github.com/redis/go-redis/v9"
	"github.com/workqueue/work"
)

// roundTrips counts writes on the sockets of the libraries' connections (both clients write one
// command, or one pipeline, per write): a client round-trip count.
var roundTrips atomic.Int64

type countingConn struct{ net.Conn }

func (c countingConn) Write(p []byte) (int, error) {
	roundTrips.Add(1)
	return c.Conn.Write(p)
}

func dialCounting(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return countingConn{c}, nil
}

// args is what a job carries.
type args int

const (
	argsNone      args = iota // no arguments (burn-down jobs)
	argsTimestamp             // {"t": enqueue time in Unix nanoseconds}
	argsSmall                 // {"addr": "test@example.com", "n": 1}
)

// producer enqueues jobs with single Enqueue calls. It is safe for concurrent use.
type producer interface {
	enqueue(name string, a args) error
	close()
}

// consumer is a worker pool (work) or a server (asynq) serving the given job names.
type consumer interface {
	start() error
	stop()
}

// onJob is called by every handler run; ts is the job's enqueue time (Unix ns) when it carries one.
type onJob func(ts int64)

// batchProducer is a producer whose library can enqueue many jobs in one call.
type batchProducer interface {
	// enqueueBatch enqueues jobs start..start+count-1, named round-robin over names, without args.
	enqueueBatch(names []string, start, count int) error
}

type library interface {
	name() string
	newProducer(conns int) producer
	newConsumer(concurrency int, names []string, wantTS bool, h onJob) consumer
}

// ---- work ----

const workNamespace = "bench"

type workLib struct{ addr string }

func (l workLib) name() string { return "work" }

func (l workLib) redigoPool(size int) *redigo.Pool {
	return &redigo.Pool{
		MaxActive: size,
		MaxIdle:   size,
		Wait:      true,
		Dial: func() (redigo.Conn, error) {
			return redigo.Dial("tcp", l.addr, redigo.DialContextFunc(dialCounting))
		},
	}
}

type workProducer struct {
	pool *redigo.Pool
	e    *work.Enqueuer
}

func (l workLib) newProducer(conns int) producer {
	pool := l.redigoPool(conns + 10)
	return &workProducer{pool: pool, e: work.NewEnqueuer(workNamespace, pool)}
}

func (p *workProducer) enqueue(name string, a args) error {
	var q work.Q
	switch a {
	case argsTimestamp:
		q = work.Q{"t": time.Now().UnixNano()}
	case argsSmall:
		q = work.Q{"addr": "test@example.com", "n": 1}
	}
	_, err := p.e.Enqueue(name, q)
	return err
}

func (p *workProducer) enqueueBatch(names []string, start, count int) error {
	jobs := make([]work.BatchJob, count)
	for i := range jobs {
		jobs[i].Name = names[(start+i)%len(names)]
	}
	_, err := p.e.EnqueueBatch(jobs)
	return err
}

func (p *workProducer) close() { p.pool.Close() }

type benchContext struct{}

type workConsumer struct {
	pool *redigo.Pool
	wp   *work.WorkerPool
}

func (l workLib) newConsumer(concurrency int, names []string, wantTS bool, h onJob) consumer {
	pool := l.redigoPool(concurrency + 10)
	wp := work.NewWorkerPool(benchContext{}, uint(concurrency), workNamespace, pool)
	handler := func(job *work.Job) error {
		var ts int64
		if wantTS {
			ts = job.ArgInt64("t")
		}
		h(ts)
		return nil
	}
	for _, n := range names {
		wp.Job(n, handler)
	}
	return &workConsumer{pool: pool, wp: wp}
}

func (c *workConsumer) start() error { c.wp.Start(); return nil }

func (c *workConsumer) stop() {
	c.wp.Stop()
	c.pool.Close()
}

// ---- asynq ----

// asynqConnOpt is asynq.RedisClientOpt (same go-redis options) with a dialer that counts round trips.
type asynqConnOpt struct {
	addr     string
	poolSize int
}

func (o asynqConnOpt) MakeRedisClient() interface{} {
	return goredis.NewClient(&goredis.Options{Addr: o.addr, PoolSize: o.poolSize, Dialer: dialCounting})
}

type asynqLib struct {
	addr          string
	checkInterval time.Duration // Config.TaskCheckInterval; 0: asynq's default (1 s)
}

func (l asynqLib) name() string { return "asynq" }

type asynqProducer struct{ c *asynq.Client }

func (l asynqLib) newProducer(conns int) producer {
	return &asynqProducer{c: asynq.NewClient(asynqConnOpt{addr: l.addr, poolSize: conns + 10})}
}

func (p *asynqProducer) enqueue(name string, a args) error {
	var payload []byte
	switch a {
	case argsTimestamp:
		payload, _ = json.Marshal(map[string]interface{}{"t": time.Now().UnixNano()})
	case argsSmall:
		payload, _ = json.Marshal(map[string]interface{}{"addr": "test@example.com", "n": 1})
	}
	_, err := p.c.Enqueue(asynq.NewTask(name, payload))
	return err
}

func (p *asynqProducer) close() { p.c.Close() }

type asynqConsumer struct {
	srv *asynq.Server
	mux *asynq.ServeMux
}

func (l asynqLib) newConsumer(concurrency int, names []string, wantTS bool, h onJob) consumer {
	srv := asynq.NewServer(asynqConnOpt{addr: l.addr, poolSize: concurrency + 10}, asynq.Config{
		Concurrency:       concurrency,
		LogLevel:          asynq.ErrorLevel,
		TaskCheckInterval: l.checkInterval,
	})
	mux := asynq.NewServeMux()
	handler := func(_ context.Context, t *asynq.Task) error {
		var ts int64
		if wantTS {
			var p struct {
				T int64 `json:"t"`
			}
			if err := json.Unmarshal(t.Payload(), &p); err != nil {
				return err
			}
			ts = p.T
		}
		h(ts)
		return nil
	}
	for _, n := range names {
		mux.HandleFunc(n, handler)
	}
	return &asynqConsumer{srv: srv, mux: mux}
}

func (c *asynqConsumer) start() error { return c.srv.Start(c.mux) }

func (c *asynqConsumer) stop() { c.srv.Shutdown() }
