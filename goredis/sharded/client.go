package sharded

import (
	"errors"
	"sort"

	"github.com/redis/go-redis/v9"
	"github.com/workqueue/work"
	"github.com/workqueue/work/goredis"
)

// Client inspects and manages a sharded namespace: it merges the answers of one work.Client per
// shard. For anything it does not offer, use Shards or For.
type Client struct {
	shards []*work.Client
}

// NewClient returns a Client for namespace split into shards, on a go-redis client.
func NewClient(namespace string, shards int, client redis.UniversalClient) *Client {
	return NewClientWithBackend(namespace, shards, goredis.NewBackend(client))
}

// NewClientWithBackend is NewClient on any work.Backend.
func NewClientWithBackend(namespace string, shards int, b work.Backend) *Client {
	check(namespace, shards)
	c := &Client{}
	for i := 0; i < shards; i++ {
		c.shards = append(c.shards, work.NewClientWithBackend(ShardNamespace(namespace, i, shards), b))
	}
	return c
}

// Shards returns the work.Client of every shard, by shard index.
func (c *Client) Shards() []*work.Client { return c.shards }

// For returns the work.Client of jobName's shard.
func (c *Client) For(jobName string) *work.Client { return c.shards[ShardOf(jobName, len(c.shards))] }

// Queues returns the queues of every shard, sorted by job name.
func (c *Client) Queues() ([]*work.Queue, error) {
	var out []*work.Queue
	for _, s := range c.shards {
		qs, err := s.Queues()
		if err != nil {
			return nil, err
		}
		out = append(out, qs...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].JobName < out[j].JobName })
	return out, nil
}

// QueueStats returns the queue state of every shard, sorted by job name.
func (c *Client) QueueStats() ([]*work.QueueStat, error) {
	var out []*work.QueueStat
	for _, s := range c.shards {
		qs, err := s.QueueStats()
		if err != nil {
			return nil, err
		}
		out = append(out, qs...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].JobName < out[j].JobName })
	return out, nil
}

// Summary returns the totals over every shard.
func (c *Client) Summary() (*work.Summary, error) {
	sum := &work.Summary{}
	for _, s := range c.shards {
		x, err := s.Summary()
		if err != nil {
			return nil, err
		}
		sum.Queues += x.Queues
		sum.Queued += x.Queued
		sum.Keyed += x.Keyed
		sum.InFlight += x.InFlight
		sum.Paused += x.Paused
		sum.Scheduled += x.Scheduled
		sum.Debounced += x.Debounced
		sum.Retry += x.Retry
		sum.Dead += x.Dead
	}
	return sum, nil
}

// WorkerPoolHeartbeats returns the heartbeats of every shard's pools, sorted by pool ID. A sharded
// WorkerPool shows as one pool per shard it serves.
func (c *Client) WorkerPoolHeartbeats() ([]*work.WorkerPoolHeartbeat, error) {
	var out []*work.WorkerPoolHeartbeat
	for _, s := range c.shards {
		hbs, err := s.WorkerPoolHeartbeats()
		if err != nil {
			return nil, err
		}
		out = append(out, hbs...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].WorkerPoolID < out[j].WorkerPoolID })
	return out, nil
}

// WorkerObservations returns what the workers of every shard's pools do.
func (c *Client) WorkerObservations() ([]*work.WorkerObservation, error) {
	var out []*work.WorkerObservation
	for _, s := range c.shards {
		obs, err := s.WorkerObservations()
		if err != nil {
			return nil, err
		}
		out = append(out, obs...)
	}
	return out, nil
}

// PauseQueue pauses jobName's queue, in its shard.
func (c *Client) PauseQueue(jobName string) error { return c.For(jobName).PauseQueue(jobName) }

// UnpauseQueue unpauses jobName's queue, in its shard.
func (c *Client) UnpauseQueue(jobName string) error { return c.For(jobName).UnpauseQueue(jobName) }

// pageSize is work.Client's page size.
const pageSize = 20

