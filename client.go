package work

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/gomodule/redigo/redis"
)

// ErrNotDeleted is returned by the Client's Delete methods when no job matched.
var ErrNotDeleted = errors.New("nothing deleted")

// ErrNotRetried is returned by Client.RetryDeadJob when no job matched or the matching job cannot be
// retried (check with errors.Is: the error may carry the reason).
var ErrNotRetried = errors.New("nothing retried")

// clientPageSize is the number of jobs on one page of ScheduledJobs, RetryJobs and DeadJobs.
const clientPageSize = 20

// clientBatchSize bounds the members read or moved per round trip by the Client's bulk operations.
const clientBatchSize = 1000

// Client inspects and administers a namespace: worker pools, workers, queues, and the scheduled, retry
// and dead sets. It is safe for concurrent use.
type Client struct {
	store *store
}

// NewClient creates a Client for the given namespace and Redis pool. It panics when pool is nil.
func NewClient(namespace string, pool *redis.Pool) *Client {
	if pool == nil {
		panic("work: NewClient needs a non-nil *redis.Pool")
	}
	return NewClientWithBackend(namespace, PoolBackend(pool))
}

// WorkerPoolHeartbeat is the last heartbeat of a worker pool. Times are epoch seconds.
type WorkerPoolHeartbeat struct {
	WorkerPoolID string   `json:"worker_pool_id"`
	StartedAt    int64    `json:"started_at"`
	HeartbeatAt  int64    `json:"heartbeat_at"`
	JobNames     []string `json:"job_names"`
	Concurrency  uint     `json:"concurrency"`
	Host         string   `json:"host"`
	Pid          int      `json:"pid"`
	WorkerIDs    []string `json:"worker_ids"`
}

// WorkerObservation is what a worker is doing. An idle worker has IsBusy false and the other fields
// (but WorkerID) zero. Times are epoch seconds; ArgsJSON is the job's args as JSON.
type WorkerObservation struct {
	WorkerID string `json:"worker_id"`
	IsBusy   bool   `json:"is_busy"`

	// If IsBusy:
	JobName   string `json:"job_name"`
	JobID     string `json:"job_id"`
	StartedAt int64  `json:"started_at"`
	ArgsJSON  string `json:"args_json"`
	Checkin   string `json:"checkin"`
	CheckinAt int64  `json:"checkin_at"`
}

// Queue is a job name with the number of jobs waiting in its queue and the age in seconds of the oldest
// one (0 when the queue is empty or its oldest job cannot be read).
type Queue struct {
	JobName string `json:"job_name"`
	Count   int64  `json:"count"`
	Latency int64  `json:"latency"`
}

// WorkerPoolHeartbeats returns the heartbeats of the registered worker pools, sorted by pool ID, each
// with its JobNames and WorkerIDs sorted. A registered pool whose heartbeat is missing is left out; a
// field that cannot be parsed is left at its zero value.
func (c *Client) WorkerPoolHeartbeats() ([]*WorkerPoolHeartbeat, error) {
	ids, hashes, err := c.store.poolHashes(context.Background())
	if err != nil {
		return nil, err
	}
	out := make([]*WorkerPoolHeartbeat, 0, len(ids))
	for i, id := range ids {
		if len(hashes[i]) == 0 {
			continue
		}
		out = append(out, parseHeartbeat(id, hashes[i]))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].WorkerPoolID < out[j].WorkerPoolID })
	return out, nil
}

func parseHeartbeat(id string, h map[string]string) *WorkerPoolHeartbeat {
	hb := &WorkerPoolHeartbeat{
		WorkerPoolID: id,
		StartedAt:    parseInt64(h["started_at"]),
		HeartbeatAt:  parseInt64(h["heartbeat_at"]),
		JobNames:     splitSorted(h["job_names"]),
		Host:         h["host"],
		WorkerIDs:    splitSorted(h["worker_ids"]),
	}
	if n, err := strconv.ParseUint(h["concurrency"], 10, 0); err == nil {
		hb.Concurrency = uint(n)
	}
	if n, err := strconv.Atoi(h["pid"]); err == nil {
		hb.Pid = n
	}
	return hb
}

