package goredis

import (
	"context"
	"errors"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/redis/go-redis/v9"
	"github.com/workqueue/work"
)

// NewBackend returns a work.Backend that reaches Redis through a go-redis client:
//
//   - *redis.Client from redis.NewClient: one server;
//   - *redis.Client from redis.NewFailoverClient: a Sentinel-managed primary, followed across
//     failovers;
//   - *redis.ClusterClient from redis.NewClusterClient: Redis Cluster. Give the namespace a hash
//     tag ("{app}") so that every key of it, and so every script, lives in one slot.
//
// Other UniversalClients (a Ring) run commands through the client as it routes them; Enqueuer's
// WaitReplicas is refused on them. The client stays the caller's: close it after the pools,
// enqueuers and clients that use it are done.
//
// It panics when client is nil.
func NewBackend(client redis.UniversalClient) work.Backend {
	if client == nil {
		panic("goredis: NewBackend needs a non-nil client")
	}
	b := &backend{client: client}
	switch c := client.(type) {
	case *redis.Client:
		b.single = c
	case *redis.ClusterClient:
		b.cluster = c
	}
	return b
}

// NewEnqueuer returns a work.Enqueuer for the namespace that reaches Redis through client.
func NewEnqueuer(namespace string, client redis.UniversalClient) *work.Enqueuer {
	return work.NewEnqueuerWithBackend(namespace, NewBackend(client))
}

// NewWorkerPool returns a work.WorkerPool for the namespace that reaches Redis through client; ctx,
// concurrency and opts are as in work.NewWorkerPoolWithOptions.
func NewWorkerPool(ctx interface{}, concurrency uint, namespace string, client redis.UniversalClient, opts work.WorkerPoolOptions) *work.WorkerPool {
	return work.NewWorkerPoolWithBackend(ctx, concurrency, namespace, NewBackend(client), opts)
}

// NewClient returns a work.Client for the namespace that reaches Redis through client.
func NewClient(namespace string, client redis.UniversalClient) *work.Client {
	return work.NewClientWithBackend(namespace, NewBackend(client))
}

type backend struct {
	client  redis.UniversalClient
	single  *redis.Client        // one server or a failover client: sticky connections
	cluster *redis.ClusterClient // Redis Cluster: sticky per master
}

// Conn returns a redigo connection whose commands run through go-redis (see conn). It implements
// redigo's redis.Conn and redis.ConnWithContext; ctx is the context of every command run by Do,
// Flush and Receive.
func (b *backend) Conn(ctx context.Context) (redigo.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return &conn{b: b, ctx: ctx}, nil
}

// Subscribe listens on channels through go-redis's PubSub until ctx is done. go-redis reconnects by
// itself after a failure (to the new primary after a failover, to the master now serving the first
// channel's slot in a cluster); subscribed is called each time every channel is confirmed again.
// In a cluster, a plain SUBSCRIBE on any node hears every PUBLISH of the cluster.
func (b *backend) Subscribe(ctx context.Context, channels []string, subscribed func(), message func(channel string, data []byte)) error {
	ps := b.client.Subscribe(ctx, channels...)
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
		case <-done:
		}
		ps.Close()
	}()

	const healthCheck = 15 * time.Second
	backoff := 50 * time.Millisecond
	confirmed := 0
	for {
		msg, err := ps.ReceiveTimeout(ctx, healthCheck)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			if errors.Is(err, redis.ErrClosed) {
				return err
			}
			var ne interface{ Timeout() bool }
			if errors.As(err, &ne) && ne.Timeout() {
				// Quiet for a while: make sure the connection is still there; a dead one fails the
				// next receive and go-redis reconnects.
				_ = ps.Ping(ctx)
				continue
			}
			// go-redis reconnects and subscribes again on the next receive; count afresh.
			confirmed = 0
			if b.cluster != nil {
				b.cluster.ReloadState(ctx)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 2*time.Second)
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				if confirmed++; confirmed == len(channels) {
					backoff = 50 * time.Millisecond
					subscribed()
				}
			}
		case *redis.Message:
			message(m.Channel, []byte(m.Payload))
		}
	}
}
