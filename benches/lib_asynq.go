package main

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/hibiken/asynq"
	goredis "github.com/redis/go-redis/v9"
)

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
		payload, _ = json.Marshal(map[string]interface{}{"t": enqueueStamp()})
	case argsNoStamp:
		payload = []byte(`{"t":0}`)
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

func (l asynqLib) newConsumer(cfg consumerConfig) consumer {
	srv := asynq.NewServer(asynqConnOpt{addr: l.addr, poolSize: cfg.concurrency + 10}, asynq.Config{
		Concurrency:       cfg.concurrency,
		LogLevel:          asynq.ErrorLevel,
		TaskCheckInterval: l.checkInterval,
	})
	mux := asynq.NewServeMux()
	handler := func(ctx context.Context, t *asynq.Task) error {
		var id string
		var ts int64
		if cfg.wantID {
			var ok bool
			if id, ok = asynq.GetTaskID(ctx); !ok {
				return errors.New("no task ID in the context")
			}
		}
		if cfg.wantTS {
			var p struct {
				T int64 `json:"t"`
			}
			if err := json.Unmarshal(t.Payload(), &p); err != nil {
				return err
			}
			ts = p.T
		}
		return cfg.h(id, ts)
	}
	for _, n := range cfg.names {
		mux.HandleFunc(n, handler)
	}
	return &asynqConsumer{srv: srv, mux: mux}
}

func (c *asynqConsumer) start() error { return c.srv.Start(c.mux) }

func (c *asynqConsumer) stop() { c.srv.Shutdown() }

// inProgress reads the default queue's active list, asynq:{default}:active: the IDs of the tasks a
// server has dequeued and not yet marked done (each with a lease in asynq:{default}:lease).
func (l asynqLib) inProgress(do redisDo) ([]string, error) {
	return redigo.Strings(do("LRANGE", "asynq:{default}:active", 0, -1))
}
