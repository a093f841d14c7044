// Package goredis runs work's enqueuers, worker pools and clients on go-redis
// (github.com/redis/go-redis/v9), and so on Redis Cluster and on a Sentinel-managed primary as well as
// on one server:
//
//	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{":7000", ":7001", ":7002"}})
//	enqueuer := goredis.NewEnqueuer("{app}", rdb)
//	pool := goredis.NewWorkerPool(Context{}, 10, "{app}", rdb, work.WorkerPoolOptions{})
//
// NewBackend adapts a go-redis client to work.Backend; NewEnqueuer, NewWorkerPool and NewClient
// are shorthands for the work constructors that take a Backend. The keys, the job JSON and the
// scripts are those of the work package: a pool on go-redis and a pool on redigo share a namespace.
//
// # Redis Cluster
//
// Every script of the work package touches several keys of one namespace, so in a cluster the
// namespace must carry a hash tag: "{app}" puts every key of it in the slot of "app", on one master.
// A namespace is therefore served by one master; package sharded spreads job names over several
// namespaces, and so over several masters.
//
// # Replication and WAIT
//
// Enqueuer.WaitReplicas sends WAIT on the connection that made the write. With a *redis.Client (one
// server or a failover client) the backend's connections are sticky, so WAIT counts the replicas of
// the primary that took the job. In a cluster a connection sticks to the master that owns the slot
// of its first key, and WAIT counts that master's replicas; if a command had to be routed to another
// node (a redirect during resharding or a failover), the WAIT is refused with an error rather than
// vouching for a write it did not see. WAIT's timeout is kept below the client's ReadTimeout, so that
// go-redis does not give up on the connection first.
//
// # Replies
//
// Replies come back in redigo's types, whatever the client's protocol: bulk strings as []byte,
// status replies as string, integers as int64, arrays as []interface{}, nil as nil, error replies as
// redigo's redis.Error with the server's text. RESP3 maps, doubles and member/score pairs are
// turned into their RESP2 forms.
package goredis
