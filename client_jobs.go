package work

// The Client's methods on jobs: the pages of the scheduled, retry and dead sets, finding a job by ID
// or searching by name, and deleting, retrying or running a job now, one at a time or in bulk.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/workqueue/work/internal/rdb"
)

// clientPageSize is the number of jobs on one page of ScheduledJobs, RetryJobs and DeadJobs.
const clientPageSize = 20

// ScheduledJobs returns a page of the jobs scheduled to run later (1-based; page 0 is page 1; 20 jobs a
// page), sorted by RunAt (epoch seconds), and the total number of scheduled jobs. A member that cannot
// be decoded is returned with Raw holding its bytes and LastErr saying why.
func (c *Client) ScheduledJobs(page uint) ([]*ScheduledJob, int64, error) {
	jobs, scores, total, err := c.page(rdb.Scheduled, page)
	if err != nil {
		return nil, 0, err
	}
	out := make([]*ScheduledJob, len(jobs))
	for i, j := range jobs {
		out[i] = &ScheduledJob{RunAt: scores[i], Job: j}
	}
	return out, total, nil
}

// RetryJobs returns a page of the failed jobs waiting for a retry (1-based; page 0 is page 1; 20 jobs a
// page), sorted by RetryAt (epoch seconds), and the total number of such jobs. A member that cannot be
// decoded is returned with Raw holding its bytes and LastErr saying why.
func (c *Client) RetryJobs(page uint) ([]*RetryJob, int64, error) {
	jobs, scores, total, err := c.page(rdb.Retry, page)
	if err != nil {
		return nil, 0, err
	}
	out := make([]*RetryJob, len(jobs))
	for i, j := range jobs {
		out[i] = &RetryJob{RetryAt: scores[i], Job: j}
	}
	return out, total, nil
}

// DeadJobs returns a page of the jobs that failed for good (1-based; page 0 is page 1; 20 jobs a page),
// sorted by DiedAt (epoch seconds), and the total number of dead jobs. A member that cannot be decoded
// is returned with Raw holding its bytes and LastErr saying why; a dead record of a payload that a
// worker could not decode has Raw holding that payload.
func (c *Client) DeadJobs(page uint) ([]*DeadJob, int64, error) {
	jobs, scores, total, err := c.page(rdb.Dead, page)
	if err != nil {
		return nil, 0, err
	}
	out := make([]*DeadJob, len(jobs))
	for i, j := range jobs {
		out[i] = &DeadJob{DiedAt: scores[i], Job: j}
	}
	return out, total, nil
}

// page reads one page of a sorted set.
func (c *Client) page(key rdb.Place, page uint) ([]*Job, []int64, int64, error) {
	if page == 0 {
		page = 1
	}
	start := int64(math.MaxInt64 - clientPageSize) // past any real set: an empty page
	if uint64(page-1) < uint64(math.MaxInt64/clientPageSize-1) {
		start = int64(page-1) * clientPageSize
	}
	members, total, err := c.store.ZsetPage(context.Background(), key, start, start+clientPageSize-1)
	if err != nil {
		return nil, nil, 0, err
	}
	jobs := make([]*Job, len(members))
	scores := make([]int64, len(members))
	for i, m := range members {
		jobs[i], _ = decodeMember(m.Member)
		scores[i] = m.Score
	}
	return jobs, scores, total, nil
}

// decodeMember decodes a member of the scheduled, retry or dead set; ok is false when it cannot be
// decoded as a job. The job returned then has Raw and LastErr set so it can be shown, and the name and
// ID the payload carries, if any, so it can be found again (to be deleted, say).
func decodeMember(member []byte) (job *Job, ok bool) {
	j, err := decodeJob(member)
	if err == nil {
		return j, true
	}
	var lenient Job
	if json.Unmarshal(member, &lenient) == nil {
		if len(lenient.Raw) > 0 {
			// A dead record of a payload a worker could not decode: it already says what and why.
			return &lenient, false
		}
		return &Job{Name: lenient.Name, ID: lenient.ID, EnqueuedAt: lenient.EnqueuedAt, Raw: member, LastErr: err.Error()}, false
	}
	// Some other field has the wrong type: keep what identifies the job, if it can be read.
	var ident struct {
		Name json.RawMessage `json:"name"`
		ID   json.RawMessage `json:"id"`
	}
	job = &Job{Raw: member, LastErr: err.Error()}
	if json.Unmarshal(member, &ident) == nil {
		_ = json.Unmarshal(ident.Name, &job.Name) // a name or ID of the wrong type stays ""
		_ = json.Unmarshal(ident.ID, &job.ID)
	}
	return job, false
}

