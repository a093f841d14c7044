package rdb

// Run-time schedules: their keys, and the scripts that set, claim,
// commit, pause and delete them (lua/schedule_*.lua, lua/lib/schedules.lua). docs/redis-layout.md
// describes the layout for other programs.

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"

	"github.com/gomodule/redigo/redis"
)

// scheduleBuckets is how many buckets the due index has. A bucket is a sorted set of the schedules
// whose ID hashes to it, so with up to about 128 schedules a bucket (two million in all) Redis keeps
// each bucket in its compact encoding, a few dozen bytes per schedule where a single sorted set
// would take well over a hundred. It is part of the layout: changing it strands existing schedules.
const scheduleBuckets = 16384

// ScheduleBucket returns the bucket of a schedule ID: its CRC-32 (IEEE) modulo scheduleBuckets.
func ScheduleBucket(id string) int {
	return int(crc32.ChecksumIEEE([]byte(id)) % scheduleBuckets)
}

// Schedules: the hash of their records by ID, the due index's buckets, and the sorted set of the
// buckets by when their earliest schedule is due.
func (k Keyspace) Schedules() string            { return k.P + "schedules" }
func (k Keyspace) SchedulesDue() string         { return k.P + "schedules:due" }
func (k Keyspace) scheduleBucketPrefix() string { return k.P + "schedules:due:" }
func (k Keyspace) ScheduleBucket(b int) string  { return k.P + "schedules:due:" + strconv.Itoa(b) }

// ScheduleSet is one schedule of a setSchedules call: its ID, its record as a new schedule's, and
// when its next tick is due (jitter included; ignored without a next tick).
type ScheduleSet struct {
	Id   string
	Rec  []byte
	Next int64
	Due  int64
}

// Outcomes of setSchedules, by schedule; a positive value is the schedule's last tick instead: not
// written, its next tick must come after it.
const (
	scheduleCreated   int64 = -1
	scheduleReplaced  int64 = -2
	ScheduleUnchanged int64 = -3
)

// SetSchedules runs scheduleSetScript on sets, in calls of scheduleSetChunk schedules: the first one
// alone (which loads the script if the server lacks it), the others pipelined, their replies read at
// the end. It returns each schedule's outcome.
func (s *Store) SetSchedules(ctx context.Context, sets []ScheduleSet) ([]int64, error) {
	out := make([]int64, 0, len(sets))
	argsOf := func(chunk []ScheduleSet) []interface{} {
		args := make([]interface{}, 0, 4+4*len(chunk))
		args = append(args, s.Ks.Schedules(), s.Ks.SchedulesDue(), s.Ks.scheduleBucketPrefix(), s.Ks.DueChannel())
		for _, st := range chunk {
			due := ""
			if st.Next > 0 {
				due = strconv.FormatInt(st.Due, 10)
			}
			args = append(args, st.Id, ScheduleBucket(st.Id), st.Rec, due)
		}
		return args
	}
	take := func(v interface{}, err error) error {
		r, err := redis.Strings(v, err)
		if err != nil {
			return err
		}
		for _, v := range r {
			switch v {
			case "c":
				out = append(out, scheduleCreated)
			case "r":
				out = append(out, scheduleReplaced)
			case "u":
				out = append(out, ScheduleUnchanged)
			default:
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil || n <= 0 {
					return fmt.Errorf("work: set schedules: unexpected outcome %q", v)
				}
				out = append(out, n)
			}
		}
		return nil
	}
	err := s.do(ctx, func(c redis.Conn) error {
		first := sets[:min(scheduleSetChunk, len(sets))]
		if err := take(scheduleSetScript.Do(c, argsOf(first)...)); err != nil {
			return err
		}
		calls := 0
		for from := len(first); from < len(sets); from += scheduleSetChunk {
			// Each call goes out as soon as it is built: Redis runs it while the next is built.
			if err := scheduleSetScript.SendHash(c, argsOf(sets[from:min(from+scheduleSetChunk, len(sets))])...); err != nil {
				return err
			}
			if err := c.Flush(); err != nil {
				return err
			}
			calls++
		}
		var firstErr error
		for range calls {
			if err := take(c.Receive()); err != nil && firstErr == nil {
				firstErr = err
			}
		}
		return firstErr
	})
	if err == nil && len(out) != len(sets) {
		err = fmt.Errorf("work: set schedules: %d outcomes for %d schedules", len(out), len(sets))
	}
	return out, err
}

