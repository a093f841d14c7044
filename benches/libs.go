package main

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	redigo "github.com/gomodule/redigo/redis"
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

// redigoPool is the connection pool given to work and to gocraft/work: size connections at most,
// callers wait for a free one, every connection counted by roundTrips.
func redigoPool(addr string, size int) *redigo.Pool {
	return &redigo.Pool{
		MaxActive: size,
		MaxIdle:   size,
		Wait:      true,
		Dial: func() (redigo.Conn, error) {
			return redigo.Dial("tcp", addr, redigo.DialContextFunc(dialCounting))
		},
	}
}

// args is what a job carries.
type args int

const (
	argsNone      args = iota // no arguments (burn-down jobs)
	argsTimestamp             // {"t": enqueue time in Unix microseconds}
	argsNoStamp               // {"t": 0}: a job whose enqueue time is not measured (its handler gets ts 0)
	argsSmall                 // {"addr": "test@example.com", "n": 1}
)

// enqueueStamp is the enqueue time a job carries: Unix microseconds, an integer below 2^53, which
// every library's JSON decoding keeps exactly (gocraft/work's ArgInt64 refuses larger numbers, such
// as Unix nanoseconds).
func enqueueStamp() int64 { return time.Now().UnixMicro() }

// producer enqueues jobs with single Enqueue calls. It is safe for concurrent use.
type producer interface {
	enqueue(name string, a args) error
	close()
}

// consumer is a worker pool (work, gocraft/work) or a server (asynq) serving the given job names.
type consumer interface {
	start() error
	stop()
}

// onJob is called by every handler run, with the job's ID when the consumer was asked for it and its
// enqueue time (Unix µs, see enqueueStamp) when asked for that; a non-nil error fails the job.
type onJob func(id string, ts int64) error

// consumerConfig is what a consumer is made of.
type consumerConfig struct {
	concurrency int
	names       []string // registered job names (task types for asynq)
	wantID      bool     // pass the job ID to h
	wantTS      bool     // pass the enqueue time the job carries (argsTimestamp) to h
	h           onJob
}

// batchProducer is a producer whose library can enqueue many jobs in one call.
type batchProducer interface {
	// enqueueBatch enqueues jobs start..start+count-1, named round-robin over names, without args.
	enqueueBatch(names []string, start, count int) error
}

// redisDo runs one command on the harness's own connection (not counted as a client round trip).
type redisDo func(cmd string, args ...interface{}) (interface{}, error)

type library interface {
	name() string
	newProducer(conns int) producer
	newConsumer(cfg consumerConfig) consumer
	// inProgress returns the IDs of the jobs that pools/servers hold as being worked on (fetched and
	// not yet acknowledged), as Redis has them now.
	inProgress(do redisDo) ([]string, error)
}

// libraryNames are the libraries the harness knows, in the order a cycle of rounds runs them. The
// paired ratios compare the first one with each of the others. floor, floor-ack and floor-enqueue
// are not libraries (see floorLib, floorAckLib and floorEnqueueLib) and run only when named.
var libraryNames = []string{"floor", "floor-ack", "floor-enqueue", "work", "gocraft", "asynq"}

// defaultLibs are the libraries a run compares unless -libs says otherwise.
const defaultLibs = "work,gocraft,asynq"

// newLibrary returns the library of that name, talking to the Redis at addr.
func newLibrary(name, addr string, asynqCheckInterval time.Duration) (library, error) {
	switch name {
	case "work":
		return workLib{addr: addr}, nil
	case "gocraft":
		return gocraftLib{addr: addr}, nil
	case "asynq":
		return asynqLib{addr: addr, checkInterval: asynqCheckInterval}, nil
	case "floor":
		return floorLib{addr: addr}, nil
	case "floor-ack":
		return floorAckLib{addr: addr}, nil
	case "floor-enqueue":
		return floorEnqueueLib{addr: addr}, nil
	}
	return nil, fmt.Errorf("unknown library %q (have work, gocraft, asynq, floor, floor-ack, floor-enqueue)", name)
}