// match is a member of a sorted set found by score and job ID.
type match struct {
	member []byte
	job    *Job
	ok     bool // decoded
}

// decodedJob returns the matched job when it decoded, else nil.
func (m match) decodedJob() *Job {
	if !m.ok {
		return nil
	}
	return m.job
}

// removal describes the matched job for its removal by hand: nil when it could not be decoded or
// names a batch or an ID no writer of the library makes, which then go untouched.
func (m match) removal() *rdb.RemovedJob {
	j := m.decodedJob()
	if j == nil || checkBatchID(j.ID) != nil || (j.Batch != "" && checkBatchID(j.Batch) != nil) {
		return nil
	}
	r := &rdb.RemovedJob{Id: j.ID, Name: j.Name, Batch: j.Batch, Tracked: j.Tracked}
	if j.KeyHold && j.Key != "" && checkKey(j.Key) == nil {
		r.Key = j.Key
	}
	return r
}

// findAtScore returns the members of a sorted set whose score reads as score (as the page methods
// list it: see parseScore) and whose job ID (as listed) is jobID, reading at most rdb.ChunkSize
// members per round trip.
func (c *Client) findAtScore(ctx context.Context, key rdb.Place, score int64, jobID string) ([]match, error) {
	var out []match
	err := c.store.EachAtScore(ctx, key, score, func(members []rdb.Zmember) bool {
		for _, m := range members {
			if j, ok := decodeMember(m.Member); j.ID == jobID && m.Score == score {
				out = append(out, match{member: m.Member, job: j, ok: ok})
			}
		}
		return true
	})
	return out, err
}

// deleteAt deletes the members of a sorted set with the given score and job ID, with their unique
// locks when withLock is set.
func (c *Client) deleteAt(key rdb.Place, score int64, jobID string, withLock bool) error {
	ctx := context.Background()
	found, err := c.findAtScore(ctx, key, score, jobID)
	if err != nil {
		return err
	}
	deleted := false
	for _, f := range found {
		lock := ""
		if withLock {
			if lock, err = c.uniqueLockOf(f); err != nil {
				return err
			}
		}
		ok, err := c.store.DeleteMember(ctx, key, f.member, lock, f.removal())
		if err != nil {
			return err
		}
		deleted = deleted || ok
	}
	if !deleted {
		return ErrNotDeleted
	}
	return nil
}

// uniqueLockOf returns the unique lock that guards a job, or "" when it is not a unique job.
func (c *Client) uniqueLockOf(f match) (string, error) {
	if !f.ok || !f.job.Unique {
		return "", nil
	}
	if f.job.UniqueKey != "" {
		// Only ever a unique lock of this job's name: a payload's unique_key could name any key.
		if !c.store.IsUniqueLockOf(f.job.Name, f.job.UniqueKey) {
			return "", nil
		}
		return f.job.UniqueKey, nil
	}
	// Jobs enqueued before unique_key was recorded: the key is derived from the args.
	return c.store.UniqueLock(f.job.Name, f.job.Args, "")
}

// DeleteDeadJob deletes the dead job with the given DiedAt and ID (as listed by DeadJobs). It returns
// ErrNotDeleted when there is no such job.
func (c *Client) DeleteDeadJob(diedAt int64, jobID string) error {
	return c.deleteAt(rdb.Dead, diedAt, jobID, false)
}

// DeleteRetryJob deletes the job waiting for a retry with the given RetryAt and ID (as listed by
// RetryJobs). It returns ErrNotDeleted when there is no such job.
func (c *Client) DeleteRetryJob(retryAt int64, jobID string) error {
	return c.deleteAt(rdb.Retry, retryAt, jobID, false)
}

