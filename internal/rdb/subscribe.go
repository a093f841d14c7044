package rdb

import (
	"bytes"
	"context"
	"strconv"

	"github.com/gomodule/redigo/redis"
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
	// HandOff: a job was put in this pool's in-progress list for it (hand_off.lua), or a marker.
	HandOff func(HandOff)
}

// SubscribePool listens for what wakes a worker pool until ctx is done or the subscription fails,
// and returns ctx's error or the failure.
func (s *Store) SubscribePool(ctx context.Context, poolID string, ev PoolEvents) error {
	wake, cancel, due, keyed := s.Ks.WakeChannel(), s.Ks.CancelChannel(), s.Ks.DueChannel(), s.Ks.KeyedWakeChannel()
	handOff := s.Ks.HandOffChannel(poolID)
	return s.Backend.Subscribe(ctx, []string{wake, cancel, due, keyed, handOff}, ev.Subscribed,
		func(channel string, data []byte) {
			switch channel {
			case handOff:
				if h, ok := ParseHandOff(data); ok {
					ev.HandOff(h)
				}
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

// ParseHandOff splits a message of a pool's hand-off channel, "<epoch>:<seq>:<length of the name>:
// <name><payload>" (hand_off.lua: seq is the hand-off's number among those made to the pool); a
// marker has an empty name. It reports false for a message of another form.
func ParseHandOff(data []byte) (h HandOff, ok bool) {
	var head [3]int64
	for i := range head {
		e := bytes.IndexByte(data, ':')
		if e <= 0 {
			return h, false
		}
		n, err := strconv.ParseInt(string(data[:e]), 10, 64)
		if err != nil || n < 0 {
			return h, false
		}
		head[i], data = n, data[e+1:]
	}
	if head[2] > int64(len(data)) {
		return h, false
	}
	return HandOff{Name: string(data[:head[2]]), Epoch: uint64(head[0]), Seq: head[1], Payload: data[head[2]:]}, true
}

// HandOff is a message of a pool's hand-off channel: a job of Name handed to the pool, its Seq-th
// hand-off, while the pool's heartbeat held Epoch; or a marker (no name: Payload is its token).
type HandOff struct {
	Name    string
	Epoch   uint64
	Seq     int64
	Payload []byte
}

// HandOffMarker publishes a marker with token on poolID's hand-off channel (a message whose name is
// empty), after taking the pool off the idle sets of names in the same round trip.
func (s *Store) HandOffMarker(ctx context.Context, poolID, token string, names []string) error {
	return s.do(ctx, func(c redis.Conn) error {
		for _, name := range names {
			c.Send("SREM", s.Ks.IdlePools(name), poolID)
		}
		_, err := c.Do("PUBLISH", s.Ks.HandOffChannel(poolID), "0:0:0:"+token)
		return err
	})
}

// HandOffCount returns the hand-offs made to poolID so far (hand_off.lua counts them).
func (s *Store) HandOffCount(ctx context.Context, poolID string) (int64, error) {
	var n int64
	err := s.do(ctx, func(c redis.Conn) error {
		v, err := redis.Int64(c.Do("GET", s.Ks.HandOffs(poolID)))
		if err == redis.ErrNil {
			return nil
		}
		n = v
		return err
	})
	return n, err
}

// ForgetHandOffs deletes poolID's count of hand-offs and its count of quiet writes, once no more
// can come (the pool stopped, its quiet writes confirmed).
func (s *Store) ForgetHandOffs(ctx context.Context, poolID string) error {
	return s.do(ctx, func(c redis.Conn) error {
		// One key a command: a Cluster keeps them apart.
		if _, err := c.Do("DEL", s.Ks.HandOffs(poolID)); err != nil {
			return err
		}
		_, err := c.Do("DEL", s.Ks.QuietWrites(poolID))
		return err
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
