package goredis_test

import (
	"log"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/workqueue/work"
	"github.com/workqueue/work/goredis"
	"github.com/workqueue/work/goredis/sharded"
)

type Context struct{}

func (c *Context) SendEmail(job *work.Job) error { return nil }

// A worker pool and an enqueuer on Redis Cluster: the namespace carries a hash tag, so that every key
// of it is in one slot.
func ExampleNewWorkerPool_cluster() {
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{":7000", ":7001", ":7002"}})
	defer rdb.Close()

	pool := goredis.NewWorkerPool(Context{}, 10, "{my_app}", rdb, work.WorkerPoolOptions{})
	pool.Job("send_email", (*Context).SendEmail)
	pool.Start()
	defer pool.Stop()

	enqueuer := goredis.NewEnqueuer("{my_app}", rdb)
	if _, err := enqueuer.Enqueue("send_email", work.Q{"address": "test@example.com"}); err != nil {
		log.Print(err)
	}
}

// An enqueuer on a Sentinel-managed primary that waits for a replica, so that an acknowledged job
// survives a failover.
func ExampleNewEnqueuer_sentinel() {
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    "mymaster",
		SentinelAddrs: []string{":26379", ":26380", ":26381"},
	})
	defer rdb.Close()

	enqueuer := goredis.NewEnqueuer("my_app", rdb)
	enqueuer.WaitReplicas, enqueuer.WaitTimeout = 1, 500*time.Millisecond
	if _, err := enqueuer.Enqueue("send_email", work.Q{"address": "test@example.com"}); err != nil {
		log.Print(err) // work.ErrNotReplicated: written to the primary, not confirmed by a replica
	}
}

// One application spread over the masters of a cluster: six shards, each job name in one of them.
func Example_sharded() {
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{":7000", ":7001", ":7002"}})
	defer rdb.Close()

	pool := sharded.NewWorkerPool(Context{}, 50, "my_app", 6, rdb, work.WorkerPoolOptions{})
	pool.Job("send_email", (*Context).SendEmail)
	pool.Start()
	defer pool.Stop()

	enqueuer := sharded.NewEnqueuer("my_app", 6, rdb)
	if _, err := enqueuer.Enqueue("send_email", work.Q{"address": "test@example.com"}); err != nil {
		log.Print(err)
	}
}
