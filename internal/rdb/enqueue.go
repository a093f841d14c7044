package rdb

// Enqueues: the pipelined push that concurrent Enqueue calls share (plain, keyed, debounced and
// grouped jobs), the atomic batch, scheduled jobs and unique jobs.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"

	"github.com/gomodule/redigo/redis"
)

// Push is one job of an enqueueMany call: its queue, payload and what to send with it, then the
// outcome (the error of this job's push and, for an unkeyed job, the queue's length after it).
type Push struct {
	Name     string
	Key      string // a keyed job's key: the push runs enqueueKeyedScript
	Payload  []byte
	AddKnown bool // register the job name in known_jobs too
	Publish  bool // send the wake-up with the push (the caller expects the queue to be empty, or nearly)
	// Debounce makes the push a debounced enqueue (debounceScript), Group a grouped one
	// (groupAddScript); Reply then holds the script's reply.
	Debounce *DebounceSpec
	Group    string
	// GroupDefaultDelay is how many seconds a group of a name with no conf waits after its first job.
	GroupDefaultDelay int64

	N     int64
	Err   error
	Reply interface{}
}

// DebounceSpec is a debounced push's burst and timing: the burst's ID, its window and maximum wait in
// ms, and whether the first payload is kept.
type DebounceSpec struct {
	ID                  string
	WindowMs, MaxWaitMs int64
	KeepFirst           bool
}

// scripted returns the script and arguments of a push that runs a script (keyed, debounced or
// grouped), and its error mapping; ok is false for a plain push.
func (s *Store) scripted(p *Push) (sc *redis.Script, args []interface{}, mapErr func(error) error, ok bool) {
	switch {
	case p.Debounce != nil:
		return debounceScript, s.debounceArgs(p), wrongType, true
	case p.Group != "":
		return groupAddScript, s.groupAddArgs(p), wrongType, true
	case p.Key != "":
		return enqueueKeyedScript, s.keyedPushArgs(p), func(err error) error { return keyedPushError(err, p) }, true
	}
	return nil, nil, nil, false
}

// EnqueueMany pushes payloads onto their queues in one pipelined round trip, registering job names
// and waking idle pools: a push that finds its queue empty and did not send its wake-up along sends
// it in a second round trip, shared by all such pushes. A keyed push runs its script; the debounced
// pushes make one script call together, and so do the grouped ones. Each push gets its own outcome;
// an error of the connection (or of the replicas' wait) is every push's.
func (s *Store) EnqueueMany(ctx context.Context, w ReplicaWait, pushes []*Push) {
	// Plain and keyed pushes allocate nothing here: batches exist only for debounced or grouped ones.
	var batches []*scriptBatch
	for _, p := range pushes {
		if batched(p) {
			batches = batchPushes(pushes)
			break
		}
	}
	err := s.doWrite(ctx, w, func(c redis.Conn) error {
		for _, p := range pushes {
			switch {
			case batched(p):
			case p.Key != "":
				// The script registers the name and wakes pools itself.
				enqueueKeyedScript.SendHash(c, s.keyedPushArgs(p)...)
			case p.Publish:
				// The queue is likely empty: a pool that waits for the name may take the job at once.
				handOffScript.SendHash(c, s.handOffArgs(p)...)
			default:
				if p.AddKnown {
					c.Send("SADD", s.Ks.KnownJobs(), p.Name)
				}
				c.Send("LPUSH", s.Ks.Jobs(p.Name), p.Payload)
			}
		}
		for _, b := range batches {
			b.sc.SendHash(c, s.batchArgs(b)...)
		}
		if err := c.Flush(); err != nil {
			return err
		}
		if len(pushes) > 1 {
			// Calls come concurrently: while Redis answers, let the runnable goroutines (callers
			// making their next jobs) run, so that the reply is more often waiting when this one
			// reads it, which saves parking and waking for it.
			runtime.Gosched()
		}
		r, err := redis.Values(c.Do(""))
		if err != nil {
			return err
		}
		late := 0
		var noScript []*Push
		var noScriptBatches []*scriptBatch
		for _, p := range pushes {
			if batched(p) {
				continue
			}
			if p.AddKnown && p.Key == "" && !p.Publish {
				if r, err = skipReply(r); err != nil {
					return err
				}
			}
			if len(r) == 0 {
				return errShortReply
			}
			v := r[0]
			r = r[1:]
			if re, ok := v.(redis.Error); ok && (p.Key != "" || p.Publish) && strings.HasPrefix(string(re), "NOSCRIPT") {
				noScript = append(noScript, p)
				continue
			}
			p.N, p.Err = redis.Int64(v, nil)
			switch {
			case p.Key != "":
				if p.Err != nil {
					p.Err = keyedPushError(p.Err, p)
				}
			case p.Publish:
			case p.Err == nil && p.N == 1:
				c.Send("PUBLISH", s.Ks.WakeChannel(), p.Name)
				late++
			}
		}
		for _, b := range batches {
			if len(r) == 0 {
				return errShortReply
			}
			v := r[0]
			r = r[1:]
			if re, ok := v.(redis.Error); ok && strings.HasPrefix(string(re), "NOSCRIPT") {
				noScriptBatches = append(noScriptBatches, b)
				continue
			}
			b.replies(v, nil)
		}
		if late > 0 {
			// The jobs are queued whatever this reply says: without the wake-up, a pool's next look
			// finds them.
			_, _ = c.Do("")
		}
		// A script the server did not know yet (its first such push since it started): Do loads it.
		for _, b := range noScriptBatches {
			b.replies(b.sc.Do(c, s.batchArgs(b)...))
		}
		for _, p := range noScript {
			if p.Key == "" {
				p.N, p.Err = redis.Int64(handOffScript.Do(c, s.handOffArgs(p)...))
				continue
			}
			p.N, p.Err = redis.Int64(enqueueKeyedScript.Do(c, s.keyedPushArgs(p)...))
			if p.Err != nil {
				p.Err = keyedPushError(p.Err, p)
			}
		}
		return nil
	})
	if err != nil {
		for _, p := range pushes {
			if p.Err == nil {
				p.Err = err
			}
		}
	}
}