// DeleteScheduledJob deletes the scheduled job with the given RunAt and ID (as listed by
// ScheduledJobs), and frees its unique lock if it is a unique job, so an identical job can be enqueued
// again. It returns ErrNotDeleted when there is no such job.
//
// The pending job of a debounced burst (see Client.PendingBursts), which waits in its burst rather
// than in the scheduled set, is found by its run time and ID too; deleting it ends the burst.
func (c *Client) DeleteScheduledJob(scheduledFor int64, jobID string) error {
	err := c.deleteAt(rdb.Scheduled, scheduledFor, jobID, true)
	if errors.Is(err, ErrNotDeleted) && jobID != "" {
		return c.deleteBurstJob(scheduledFor, jobID)
	}
	return err
}

// RetryDeadJob moves the dead job with the given DiedAt and ID (as listed by DeadJobs) to the back of
// its queue, with its failure count and error cleared and its enqueue time set to now. It returns
// ErrNotRetried when there is no such job, when another client retried or deleted it first, or when it
// cannot be retried because it cannot be decoded.
func (c *Client) RetryDeadJob(diedAt int64, jobID string) error {
	ctx := context.Background()
	found, err := c.findAtScore(ctx, rdb.Dead, diedAt, jobID)
	if err != nil {
		return err
	}
	now := nowEpochSeconds()
	var ops []rdb.RequeueOp
	var why error
	for _, f := range found {
		op, err := retryOp(f.member, f.job, f.ok, now)
		if err != nil {
			why = err
			continue
		}
		ops = append(ops, op)
	}
	n, err := c.store.RequeueMembers(ctx, rdb.Dead, ops)
	if err != nil {
		return err
	}
	if n == 0 {
		if why != nil {
			return fmt.Errorf("%w: %v", ErrNotRetried, why)
		}
		return ErrNotRetried
	}
	return nil
}

// RetryAllDeadJobs moves every dead job to the back of its queue, as RetryDeadJob does, in batches of
// bounded size. Jobs that cannot be retried (they cannot be decoded) stay in the dead set; jobs that
// die while it runs may stay too.
func (c *Client) RetryAllDeadJobs() error {
	_, err := c.retryDead(func(*Job) bool { return true })
	return err
}

// retryDead moves the dead jobs that want selects to the back of their queues, in score order and in
// batches of rdb.ChunkSize, and returns how many it moved.
func (c *Client) retryDead(want func(*Job) bool) (int64, error) {
	ctx := context.Background()
	var moved int64
	err := c.store.WalkSet(ctx, rdb.Dead, func(members []rdb.Zmember) (int, error) {
		now := nowEpochSeconds()
		ops := make([]rdb.RequeueOp, 0, len(members))
		for _, m := range members {
			j, decoded := decodeMember(m.Member)
			if !want(j) {
				continue
			}
			if op, err := retryOp(m.Member, j, decoded, now); err == nil {
				ops = append(ops, op)
			}
		}
		n, err := c.store.RequeueMembers(ctx, rdb.Dead, ops)
		moved += n
		return len(members) - len(ops), err
	})
	return moved, err
}

// DeleteAllDeadJobs deletes every dead job.
func (c *Client) DeleteAllDeadJobs() error {
	return c.store.Unlink(context.Background(), rdb.Dead)
}

// retryOp builds the move of a dead member back onto its queue. A dead record of a payload that could
// not be decoded gets that payload back verbatim; any other job a fresh start.
func retryOp(member []byte, j *Job, decoded bool, now int64) (rdb.RequeueOp, error) {
	if !decoded {
		return rdb.RequeueOp{}, fmt.Errorf("job %q cannot be decoded, so it cannot be queued", j.ID)
	}
	if len(j.Raw) > 0 {
		op := rdb.RequeueOp{Member: member, Payload: j.Raw, Name: j.Name}
		if orig, err := decodeJob(j.Raw); err == nil && orig.Name == j.Name && orig.Key != "" && checkKey(orig.Key) == nil {
			// A keyed payload found where it did not belong (pushed by hand onto its name's queue,
			// say) goes to its key's queue this time.
			op.Key = orig.Key
		}
		return op, nil
	}
	payload, err := retryPayload(member, now)
	if err != nil {
		return rdb.RequeueOp{}, err
	}
	op := rdb.RequeueOp{Member: member, Payload: payload, Name: j.Name}
	if j.Key != "" && checkKey(j.Key) == nil {
		op.Key = j.Key
	}
	return op, nil
}

