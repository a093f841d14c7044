package work

import (
	"errors"
	"testing"

	"github.com/gomodule/redigo/redis"
)

// The gocraft/work API, pinned by type: this file stops compiling if an exported signature drifts
// from the one programs written against gocraft/work use.
var (
	_ func(string, *redis.Pool) *Enqueuer                                                                   = NewEnqueuer
	_ func(*Enqueuer, string, map[string]interface{}) (*Job, error)                                         = (*Enqueuer).Enqueue
	_ func(*Enqueuer, string, int64, map[string]interface{}) (*ScheduledJob, error)                         = (*Enqueuer).EnqueueIn
	_ func(*Enqueuer, string, map[string]interface{}) (*Job, error)                                         = (*Enqueuer).EnqueueUnique
	_ func(*Enqueuer, string, int64, map[string]interface{}) (*ScheduledJob, error)                         = (*Enqueuer).EnqueueUniqueIn
	_ func(*Enqueuer, string, map[string]interface{}, map[string]interface{}) (*Job, error)                 = (*Enqueuer).EnqueueUniqueByKey
	_ func(*Enqueuer, string, int64, map[string]interface{}, map[string]interface{}) (*ScheduledJob, error) = (*Enqueuer).EnqueueUniqueInByKey

	_ func(*Job, string)         = (*Job).Checkin
	_ func(*Job, string) string  = (*Job).ArgString
	_ func(*Job, string) int64   = (*Job).ArgInt64
	_ func(*Job, string) float64 = (*Job).ArgFloat64
	_ func(*Job, string) bool    = (*Job).ArgBool
	_ func(*Job) error           = (*Job).ArgError

	_ func(interface{}, uint, string, *redis.Pool) *WorkerPool                    = NewWorkerPool
	_ func(interface{}, uint, string, *redis.Pool, WorkerPoolOptions) *WorkerPool = NewWorkerPoolWithOptions
	_ func(*WorkerPool, interface{}) *WorkerPool                                  = (*WorkerPool).Middleware
	_ func(*WorkerPool, string, interface{}) *WorkerPool                          = (*WorkerPool).Job
	_ func(*WorkerPool, string, JobOptions, interface{}) *WorkerPool              = (*WorkerPool).JobWithOptions
	_ func(*WorkerPool, string, string) *WorkerPool                               = (*WorkerPool).PeriodicallyEnqueue
	_ func(*WorkerPool)                                                           = (*WorkerPool).Start
	_ func(*WorkerPool)                                                           = (*WorkerPool).Stop
	_ func(*WorkerPool)                                                           = (*WorkerPool).Drain
	_ func(string, *redis.Pool) *Client                                           = NewClient
	_ func(*Client) ([]*WorkerPoolHeartbeat, error)                               = (*Client).WorkerPoolHeartbeats
	_ func(*Client) ([]*WorkerObservation, error)                                 = (*Client).WorkerObservations
	_ func(*Client) ([]*Queue, error)                                             = (*Client).Queues
	_ func(*Client, uint) ([]*ScheduledJob, int64, error)                         = (*Client).ScheduledJobs
	_ func(*Client, uint) ([]*RetryJob, int64, error)                             = (*Client).RetryJobs
	_ func(*Client, uint) ([]*DeadJob, int64, error)                              = (*Client).DeadJobs
	_ func(*Client, int64, string) error                                          = (*Client).DeleteDeadJob
	_ func(*Client, int64, string) error                                          = (*Client).RetryDeadJob
	_ func(*Client) error                                                         = (*Client).RetryAllDeadJobs
	_ func(*Client) error                                                         = (*Client).DeleteAllDeadJobs
	_ func(*Client, int64, string) error                                          = (*Client).DeleteScheduledJob
	_ func(*Client, int64, string) error                                          = (*Client).DeleteRetryJob

	_ GenericHandler           = func(*Job) error { return nil }
	_ GenericMiddlewareHandler = func(*Job, NextMiddlewareFunc) error { return nil }
	_ NextMiddlewareFunc       = func() error { return nil }
	_ BackoffCalculator        = func(*Job) int64 { return 0 }
	_ Q                        = map[string]interface{}{}
)