// handOffScript's arguments for the push p.
func (s *Store) handOffArgs(p *Push) []interface{} {
	v, ok := s.handOffKeys.Load(p.Name)
	if !ok {
		v, _ = s.handOffKeys.LoadOrStore(p.Name, &[7]interface{}{s.Ks.Jobs(p.Name), s.Ks.KnownJobs(),
			s.Ks.IdlePools(p.Name), s.Ks.Paused(p.Name), s.Ks.MaxConcurrency(p.Name), s.Ks.Rate(p.Name), p.Name})
	}
	k := v.(*[7]interface{})
	known := boxedNotKnown
	if p.AddKnown {
		known = boxedAddKnown
	}
	args := make([]interface{}, 0, 11)
	args = append(args, k[:6]...)
	return append(args, p.Payload, k[6], known, s.boxed.wake, s.boxed.prefix)
}

// hand_off.lua's ARGV[3], boxed once.
var boxedAddKnown, boxedNotKnown interface{} = "1", "0"

// errShortReply is EnqueueMany's error for a pipeline's reply with fewer elements than it sent.
var errShortReply = errors.New("work: enqueue: reply with too few elements")

// skipReply drops the first element of a pipeline's reply.
func skipReply(r []interface{}) ([]interface{}, error) {
	if len(r) == 0 {
		return nil, errShortReply
	}
	return r[1:], nil
}

// batched reports whether p goes in a script call shared with the pushes of its kind.
func batched(p *Push) bool { return p.Debounce != nil || p.Group != "" }

// batchPushes returns the script calls the debounced and the grouped pushes of pushes make.
func batchPushes(pushes []*Push) []*scriptBatch {
	debounced, grouped := &scriptBatch{sc: debounceScript, per: 1}, &scriptBatch{sc: groupAddScript, per: 2}
	for _, p := range pushes {
		switch {
		case p.Debounce != nil:
			debounced.pushes = append(debounced.pushes, p)
		case p.Group != "":
			grouped.pushes = append(grouped.pushes, p)
		}
	}
	var batches []*scriptBatch
	for _, b := range []*scriptBatch{debounced, grouped} {
		if len(b.pushes) > 0 {
			batches = append(batches, b)
		}
	}
	return batches
}

// scriptBatch is the pushes of one kind (debounced, or grouped) that make one call of their
// script, whose reply has per values for each push, in order.
type scriptBatch struct {
	sc     *redis.Script
	pushes []*Push
	per    int
}