// retryPayload re-encodes a dead job for its queue: fails, err and failed_at cleared, t set to now.
// The args are copied as raw JSON so that every number keeps its exact digits. The job is no longer
// unique: its lock was released when it first started and may now belong to a later identical job,
// which the rerun must neither free nor take the args of.
func retryPayload(member []byte, now int64) ([]byte, error) {
	var w struct {
		Name       string          `json:"name,omitempty"`
		ID         string          `json:"id"`
		EnqueuedAt int64           `json:"t"`
		Args       json.RawMessage `json:"args"`
		Unique     bool            `json:"unique,omitempty"`
		UniqueKey  string          `json:"unique_key,omitempty"`
		Key        string          `json:"key,omitempty"`
	}
	if err := json.Unmarshal(member, &w); err != nil {
		return nil, fmt.Errorf("malformed job payload: %w", err)
	}
	w.EnqueuedAt = now
	w.Unique, w.UniqueKey = false, ""
	return json.Marshal(&w)
}

// errEmptyJobID is returned for an empty job ID, which would match the undecodable members.
var errEmptyJobID = errors.New("work: job ID is empty")

// JobLocation is where a job is: what FindJob and SearchJobs return.
type JobLocation struct {
	// State is where the job is: JobStateQueued, JobStateInProgress, JobStateScheduled,
	// JobStateRetry or JobStateDead.
	State JobState `json:"state"`
	// Score is the job's score in the scheduled, retry or dead set (when it runs, is retried or died;
	// epoch seconds), and 0 for queued and in-progress jobs.
	Score int64 `json:"score,omitempty"`
	// PoolID is the worker pool holding an in-progress job.
	PoolID string `json:"pool_id,omitempty"`
	// Job is the decoded job. For a payload that cannot be decoded it holds the name and ID the
	// payload carries, if any, Raw holding its bytes and LastErr saying why; for a dead record of a
	// payload a worker could not decode, Raw holds that original payload.
	Job *Job `json:"job"`
	// Decoded is false when Payload cannot be decoded as a job.
	Decoded bool `json:"decoded"`
	// Payload is the job's bytes exactly as they are stored in Redis.
	Payload string `json:"payload"`
}

// MarshalJSON encodes the location with its job as records keep it (see Job.Raw).
func (l JobLocation) MarshalJSON() ([]byte, error) {
	return marshalReadable(struct {
		State   JobState `json:"state"`
		Score   int64    `json:"score,omitempty"`
		PoolID  string   `json:"pool_id,omitempty"`
		Job     *jobJSON `json:"job"`
		Decoded bool     `json:"decoded"`
		Payload string   `json:"payload"`
	}{l.State, l.Score, l.PoolID, newJobJSON(l.Job), l.Decoded, l.Payload})
}

// idNeedles returns the byte strings a payload holding the job ID contains: the ID, and the ID as
// JSON encodes it when that differs.
func idNeedles(jobID string) [][]byte {
	needles := [][]byte{[]byte(jobID)}
	if enc, err := json.Marshal(jobID); err == nil {
		if e := enc[1 : len(enc)-1]; string(e) != jobID {
			needles = append(needles, e)
		}
	}
	return needles
}

// matchID decodes member and reports whether it is the job with the given ID. The needles (see
// idNeedles) skip the decoding of payloads that cannot hold the ID.
func matchID(member []byte, jobID string, needles [][]byte) (*Job, bool, bool) {
	found := false
	for _, n := range needles {
		if bytes.Contains(member, n) {
			found = true
			break
		}
	}
	if !found {
		return nil, false, false
	}
	j, ok := decodeMember(member)
	return j, ok, j.ID == jobID
}

// plainID reports whether a job ID holds only letters, digits, '-', '_', '.' and ':', which neither
// JSON encoders nor Redis glob patterns treat specially.
func plainID(id string) bool {
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}

