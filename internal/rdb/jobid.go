package rdb

// Enqueues made idempotent by the job's ID: the caller gives the job its ID, and the enqueue
// script, wrapped by lua/with_job_id.lua, runs only when no job was enqueued under that ID while
// its mark lives. A relay that may send the same job twice (it crashed after Redis took the job and
// before its source forgot it) makes one job.

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/gomodule/redigo/redis"
)

// ErrJobIDTaken is returned by an enqueue with a JobIDMark when a job was enqueued under the ID
// while its mark lives; nothing was written.
var ErrJobIDTaken = errors.New("work: a job with this ID was enqueued already")

// JobIDMark asks an enqueue to be idempotent by the job's ID, remembered for KeepSeconds.
type JobIDMark struct {
	ID          string
	KeepSeconds int64
}

// JobIDMark is the key that remembers that a job was enqueued under id.
func (k Keyspace) JobIDMark(id string) string { return k.P + "jobid:" + id }

// withJobID returns the arguments of a script wrapped by with_job_id: args (keyCount keys first, or
// for a script whose keys vary, their count then the keys) with the mark's key after the keys and
// its lifetime last.
func (s *Store) withJobID(keyCount int, args []interface{}, m JobIDMark) []interface{} {
	out := make([]interface{}, 0, len(args)+2)
	if keyCount < 0 {
		keyCount = args[0].(int)
		out = append(out, keyCount+1)
		args = args[1:]
	}
	out = append(out, args[:keyCount]...)
	out = append(out, s.Ks.JobIDMark(m.ID))
	out = append(out, args[keyCount:]...)
	return append(out, m.KeepSeconds)
}

// jobIDError turns the wrapper's refusal into ErrJobIDTaken.
func jobIDError(err error) error {
	var re redis.Error
	if errors.As(err, &re) && strings.HasPrefix(string(re), "WORKID taken") {
		return ErrJobIDTaken
	}
	return err
}

// EnqueueOneWithID queues a job without a key (runAt 0) or schedules it, unless a job was enqueued
// under m.ID while its mark lives (ErrJobIDTaken).
func (s *Store) EnqueueOneWithID(ctx context.Context, w ReplicaWait, name string, runAt int64, payload []byte, m JobIDMark) error {
	dest, score := s.Ks.Jobs(name), ""
	if runAt != 0 {
		dest, score = s.Ks.Scheduled(), strconv.FormatInt(runAt, 10)
	}
	args := s.withJobID(2, []interface{}{dest, s.Ks.KnownJobs(), payload, score, name, s.Ks.WakeChannel(), s.Ks.DueChannel()}, m)
	return s.doWrite(ctx, w, func(c redis.Conn) error {
		_, err := enqueueOneWithID.Do(c, args...)
		return jobIDError(err)
	})
}

// pushScripts are the scripts a push may run (see scripted) with their key counts (-1: they vary,
// the count comes first) and their variants wrapped by lua/with_job_id.lua.
var pushScripts = map[*redis.Script]struct {
	keys    int
	wrapped *redis.Script
}{
	enqueueKeyedScript: {1, enqueueKeyedWithID},
	debounceScript:     {-1, debounceWithID},
	groupAddScript:     {-1, groupAddWithID},
}

// PushWithID runs a keyed, debounced or grouped push as EnqueueMany does, in a round trip of its
// own, unless a job was enqueued under m.ID while its mark lives (ErrJobIDTaken); p.Reply and p.Err
// are set as EnqueueMany sets them.
func (s *Store) PushWithID(ctx context.Context, w ReplicaWait, p *Push, m JobIDMark) {
	sc, args, mapErr, ok := s.scripted(p)
	if !ok {
		p.Err = errors.New("work: PushWithID of a plain push")
		return
	}
	ws := pushScripts[sc]
	args = s.withJobID(ws.keys, args, m)
	p.Err = s.doWrite(ctx, w, func(c redis.Conn) error {
		var err error
		p.Reply, err = ws.wrapped.Do(c, args...)
		if err = jobIDError(err); err != nil && err != ErrJobIDTaken {
			err = mapErr(err)
		}
		return err
	})
}

// DeadLetterWithID adds record to the dead set at score, unless a job or record was sent under m.ID
// while its mark lives (ErrJobIDTaken).
func (s *Store) DeadLetterWithID(ctx context.Context, record []byte, score int64, m JobIDMark) error {
	args := s.withJobID(1, []interface{}{s.Ks.Dead(), score, record}, m)
	return s.do(ctx, func(c redis.Conn) error {
		_, err := deadLetterWithID.Do(c, args...)
		return jobIDError(err)
	})
}

// ForgetJobIDs drops the marks of job IDs, so that those IDs may be enqueued again.
func (s *Store) ForgetJobIDs(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	args := make([]interface{}, len(ids))
	for i, id := range ids {
		args[i] = s.Ks.JobIDMark(id)
	}
	return s.do(ctx, func(c redis.Conn) error {
		_, err := c.Do("DEL", args...)
		return err
	})
}