// batchArgs returns the arguments of b's script call.
func (s *Store) batchArgs(b *scriptBatch) []interface{} {
	if b.sc == debounceScript {
		return s.debounceArgs(b.pushes...)
	}
	return s.groupAddArgs(b.pushes...)
}

// replies gives each push of b its part of the reply (or the call's error, or an error of its
// reply's shape): a push whose part starts with an error fails with it.
func (b *scriptBatch) replies(reply interface{}, err error) {
	v, err := redis.Values(reply, err)
	if err == nil && len(v) != b.per*len(b.pushes) {
		err = fmt.Errorf("work: enqueue: unexpected reply of %d elements for %d jobs", len(v), len(b.pushes))
	}
	for i, p := range b.pushes {
		if err != nil {
			p.Err = wrongType(err)
			continue
		}
		part := v[i*b.per : (i+1)*b.per : (i+1)*b.per]
		if re, ok := part[0].(redis.Error); ok {
			p.Err = wrongType(re)
			continue
		}
		p.Reply = part
	}
}

// EnqueueBatch pushes payloads onto their queues atomically, in one round trip: every queue key is
// checked first, so the batch is either queued whole or refused; one LPUSH per job name, in the
// given order, and a wake-up per job name.
func (s *Store) EnqueueBatch(ctx context.Context, w ReplicaWait, names []string, payloads map[string][]interface{}, addKnown []string) error {
	args := make([]interface{}, 0, 3+2*len(names))
	args = append(args, 1+len(names), s.Ks.KnownJobs())
	for _, name := range names {
		args = append(args, s.Ks.Jobs(name))
	}
	args = append(args, s.Ks.WakeChannel())
	for _, name := range names {
		args = append(args, name, len(payloads[name]))
	}
	for _, name := range names {
		args = append(args, payloads[name]...)
	}
	return s.doWrite(ctx, w, func(c redis.Conn) error {
		_, err := enqueueBatchScript.Do(c, args...)
		return err
	})
}

// Schedule adds a payload to the scheduled set, and tells idle pools when it is due (they would
// otherwise learn it at their next look, seconds later).
func (s *Store) Schedule(ctx context.Context, w ReplicaWait, name string, runAt int64, payload []byte, addKnown bool) error {
	return s.doWrite(ctx, w, func(c redis.Conn) error {
		if addKnown {
			c.Send("SADD", s.Ks.KnownJobs(), name)
		}
		c.Send("ZADD", s.Ks.Scheduled(), runAt, payload)
		c.Send("PUBLISH", s.Ks.DueChannel(), runAt)
		r, err := redis.Values(c.Do(""))
		if err != nil {
			return err
		}
		for _, v := range r {
			if e, ok := v.(redis.Error); ok {
				return e
			}
		}
		return nil
	})
}

// EnqueueUnique enqueues (runAt 0) or schedules a unique job. It reports whether the job was added.
// With m non-nil it is idempotent by m.ID (ErrJobIDTaken, see EnqueueOneWithID); a duplicate by the
// unique lock leaves the ID's mark too.
func (s *Store) EnqueueUnique(ctx context.Context, w ReplicaWait, name, key, uniqueKey string, payload, lockValue []byte, runAt int64, ttl int64, m *JobIDMark) (bool, error) {
	dest, score := s.Ks.Jobs(name), ""
	if key != "" {
		dest = s.Ks.KeyedQueue(name, key)
	}
	if runAt != 0 {
		dest, score = s.Ks.Scheduled(), strconv.FormatInt(runAt, 10)
	}
	var res string
	err := s.doWrite(ctx, w, func(c redis.Conn) error {
		args := []interface{}{dest, uniqueKey, s.Ks.KnownJobs(),
			payload, lockValue, score, name, s.Ks.WakeChannel(), ttl, s.Ks.DueChannel(), key, s.Ks.Keyed(name)}
		var err error
		if m != nil {
			res, err = redis.String(enqueueUniqueWithID.Do(c, s.withJobID(3, args, *m)...))
			err = jobIDError(err)
		} else {
			res, err = redis.String(enqueueUniqueScript.Do(c, args...))
		}
		return keyedError(err, []KeyedGroup{{Name: name, Key: key}})
	})
	return res == "ok", err
}