// scheduleSetChunk is how many schedules one scheduleSetScript call sets: a call holds Redis for
// about the time of a thousand writes.
const scheduleSetChunk = 1000

// ScheduleClaim is one schedule claimed by claimSchedules: its bucket, ID and record (nil when the ID
// has no record), and the claim's token (the lease's score, which the commit checks instead of the
// record; "" for a record read without a claim, whose commit compares the record). A bucket whose
// key holds another type comes with an empty ID.
type ScheduleClaim struct {
	Bucket string
	Id     string
	Rec    []byte
	Token  string
}

// ClaimSchedules runs scheduleClaimScript at now (0: the server's clock). It returns the time of
// the claim, the earliest score left in the index (-1: none) and the schedules claimed, a bucket's
// together.
func (s *Store) ClaimSchedules(ctx context.Context, now int64, lease, most, budget int) (int64, int64, []ScheduleClaim, error) {
	var r []interface{}
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		r, err = redis.Values(scheduleClaimScript.Do(c, s.claimArgs(now, lease, most, budget)...))
		return err
	})
	if err != nil {
		return 0, 0, nil, err
	}
	return parseClaim(r)
}

// claimArgs are scheduleClaimScript's keys and arguments.
func (s *Store) claimArgs(now int64, lease, most, budget int) []interface{} {
	at := ""
	if now > 0 {
		at = strconv.FormatInt(now, 10)
	}
	return []interface{}{s.Ks.Schedules(), s.Ks.SchedulesDue(), s.Ks.scheduleBucketPrefix(), at, lease, most, budget}
}

// parseClaim reads scheduleClaimScript's reply.
func parseClaim(r []interface{}) (int64, int64, []ScheduleClaim, error) {
	bad := func() (int64, int64, []ScheduleClaim, error) {
		return 0, 0, nil, fmt.Errorf("work: claim schedules: unexpected reply of %d elements", len(r))
	}
	if len(r) < 4 {
		return bad()
	}
	claimedAt, err1 := redis.Int64(r[0], nil)
	next, err2 := redis.Int64(r[1], nil)
	buckets, err3 := redis.Int(r[2], nil)
	token, err4 := redis.String(r[3], nil)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return 0, 0, nil, err
	}
	// The buckets with their IDs, then the IDs' records in the same order.
	var claims []ScheduleClaim
	i := 4
	for range buckets {
		if i+2 > len(r) {
			return bad()
		}
		b, _ := redis.String(r[i], nil)
		n, err := redis.Int(r[i+1], nil)
		if err != nil || i+2+n > len(r) {
			return bad()
		}
		i += 2
		if n < 0 {
			claims = append(claims, ScheduleClaim{Bucket: b})
			continue
		}
		if claims == nil {
			claims = make([]ScheduleClaim, 0, (len(r)-4)/2)
		}
		for _, v := range r[i : i+n] {
			id, _ := redis.String(v, nil)
			claims = append(claims, ScheduleClaim{Bucket: b, Id: id, Token: token})
		}
		i += n
	}
	recs := r[i:]
	j := 0
	for k := range claims {
		if claims[k].Id == "" {
			continue
		}
		if j >= len(recs) {
			return bad()
		}
		claims[k].Rec, _ = recs[j].([]byte)
		j++
	}
	if j != len(recs) {
		return bad()
	}
	return claimedAt, next, claims, nil
}

