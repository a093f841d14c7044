// The driver of work. lib_gocraft.go, the driver of gocraft/work, is generated from this file: the
// same code with the import path and the "work" prefix of its identifiers swapped, since work keeps
// gocraft/work's API. Keep everything that only work has (EnqueueBatch) out of this file.

//go:generate go run ./gendriver -in lib_work.go -out lib_gocraft.go

package main

import (
	"encoding/json"
	"fmt"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/workqueue/work"
)

// workNamespace is the Redis namespace of the jobs.
const workNamespace = "bench"

type workLib struct{ addr string }

func (l workLib) name() string { return "work" }

type workProducer struct {
	pool *redigo.Pool
	e    *work.Enqueuer
}

func (l workLib) newProducer(conns int) producer {
	pool := redigoPool(l.addr, conns+10)
	return &workProducer{pool: pool, e: work.NewEnqueuer(workNamespace, pool)}
}

func (p *workProducer) enqueue(name string, a args) error {
	_, err := p.e.Enqueue(name, workArgs(a))
	return err
}

// workArgs are a job's args of kind a.
func workArgs(a args) work.Q {
	switch a {
	case argsTimestamp:
		return work.Q{"t": enqueueStamp()}
	case argsNoStamp:
		return work.Q{"t": 0}
	case argsSmall:
		return work.Q{"addr": "test@example.com", "n": 1}
	}
	return nil
}

func (p *workProducer) close() { p.pool.Close() }

// workContext is the pool's context type (unused: the handlers take the job alone).
type workContext struct{}

type workConsumer struct {
	pool *redigo.Pool
	wp   *work.WorkerPool
}

func (l workLib) newConsumer(cfg consumerConfig) consumer {
	return l.newConsumerWith(cfg, work.JobOptions{})
}

// newConsumerWith is newConsumer with the same options for every job name.
func (l workLib) newConsumerWith(cfg consumerConfig, opts work.JobOptions) consumer {
	pool := redigoPool(l.addr, cfg.concurrency+10)
	wp := work.NewWorkerPool(workContext{}, uint(cfg.concurrency), workNamespace, pool)
	handler := func(job *work.Job) error {
		var id string
		var ts int64
		if cfg.wantID {
			id = job.ID
		}
		if cfg.wantTS {
			ts = job.ArgInt64("t")
			if err := job.ArgError(); err != nil {
				return err
			}
		}
		return cfg.h(id, ts)
	}
	for _, n := range cfg.names {
		wp.JobWithOptions(n, opts, handler)
	}
	return &workConsumer{pool: pool, wp: wp}
}

func (c *workConsumer) start() error { c.wp.Start(); return nil }

func (c *workConsumer) stop() {
	c.wp.Stop()
	c.pool.Close()
}

// inProgress reads every pool's in-progress lists, <ns>:jobs:<name>:<poolID>:inprogress, which hold
// the JSON of the jobs the pool fetched and has not acknowledged.
func (l workLib) inProgress(do redisDo) ([]string, error) {
	keys, err := redigo.Strings(do("KEYS", workNamespace+":jobs:*:inprogress"))
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, k := range keys {
		raws, err := redigo.ByteSlices(do("LRANGE", k, 0, -1))
		if err != nil {
			return nil, err
		}
		for _, raw := range raws {
			var j struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(raw, &j); err != nil || j.ID == "" {
				return nil, fmt.Errorf("%s: not a job: %q", k, raw)
			}
			ids = append(ids, j.ID)
		}
	}
	return ids, nil
}