// mergePages returns page (1-based, 0 means 1) of the union of every shard's sorted set, in score
// order, and the total: it reads the first page*20 members of each shard.
func mergePages[T any](c *Client, page uint, get func(*work.Client, uint) ([]T, int64, error), score func(T) (int64, string)) ([]T, int64, error) {
	if page == 0 {
		page = 1
	}
	var all []T
	var total int64
	for _, s := range c.shards {
		for p := uint(1); p <= page; p++ {
			items, n, err := get(s, p)
			if err != nil {
				return nil, 0, err
			}
			if p == 1 {
				total += n
			}
			all = append(all, items...)
			if len(items) < pageSize {
				break
			}
		}
	}
	sort.SliceStable(all, func(i, j int) bool {
		si, ii := score(all[i])
		sj, ij := score(all[j])
		if si != sj {
			return si < sj
		}
		return ii < ij
	})
	lo := int(page-1) * pageSize
	if lo >= len(all) {
		return nil, total, nil
	}
	return all[lo:min(lo+pageSize, len(all))], total, nil
}

// DeadJobs returns a page of the dead jobs of every shard, by the time they died, and their total.
func (c *Client) DeadJobs(page uint) ([]*work.DeadJob, int64, error) {
	return mergePages(c, page, (*work.Client).DeadJobs, func(j *work.DeadJob) (int64, string) { return j.DiedAt, j.ID })
}

// RetryJobs returns a page of the jobs waiting for a retry in every shard, by retry time, and their
// total.
func (c *Client) RetryJobs(page uint) ([]*work.RetryJob, int64, error) {
	return mergePages(c, page, (*work.Client).RetryJobs, func(j *work.RetryJob) (int64, string) { return j.RetryAt, j.ID })
}

// ScheduledJobs returns a page of the scheduled jobs of every shard, by run time, and their total.
func (c *Client) ScheduledJobs(page uint) ([]*work.ScheduledJob, int64, error) {
	return mergePages(c, page, (*work.Client).ScheduledJobs, func(j *work.ScheduledJob) (int64, string) { return j.RunAt, j.ID })
}

// firstShard runs op on every shard until one does not answer notFound.
func (c *Client) firstShard(notFound error, op func(*work.Client) error) error {
	for _, s := range c.shards {
		if err := op(s); !errors.Is(err, notFound) {
			return err
		}
	}
	return notFound
}

// DeleteDeadJob deletes a dead job from whichever shard holds it; work.ErrNotDeleted when none does.
func (c *Client) DeleteDeadJob(diedAt int64, jobID string) error {
	return c.firstShard(work.ErrNotDeleted, func(s *work.Client) error { return s.DeleteDeadJob(diedAt, jobID) })
}

// RetryDeadJob requeues a dead job of whichever shard holds it; work.ErrNotRetried when none does.
func (c *Client) RetryDeadJob(diedAt int64, jobID string) error {
	return c.firstShard(work.ErrNotRetried, func(s *work.Client) error { return s.RetryDeadJob(diedAt, jobID) })
}

// DeleteScheduledJob deletes a scheduled job from whichever shard holds it.
func (c *Client) DeleteScheduledJob(scheduledFor int64, jobID string) error {
	return c.firstShard(work.ErrNotDeleted, func(s *work.Client) error { return s.DeleteScheduledJob(scheduledFor, jobID) })
}

// DeleteRetryJob deletes a job waiting for a retry from whichever shard holds it.
func (c *Client) DeleteRetryJob(retryAt int64, jobID string) error {
	return c.firstShard(work.ErrNotDeleted, func(s *work.Client) error { return s.DeleteRetryJob(retryAt, jobID) })
}

// RetryAllDeadJobs requeues the dead jobs of every shard.
func (c *Client) RetryAllDeadJobs() error {
	for _, s := range c.shards {
		if err := s.RetryAllDeadJobs(); err != nil {
			return err
		}
	}
	return nil
}

// DeleteAllDeadJobs deletes the dead jobs of every shard.
func (c *Client) DeleteAllDeadJobs() error {
	for _, s := range c.shards {
		if err := s.DeleteAllDeadJobs(); err != nil {
			return err
		}
	}
	return nil
}

// FindJob finds a job by ID in whichever shard holds it; work.ErrJobNotFound when none does.
func (c *Client) FindJob(jobID string) (*work.JobLocation, error) {
	var loc *work.JobLocation
	err := c.firstShard(work.ErrJobNotFound, func(s *work.Client) error {
		var err error
		loc, err = s.FindJob(jobID)
		return err
	})
	return loc, err
}