// ScheduleCommit is what a commit writes for one claimed schedule: the record claimed (nil: none),
// its new record (nil: left as it is) and due score (-1: out of the due index), and the job to
// enqueue (none without a payload).
type ScheduleCommit struct {
	Claim   *ScheduleClaim
	Rec     []byte
	Due     int64
	Name    string
	Key     string
	Payload []byte
}

// CommitResult is what commitSchedules did.
type CommitResult struct {
	Committed, Stale, Refused int64
	Next                      int64 // the earliest score left in the index; -1: none
}

// CommitSchedules runs scheduleCommitScript for the commits of a claim made at now.
func (s *Store) CommitSchedules(ctx context.Context, now int64, commits []ScheduleCommit) (CommitResult, error) {
	var res CommitResult
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		res, err = parseCommit(scheduleCommitScript.Do(c, s.commitArgs(now, commits)...))
		return err
	})
	return res, err
}

// CommitAndClaim runs CommitSchedules and then ClaimSchedules (at claimAt, with lease, most and
// budget) in one round trip: a firing loop's next claim goes with its commit, so Redis runs the two
// back to back. The claim sees what the commit wrote, except on a server that lacked the commit
// script: that call is refused and sent again after the claim ran, which is as correct (the commit's
// compare-and-set and the leases do not depend on the order).
func (s *Store) CommitAndClaim(ctx context.Context, now int64, commits []ScheduleCommit, claimAt int64, lease, most, budget int) (CommitResult, int64, int64, []ScheduleClaim, error) {
	var res CommitResult
	var r []interface{}
	err := s.do(ctx, func(c redis.Conn) error {
		cargs, kargs := s.commitArgs(now, commits), s.claimArgs(claimAt, lease, most, budget)
		if err := scheduleCommitScript.SendHash(c, cargs...); err != nil {
			return err
		}
		if err := scheduleClaimScript.SendHash(c, kargs...); err != nil {
			return err
		}
		if err := c.Flush(); err != nil {
			return err
		}
		cr, cerr := c.Receive()
		kr, kerr := c.Receive()
		// A server that lacks a script (restarted, flushed) refuses that call alone: run it again,
		// loading it. A claim that ran before its commit is still a claim: the commit's
		// compare-and-set and the leases do not depend on their order.
		if noScript(cr, cerr) {
			cr, cerr = scheduleCommitScript.Do(c, cargs...)
		}
		if noScript(kr, kerr) {
			kr, kerr = scheduleClaimScript.Do(c, kargs...)
		}
		var err error
		if res, err = parseCommit(cr, cerr); err != nil {
			return err
		}
		r, err = redis.Values(kr, kerr)
		return err
	})
	if err != nil {
		return res, 0, 0, nil, err
	}
	at, next, claims, err := parseClaim(r)
	return res, at, next, claims, err
}

// noScript reports whether a reply is Redis's refusal of a script it lacks.
func noScript(v interface{}, err error) bool {
	if re, ok := err.(redis.Error); ok {
		return strings.HasPrefix(string(re), "NOSCRIPT")
	}
	re, ok := v.(redis.Error)
	return ok && strings.HasPrefix(string(re), "NOSCRIPT")
}

// commitArgs are scheduleCommitScript's keys and arguments. Commits of one bucket and claim go in
// one run (the claim returns them so): the bucket and the claim's token are sent once a run, and a
// claimed record only without a token.
func (s *Store) commitArgs(now int64, commits []ScheduleCommit) []interface{} {
	args := make([]interface{}, 0, 7+7*len(commits)+len(commits))
	args = append(args, s.Ks.Schedules(), s.Ks.SchedulesDue(), s.Ks.KnownJobs(), s.Ks.scheduleBucketPrefix(), s.Ks.P,
		s.Ks.WakeChannel(), now)
	for i := 0; i < len(commits); {
		b, token := commits[i].Claim.Bucket, commits[i].Claim.Token
		end := i + 1
		for end < len(commits) && commits[end].Claim.Bucket == b && commits[end].Claim.Token == token {
			end++
		}
		args = append(args, b, end-i, token)
		for _, c := range commits[i:end] {
			var claimed []byte
			if token == "" {
				claimed = c.Claim.Rec
			}
			due := ""
			if c.Due >= 0 {
				due = strconv.FormatInt(c.Due, 10)
			}
			payload := c.Payload
			if c.Name != "" && c.Key != "" {
				// A keyed job goes as its lane member, "<key>\n<payload>": most go to the lane so,
				// and the script then makes no string of its own for them.
				payload = make([]byte, 0, len(c.Key)+1+len(c.Payload))
				payload = append(append(append(payload, c.Key...), '\n'), c.Payload...)
			}
			args = append(args, c.Claim.Id, claimed, c.Rec, due, c.Name, c.Key, payload)
		}
		i = end
	}
	return args
}