// The exported struct fields programs set or read, by name and type.
var (
	_ = Enqueuer{Namespace: "", Pool: (*redis.Pool)(nil)}
	_ = Job{Name: "", ID: "", EnqueuedAt: 0, Args: map[string]interface{}{}, Unique: false, UniqueKey: "",
		Fails: 0, LastErr: "", FailedAt: 0}
	_ = JobOptions{Priority: uint(1), MaxFails: uint(1), SkipDead: false, MaxConcurrency: uint(0),
		Backoff: BackoffCalculator(nil)}
	_ = WorkerPoolOptions{SleepBackoffs: []int64{}}
	_ = WorkerPoolHeartbeat{WorkerPoolID: "", StartedAt: int64(0), HeartbeatAt: int64(0), JobNames: []string{},
		Concurrency: uint(0), Host: "", Pid: int(0), WorkerIDs: []string{}}
	_ = WorkerObservation{WorkerID: "", IsBusy: false, JobName: "", JobID: "", StartedAt: int64(0),
		ArgsJSON: "", Checkin: "", CheckinAt: int64(0)}
	_ = Queue{JobName: "", Count: int64(0), Latency: int64(0)}
	_ = RetryJob{RetryAt: int64(0), Job: (*Job)(nil)}
	_ = ScheduledJob{RunAt: int64(0), Job: (*Job)(nil)}
	_ = DeadJob{DiedAt: int64(0), Job: (*Job)(nil)}
)

func TestCompatErrorTexts(t *testing.T) {
	if ErrNotDeleted.Error() != "nothing deleted" || ErrNotRetried.Error() != "nothing retried" {
		t.Fatalf("error texts: %q, %q", ErrNotDeleted, ErrNotRetried)
	}
	if errors.Is(ErrNotDeleted, ErrNotRetried) {
		t.Fatal("distinct errors compare equal")
	}
}

// gocraft/work's NewClient takes a nil pool (programs build Clients they never use); its methods
// then panicked. Here they return an error.
func TestCompatClientOfNilPool(t *testing.T) {
	c := NewClient("ns", nil)
	if _, err := c.Queues(); !errors.Is(err, errNoPool) {
		t.Errorf("Queues: %v", err)
	}
	if _, _, err := c.DeadJobs(1); !errors.Is(err, errNoPool) {
		t.Errorf("DeadJobs: %v", err)
	}
	if err := c.DeleteDeadJob(1, "x"); !errors.Is(err, errNoPool) {
		t.Errorf("DeleteDeadJob: %v", err)
	}
	if err := c.RetryAllDeadJobs(); !errors.Is(err, errNoPool) {
		t.Errorf("RetryAllDeadJobs: %v", err)
	}
}

// gocraft/work returns ErrNotDeleted and ErrNotRetried themselves for jobs that are not there, and
// programs written for it compare with ==.
func TestCompatMissingJobsReturnTheErrorValuesThemselves(t *testing.T) {
	t.Parallel()
	c, pool, ks := newTestClient(t)
	rdo(t, pool, "ZADD", ks.Dead(), 100, `{"name":"a","id":"d1","t":1,"args":null}`)
	for what, err := range map[string]error{
		"DeleteDeadJob":      c.DeleteDeadJob(100, "nope"),
		"DeleteRetryJob":     c.DeleteRetryJob(100, "d1"),
		"DeleteScheduledJob": c.DeleteScheduledJob(100, "d1"),
	} {
		if err != ErrNotDeleted {
			t.Errorf("%s of a missing job: %v, want ErrNotDeleted itself", what, err)
		}
	}
	if err := c.RetryDeadJob(101, "d1"); err != ErrNotRetried {
		t.Errorf("RetryDeadJob of a missing job: %v, want ErrNotRetried itself", err)
	}
	if err := c.RetryDeadJob(100, "d1"); err != nil {
		t.Fatal(err)
	}
	if err := c.RetryDeadJob(100, "d1"); err != ErrNotRetried {
		t.Errorf("RetryDeadJob of a job retried already: %v, want ErrNotRetried itself", err)
	}
	if err := c.DeleteDeadJob(100, "d1"); err != ErrNotDeleted {
		t.Errorf("DeleteDeadJob of a job retried already: %v, want ErrNotDeleted itself", err)
	}
	// Deleting or retrying every dead job of an empty set is no error.
	if err := c.RetryAllDeadJobs(); err != nil {
		t.Errorf("RetryAllDeadJobs: %v", err)
	}
	if err := c.DeleteAllDeadJobs(); err != nil {
		t.Errorf("DeleteAllDeadJobs: %v", err)
	}
}
