package rdb

import (
	"context"
	"strconv"
)

// PoolEvents handle the messages of a worker pool's wake-up subscription, one field per channel.
type PoolEvents struct {
	// Subscribed is called once the subscription listens, again after it subscribes anew: anything
	// sent before may have been missed.
	Subscribed func()
	// Wake: jobs were queued for the job name (its own queue).
	Wake func(name string)
	// KeyedWake: jobs were queued for the job name's keyed jobs.
	KeyedWake func(name string)
	// Cancel: the job with the ID is asked to stop.
	Cancel func(jobID string)
	// Due: a job was scheduled to run at the given epoch second.
	Due func(at int64)
}

// SubscribePool listens for what wakes a worker pool until ctx is done or the subscription fails,
// and returns ctx's error or the failure.
func (s *Store) SubscribePool(ctx context.Context, ev PoolEvents) error {
	wake, cancel, due, keyed := s.Ks.WakeChannel(), s.Ks.CancelChannel(), s.Ks.DueChannel(), s.Ks.KeyedWakeChannel()
	return s.Backend.Subscribe(ctx, []string{wake, cancel, due, keyed}, ev.Subscribed,
		func(channel string, data []byte) {
			switch channel {
			case cancel:
				ev.Cancel(string(data))
			case due:
				if at, err := strconv.ParseInt(string(data), 10, 64); err == nil {
					ev.Due(at)
				}
			case keyed:
				ev.KeyedWake(string(data))
			default:
				ev.Wake(string(data))
			}
		})
}

// SubscribeEnded listens for the IDs of jobs with a record that ended (done, dead, deleted...) until
// ctx is done or the subscription fails, calling subscribed once it listens.
func (s *Store) SubscribeEnded(ctx context.Context, subscribed func(), ended func(jobID []byte)) error {
	return s.Backend.Subscribe(ctx, []string{s.Ks.EndedChannel()}, subscribed,
		func(_ string, id []byte) { ended(id) })
}

// QueueKeys lists the keys a pool's queue of the job name uses, for a message that asks an operator
// to repair one of them (a pattern stands for the keys of a name's keyed jobs).
func (s *Store) QueueKeys(name, poolID string, keyed bool) []string {
	k := s.Ks
	keys := []string{k.Jobs(name), k.InProgress(name, poolID)}
	if keyed {
		keys = []string{k.Keyed(name) + "*", k.KeyedInProgress(name, poolID)}
	}
	return append(keys, k.Lock(name), k.LockInfo(name), k.MaxConcurrency(name), k.Rate(name))
}

// SetStatsDay points q's per-minute stats at the hash of the given day (days since the epoch).
func (s *Store) SetStatsDay(q *QueueArgs, day int64) {
	if q.StatsKey == "" || q.StatsDay != day {
		q.StatsDay, q.StatsKey = day, s.Ks.Stats(q.Name, day)
	}
}