// parseCommit reads scheduleCommitScript's reply.
func parseCommit(v interface{}, err error) (CommitResult, error) {
	r, err := redis.Int64s(v, err)
	if err != nil {
		return CommitResult{}, err
	}
	if len(r) != 4 {
		return CommitResult{}, fmt.Errorf("work: commit schedules: unexpected reply of %d elements", len(r))
	}
	return CommitResult{Committed: r[0], Stale: r[1], Refused: r[2], Next: r[3]}, nil
}

// ScheduleControl deletes or pauses the schedule id (op "delete" or "pause"); it reports whether the
// schedule existed.
func (s *Store) ScheduleControl(ctx context.Context, id, op string) (bool, error) {
	var n int64
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		n, err = redis.Int64(scheduleControlScript.Do(c, s.Ks.Schedules(), s.Ks.SchedulesDue(),
			s.Ks.ScheduleBucket(ScheduleBucket(id)), id, op, ScheduleBucket(id)))
		return err
	})
	var re redis.Error
	if errors.As(err, &re) && strings.HasPrefix(string(re), "WORKSCHED damaged") {
		err = fmt.Errorf("%w: %s", ErrDamagedSchedule, id)
	}
	return n == 1, err
}

// ScheduleRecord reads the record of schedule id; nil when there is none.
func (s *Store) ScheduleRecord(ctx context.Context, id string) ([]byte, error) {
	var rec []byte
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		rec, err = redis.Bytes(c.Do("HGET", s.Ks.Schedules(), id))
		if err == redis.ErrNil {
			rec, err = nil, nil
		}
		return err
	})
	return rec, err
}

// ScanSchedules reads a page of the schedules hash (HSCAN from cursor, about count records, IDs
// matching the glob pattern match unless it is ""), with the number of schedules stored.
func (s *Store) ScanSchedules(ctx context.Context, cursor string, match string, count int) (string, [][]byte, int64, error) {
	var next string
	var kv [][]byte
	var total int64
	err := s.do(ctx, func(c redis.Conn) error {
		args := []interface{}{s.Ks.Schedules(), cursor}
		if match != "" {
			args = append(args, "MATCH", match)
		}
		args = append(args, "COUNT", count)
		c.Send("HSCAN", args...)
		c.Send("HLEN", s.Ks.Schedules())
		r, err := redis.Values(c.Do(""))
		if err != nil {
			return err
		}
		scan, err := redis.Values(r[0], nil)
		if err != nil {
			return err
		}
		if len(scan) != 2 {
			return fmt.Errorf("work: scan schedules: unexpected reply of %d elements", len(scan))
		}
		if next, err = redis.String(scan[0], nil); err != nil {
			return err
		}
		if kv, err = redis.ByteSlices(scan[1], nil); err != nil {
			return err
		}
		total, err = redis.Int64(r[1], nil)
		return err
	})
	return next, kv, total, err
}

// PublishDue tells idle pools that a schedule is due at the epoch second at (see readiness).
func (s *Store) PublishDue(ctx context.Context, at int64) error {
	return s.do(ctx, func(c redis.Conn) error {
		_, err := c.Do("PUBLISH", s.Ks.DueChannel(), at)
		return err
	})
}