// FindJob finds the job with the given ID wherever it is: the pending job of a debounced burst
// (reported scheduled, at its run time), in the scheduled and retry sets, the queue
// of a known job name (see Queues) or of one of its keys, the in-progress lists of a registered worker
// pool, or the dead set,
// looked at in that order, which is the order jobs move in, so a job moving on while FindJob runs is
// still found. It returns ErrJobNotFound when there is no such job.
//
// Cost: in the worst case (the job is dead or missing) it reads every job of the namespace, the sets
// with ZSCAN filtered by Redis on the ID, the lists with LRANGE, at most 1000 members per round trip,
// and decodes only the payloads that contain the ID. It is meant for operators, not for a hot path.
func (c *Client) FindJob(jobID string) (*JobLocation, error) {
	if jobID == "" {
		return nil, errEmptyJobID
	}
	ctx := context.Background()
	needles := idNeedles(jobID)
	if loc, _, err := c.findBurst(ctx, jobID, needles); loc != nil || err != nil {
		return loc, err
	}
	for _, set := range []struct {
		state JobState
		key   rdb.Place
	}{
		{JobStateScheduled, rdb.Scheduled},
		{JobStateRetry, rdb.Retry},
	} {
		if loc, err := c.findInSet(ctx, set.state, set.key, jobID, needles); loc != nil || err != nil {
			return loc, err
		}
	}
	names, err := c.store.KnownJobNames(ctx)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	for _, name := range names {
		if loc, err := c.findInList(ctx, JobStateQueued, rdb.Queue(name), jobID, needles); loc != nil || err != nil {
			return loc, err
		}
		if loc, err := c.findKeyed(ctx, name, jobID, needles); loc != nil || err != nil {
			return loc, err
		}
	}
	pools, err := c.store.PoolIDs(ctx)
	if err != nil {
		return nil, err
	}
	sort.Strings(pools)
	var keys []rdb.Place
	var owners []string
	for _, pool := range pools {
		for _, name := range names {
			keys = append(keys, rdb.InProgress(name, pool), rdb.KeyedInProgress(name, pool))
			owners = append(owners, pool, pool)
		}
	}
	lengths, err := c.store.ListLengths(ctx, keys)
	if err != nil {
		return nil, err
	}
	for i, key := range keys {
		if lengths[i] == 0 {
			continue
		}
		// Every other list is a keyed in-progress list (one of another type reads as empty).
		loc, err := c.findInList(ctx, JobStateInProgress, key, jobID, needles)
		if i%2 == 1 && errors.Is(err, ErrWrongType) {
			continue
		}
		if loc != nil {
			loc.PoolID = owners[i]
		}
		if loc != nil || err != nil {
			return loc, err
		}
	}
	if loc, err := c.findInSet(ctx, JobStateDead, rdb.Dead, jobID, needles); loc != nil || err != nil {
		return loc, err
	}
	return nil, ErrJobNotFound
}

// findKeyed looks for a job ID in the queues of a job name's keys with jobs waiting, walking the
// keys with ZSCAN: unlike pages by backlog, whose ranks move as jobs come and go, it sees every key
// that has jobs waiting all along. Keyed state that another program overwrote with another type is
// passed over, as the pools pass it over.
func (c *Client) findKeyed(ctx context.Context, name, jobID string, needles [][]byte) (*JobLocation, error) {
	var loc *JobLocation
	var findErr error
	err := c.store.ScanSet(ctx, rdb.KeyedWaiting(name), "*", func(keys []rdb.Zmember) bool {
		for _, key := range keys {
			l, err := c.findInList(ctx, JobStateQueued, rdb.KeyedQueue(name, string(key.Member)), jobID, needles)
			if errors.Is(err, ErrWrongType) {
				continue
			}
			if l != nil || err != nil {
				loc, findErr = l, err
				return false
			}
		}
		return true
	})
	if errors.Is(err, ErrWrongType) {
		err = nil
	}
	if err == nil {
		err = findErr
	}
	if loc != nil || err != nil {
		return loc, err
	}
	return c.findInLane(ctx, name, jobID, needles)
}

// findInLane looks for a job ID among the lane jobs of a job name's keys: the members of its ready
// set that carry a payload ("<key>\n<payload>"; the others are keys).
func (c *Client) findInLane(ctx context.Context, name, jobID string, needles [][]byte) (*JobLocation, error) {
	match := "*\n*"
	if plainID(jobID) {
		match = "*\n*" + jobID + "*"
	}
	var loc *JobLocation
	err := c.store.ScanSet(ctx, rdb.KeyedReady(name), match, func(members []rdb.Zmember) bool {
		for _, m := range members {
			key, payload := rdb.SplitKeyedEntry(m.Member)
			if key == nil {
				continue
			}
			if j, ok, is := matchID(payload, jobID, needles); is {
				loc = &JobLocation{State: JobStateQueued, Job: j, Decoded: ok, Payload: string(payload)}
				return false
			}
		}
		return true
	})
	if errors.Is(err, ErrWrongType) {
		return nil, nil
	}
	return loc, err
}