// parseInt64 reads a decimal integer, 0 when it is not one.
func parseInt64(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// splitSorted splits a comma-joined list, never returning nil so that it encodes as [].
func splitSorted(s string) []string {
	out := []string{}
	for _, e := range strings.Split(s, ",") {
		if e != "" {
			out = append(out, e)
		}
	}
	sort.Strings(out)
	return out
}

// WorkerObservations returns one observation per worker of the registered worker pools, idle workers
// included, sorted by worker ID.
func (c *Client) WorkerObservations() ([]*WorkerObservation, error) {
	hbs, err := c.WorkerPoolHeartbeats()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var ids []string
	for _, hb := range hbs {
		for _, id := range hb.WorkerIDs {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	sort.Strings(ids)
	hashes, err := c.store.workerHashes(context.Background(), ids)
	if err != nil {
		return nil, err
	}
	out := make([]*WorkerObservation, len(ids))
	for i, id := range ids {
		h := hashes[i]
		ob := &WorkerObservation{WorkerID: id, IsBusy: len(h) > 0}
		if ob.IsBusy {
			ob.JobName = h["job_name"]
			ob.JobID = h["job_id"]
			ob.StartedAt = parseInt64(h["started_at"])
			ob.ArgsJSON = h["args"]
			ob.Checkin = h["checkin"]
			ob.CheckinAt = parseInt64(h["checkin_at"])
		}
		out[i] = ob
	}
	return out, nil
}

// Queues returns every known job name (enqueued at least once, or registered by a worker pool) with
// its queue's length and latency, sorted by job name. Empty queues are included with Count 0.
func (c *Client) Queues() ([]*Queue, error) {
	stats, err := c.store.queueStats(context.Background())
	if err != nil {
		return nil, err
	}
	now := nowEpochSeconds()
	out := make([]*Queue, len(stats))
	for i, st := range stats {
		q := &Queue{JobName: st.name, Count: st.count}
		if st.oldest != nil {
			// Only t is read (as a float, which other writers may use); a malformed oldest job, or a
			// clock ahead of ours, reads as latency 0.
			var head struct {
				T float64 `json:"t"`
			}
			if json.Unmarshal(st.oldest, &head) == nil && head.T > 0 && float64(now) > head.T {
				q.Latency = now - int64(head.T)
			}
		}
		out[i] = q
	}
	sort.Slice(out, func(i, j int) bool { return out[i].JobName < out[j].JobName })
	return out, nil
}

// ScheduledJobs returns a page of the jobs scheduled to run later (1-based; page 0 is page 1; 20 jobs a
// page), sorted by RunAt (epoch seconds), and the total number of scheduled jobs. A member that cannot
// be decoded is returned with Raw holding its bytes and LastErr saying why.
func (c *Client) ScheduledJobs(page uint) ([]*ScheduledJob, int64, error) {
	jobs, scores, total, err := c.page(c.store.ks.scheduled(), page)
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
	jobs, scores, total, err := c.page(c.store.ks.retry(), page)
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
	jobs, scores, total, err := c.page(c.store.ks.dead(), page)
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
func (c *Client) page(key string, page uint) ([]*Job, []int64, int64, error) {
	if page == 0 {
		page = 1
	}
	start := int64(math.MaxInt64 - clientPageSize) // past any real set: an empty page
	if uint64(page-1) < uint64(math.MaxInt64/clientPageSize-1) {
		start = int64(page-1) * clientPageSize
	}
	members, total, err := c.store.zsetPage(context.Background(), key, start, start+clientPageSize-1)
	if err != nil {
		return nil, nil, 0, err
	}
	jobs := make([]*Job, len(members))
	scores := make([]int64, len(members))
	for i, m := range members {
		jobs[i], _ = decodeMember(m.member)
		scores[i] = m.score
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
	return &Job{Raw: member, LastErr: err.Error()}, false
}

// match is a member of a sorted set found by score and job ID.
type match struct {
	member []byte
	job    *Job
	ok     bool // decoded
}

// findAtScore returns the members of a sorted set with the given score whose job ID (as listed by the
// page methods) is jobID, reading at most clientBatchSize members per round trip.
func (c *Client) findAtScore(ctx context.Context, key string, score int64, jobID string) ([]match, error) {
	var out []match
	for offset := 0; ; offset += clientBatchSize {
		members, err := c.store.zsetByScore(ctx, key, score, score, offset, clientBatchSize)
		if err != nil {
			return nil, err
		}
		for _, m := range members {
			if j, ok := decodeMember(m.member); j.ID == jobID {
				out = append(out, match{member: m.member, job: j, ok: ok})
			}
		}
		if len(members) < clientBatchSize {
			return out, nil
		}
	}
}

// deleteAt deletes the members of a sorted set with the given score and job ID, with their unique
// locks when withLock is set.
func (c *Client) deleteAt(key string, score int64, jobID string, withLock bool) error {
	ctx := context.Background()
	found, err := c.findAtScore(ctx, key, score, jobID)
	if err != nil {
		return err
	}
	deleted := false
	for _, f := range found {
		lock := ""
		if withLock && f.ok && f.job.Unique {
			if lock = f.job.UniqueKey; lock == "" {
				// Jobs enqueued before unique_key was recorded: the key is derived from the args.
				if lock, err = c.store.ks.unique(f.job.Name, f.job.Args); err != nil {
					return err
				}
			}
		}
		ok, err := c.store.deleteMember(ctx, key, f.member, lock)
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

// DeleteDeadJob deletes the dead job with the given DiedAt and ID (as listed by DeadJobs). It returns
// ErrNotDeleted when there is no such job.
func (c *Client) DeleteDeadJob(diedAt int64, jobID string) error {
	return c.deleteAt(c.store.ks.dead(), diedAt, jobID, false)
}

// DeleteRetryJob deletes the job waiting for a retry with the given RetryAt and ID (as listed by
// RetryJobs). It returns ErrNotDeleted when there is no such job.
func (c *Client) DeleteRetryJob(retryAt int64, jobID string) error {
	return c.deleteAt(c.store.ks.retry(), retryAt, jobID, false)
}

// DeleteScheduledJob deletes the scheduled job with the given RunAt and ID (as listed by
// ScheduledJobs), and frees its unique lock if it is a unique job, so an identical job can be enqueued
// again. It returns ErrNotDeleted when there is no such job.
func (c *Client) DeleteScheduledJob(scheduledFor int64, jobID string) error {
	return c.deleteAt(c.store.ks.scheduled(), scheduledFor, jobID, true)
}

// RetryDeadJob moves the dead job with the given DiedAt and ID (as listed by DeadJobs) to the back of
// its queue, with its failure count and error cleared and its enqueue time set to now. It returns
// ErrNotRetried when there is no such job, when another client retried or deleted it first, or when it
// cannot be retried because it cannot be decoded.
func (c *Client) RetryDeadJob(diedAt int64, jobID string) error {
	ctx := context.Background()
	found, err := c.findAtScore(ctx, c.store.ks.dead(), diedAt, jobID)
	if err != nil {
		return err
	}
	now := nowEpochSeconds()
	var ops []requeueOp
	var why error
	for _, f := range found {
		op, err := retryOp(f.member, f.job, f.ok, now)
		if err != nil {
			why = err
			continue
		}
		ops = append(ops, op)
	}
	n, err := c.store.requeueMembers(ctx, c.store.ks.dead(), ops)
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
	ctx := context.Background()
	key := c.store.ks.dead()
	// Stop at the newest job dead when the call began, so that jobs dying meanwhile cannot keep it going.
	last, ok, err := c.store.zsetMaxScore(ctx, key)
	if err != nil || !ok {
		return err
	}
	offset := 0 // members left behind ahead of the next batch
	for {
		members, err := c.store.zsetByScore(ctx, key, "-inf", last, offset, clientBatchSize)
		if err != nil {
			return err
		}
		now := nowEpochSeconds()
		ops := make([]requeueOp, 0, len(members))
		for _, m := range members {
			j, decoded := decodeMember(m.member)
			op, err := retryOp(m.member, j, decoded, now)
			if err != nil {
				offset++
				continue
			}
			ops = append(ops, op)
		}
		if _, err := c.store.requeueMembers(ctx, key, ops); err != nil {
			return err
		}
		if len(members) < clientBatchSize {
			return nil
		}
	}
}

// DeleteAllDeadJobs deletes every dead job.
func (c *Client) DeleteAllDeadJobs() error {
	return c.store.unlink(context.Background(), c.store.ks.dead())
}

// PauseQueue stops worker pools from fetching jobs of the given name until UnpauseQueue; jobs already
// running finish. Jobs can still be enqueued. (Not in gocraft/work; it sets the layout's paused key.)
func (c *Client) PauseQueue(jobName string) error {
	if jobName == "" {
		return errEmptyJobName
	}
	return c.store.setPaused(context.Background(), jobName, true)
}

// UnpauseQueue lets worker pools fetch jobs of the given name again, waking idle pools so they do at
// once. Unpausing a queue that is not paused does nothing. (Not in gocraft/work.)
func (c *Client) UnpauseQueue(jobName string) error {
	if jobName == "" {
		return errEmptyJobName
	}
	return c.store.setPaused(context.Background(), jobName, false)
}

// retryOp builds the move of a dead member back onto its queue. A dead record of a payload that could
// not be decoded gets that payload back verbatim; any other job a fresh start.
func retryOp(member []byte, j *Job, decoded bool, now int64) (requeueOp, error) {
	if !decoded {
		return requeueOp{}, fmt.Errorf("job %q cannot be decoded, so it cannot be queued", j.ID)
	}
	if len(j.Raw) > 0 {
		return requeueOp{member: member, payload: j.Raw, name: j.Name}, nil
	}
	payload, err := retryPayload(member, now)
	if err != nil {
		return requeueOp{}, err
	}
	return requeueOp{member: member, payload: payload, name: j.Name}, nil
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
	}
	if err := json.Unmarshal(member, &w); err != nil {
		return nil, fmt.Errorf("malformed job payload: %w", err)
	}
	w.EnqueuedAt = now
	w.Unique, w.UniqueKey = false, ""
	return json.Marshal(&w)
}

// CancelJob cancels the context.Context of the job with the given ID wherever it runs: every pool of
// the namespace hears the request and the one running the job cancels it (context.Cause is
// ErrJobCancelled). A handler that then returns an error sends its job to the dead set with err
// "cancelled" (dropped with SkipDead), without retries; one that finishes anyway counts as done. A
// job that is not running is not affected. CancelJob returns how many pools heard the request.
func (c *Client) CancelJob(jobID string) (int64, error) {
	if jobID == "" {
		return 0, errors.New("work: job ID is empty")
	}
	return c.store.publishCancel(context.Background(), jobID)
}

// DeadJobsTrimmed returns how many dead jobs pools have removed under WorkerPoolOptions.DeadMaxJobs
// and DeadMaxAge, in total since the namespace began.
func (c *Client) DeadJobsTrimmed() (int64, error) {
	return c.store.deadTrimmedCount(context.Background())
}

// NewClientWithBackend creates a Client that reaches Redis through b (see Backend). It panics when b
// is nil.
func NewClientWithBackend(namespace string, b Backend) *Client {
	if b == nil {
		panic("work: NewClientWithBackend needs a non-nil Backend")
	}
	return &Client{store: newStore(namespace, b)}
}