// findInSet looks for a job ID in a sorted set with ZSCAN, at most rdb.ChunkSize members a step.
func (c *Client) findInSet(ctx context.Context, state JobState, key rdb.Place, jobID string, needles [][]byte) (*JobLocation, error) {
	match := "*"
	if plainID(jobID) {
		// Any JSON encoder writes such an ID as it is: let Redis skip the members without it.
		match = "*" + jobID + "*"
	}
	var loc *JobLocation
	err := c.store.ScanSet(ctx, key, match, func(members []rdb.Zmember) bool {
		for _, m := range members {
			if j, ok, is := matchID(m.Member, jobID, needles); is {
				loc = &JobLocation{State: state, Score: m.Score, Job: j, Decoded: ok, Payload: string(m.Member)}
				return false
			}
		}
		return true
	})
	return loc, err
}

// findInList looks for a job ID in a list (the jobs' payloads: the store hands a keyed in-progress
// list's entries over without their key).
func (c *Client) findInList(ctx context.Context, state JobState, key rdb.Place, jobID string, needles [][]byte) (*JobLocation, error) {
	var loc *JobLocation
	err := c.store.EachListChunk(ctx, key, func(chunk [][]byte) bool {
		for _, m := range chunk {
			if j, ok, is := matchID(m, jobID, needles); is {
				loc = &JobLocation{State: state, Job: j, Decoded: ok, Payload: string(m)}
				return false
			}
		}
		return true
	})
	return loc, err
}

// DeleteQueuedJob deletes the job with the given ID from the queue of jobName, and frees its unique
// lock if it is a unique job, so an identical job can be enqueued again. It returns ErrNotDeleted when
// the queue holds no such job (a worker may have taken it first). It reads the queue in round trips of
// at most 1000 jobs, and removes a job only if its exact bytes are still queued.
func (c *Client) DeleteQueuedJob(jobName, jobID string) error {
	if jobName == "" {
		return errEmptyJobName
	}
	if jobID == "" {
		return errEmptyJobID
	}
	ctx := context.Background()
	key := rdb.Queue(jobName)
	needles := idNeedles(jobID)
	var found []match
	seen := map[string]bool{}
	err := c.store.EachListChunk(ctx, key, func(chunk [][]byte) bool {
		for _, m := range chunk {
			if j, ok, is := matchID(m, jobID, needles); is && !seen[string(m)] {
				seen[string(m)] = true
				found = append(found, match{member: m, job: j, ok: ok})
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	var deleted int64
	for _, f := range found {
		lock, err := c.uniqueLockOf(f)
		if err != nil {
			return err
		}
		n, err := c.store.DeleteListMember(ctx, key, f.member, lock, f.removal())
		if err != nil {
			return err
		}
		deleted += n
	}
	if deleted == 0 {
		return ErrNotDeleted
	}
	return nil
}

// RetryDeadJobsByName moves every dead job named jobName to the back of its queue, as RetryDeadJob
// does, and returns how many it moved. It reads the dead set in score order, in batches of at most
// 1000 members; dead records that cannot be retried (they cannot be decoded) stay.
func (c *Client) RetryDeadJobsByName(jobName string) (int64, error) {
	if jobName == "" {
		return 0, errEmptyJobName
	}
	return c.retryDead(func(j *Job) bool { return j.Name == jobName })
}

// DeleteDeadJobsByName deletes every dead job named jobName, undecodable records that carry that name
// included, and returns how many it deleted. It reads the dead set in batches of at most 1000 members.
func (c *Client) DeleteDeadJobsByName(jobName string) (int64, error) {
	if jobName == "" {
		return 0, errEmptyJobName
	}
	ctx := context.Background()
	var deleted int64
	err := c.store.WalkSet(ctx, rdb.Dead, func(members []rdb.Zmember) (int, error) {
		var drop [][]byte
		for _, m := range members {
			if j, _ := decodeMember(m.Member); j.Name == jobName {
				drop = append(drop, m.Member)
			}
		}
		n, err := c.store.ZremMembers(ctx, rdb.Dead, drop)
		deleted += n
		return len(members) - len(drop), err
	})
	return deleted, err
}

// RunScheduledJobNow moves the scheduled job with the given RunAt and ID (as listed by ScheduledJobs)
// to the back of its queue at once, unchanged. It returns ErrNotRetried when there is no such job or
// it cannot be decoded.
//
// The pending job of a debounced burst is found too, as DeleteScheduledJob finds it; running it now
// ends the burst.
func (c *Client) RunScheduledJobNow(runAt int64, jobID string) error {
	err := c.runNow(rdb.Scheduled, runAt, jobID)
	if errors.Is(err, ErrNotRetried) && jobID != "" {
		return c.runBurstJobNow(runAt, jobID)
	}
	return err
}

// RunRetryJobNow moves the job waiting for a retry with the given RetryAt and ID (as listed by
// RetryJobs) to the back of its queue at once, with its failure count kept. It returns ErrNotRetried
// when there is no such job or it cannot be decoded.
func (c *Client) RunRetryJobNow(retryAt int64, jobID string) error {
	return c.runNow(rdb.Retry, retryAt, jobID)
}

// runNow moves members of a sorted set onto their queues verbatim, as the requeuer does when they are
// due.
func (c *Client) runNow(key rdb.Place, score int64, jobID string) error {
	ctx := context.Background()
	found, err := c.findAtScore(ctx, key, score, jobID)
	if err != nil {
		return err
	}
	var ops []rdb.RequeueOp
	for _, f := range found {
		if f.ok {
			op := rdb.RequeueOp{Member: f.member, Payload: f.member, Name: f.job.Name}
			if f.job.Key != "" && checkKey(f.job.Key) == nil {
				op.Key, op.Hold = f.job.Key, f.job.KeyHold
			}
			ops = append(ops, op)
		}
	}
	n, err := c.store.RequeueMembers(ctx, key, ops)
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotRetried
	}
	return nil
}

// SearchJobs returns a page (1-based; page 0 is page 1; 20 jobs a page) of the jobs in the scheduled,
// retry or dead set (state JobStateScheduled, JobStateRetry or JobStateDead) whose name, ID or batch ID
// contains query, ignoring case, sorted by score, and the number of such jobs. An empty query matches
// every job; a batch's ID finds its members.
//
// Cost: it reads the whole set, at most 1000 members per round trip, and decodes only the members
// whose bytes contain the query. Jobs that move while it runs may be missed or counted twice.
func (c *Client) SearchJobs(state JobState, query string, page uint) ([]*JobLocation, int64, error) {
	var key rdb.Place
	switch state {
	case JobStateScheduled:
		key = rdb.Scheduled
	case JobStateRetry:
		key = rdb.Retry
	case JobStateDead:
		key = rdb.Dead
	default:
		return nil, 0, fmt.Errorf("work: cannot search jobs in state %q", state)
	}
	if page == 0 {
		page = 1
	}
	first := uint64(page-1) * clientPageSize
	if uint64(page-1) > math.MaxUint64/clientPageSize {
		first = math.MaxUint64
	}
	ctx := context.Background()
	lower := strings.ToLower(query)
	needle := []byte(lower)
	var out []*JobLocation
	var total uint64
	err := c.store.EachSetChunk(ctx, key, func(members []rdb.Zmember) bool {
		for _, m := range members {
			if !bytes.Contains(bytes.ToLower(m.Member), needle) && bytes.IndexByte(m.Member, '\\') < 0 {
				continue // cannot hold the query (JSON escapes aside)
			}
			j, ok := decodeMember(m.Member)
			if !strings.Contains(strings.ToLower(j.Name), lower) && !strings.Contains(strings.ToLower(j.ID), lower) &&
				!strings.Contains(strings.ToLower(j.Batch), lower) {
				continue
			}
			if total >= first && total < first+clientPageSize {
				out = append(out, &JobLocation{State: state, Score: m.Score, Job: j, Decoded: ok, Payload: string(m.Member)})
			}
			total++
		}
		return true
	})
	if err != nil {
		return nil, 0, err
	}
	if out == nil {
		out = []*JobLocation{}
	}
	return out, int64(total), nil
}
