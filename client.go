package work

// The Client, and its reads of worker pools, workers, queues, counts, periodic jobs, batches and job
// records. Its methods on the jobs themselves (the sets' pages, finding, deleting, retrying) are in
// client_jobs.go.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work/internal/rdb"
)

// Client inspects and administers a namespace: worker pools, workers, queues, and the scheduled, retry
// and dead sets. It is safe for concurrent use.
type Client struct {
	store *rdb.Store
	waits *jobWaiters // WaitJob's subscription, shared by its callers
}

// NewClient creates a Client for the given namespace and Redis pool. With a nil pool, as
// gocraft/work allowed, every method of the Client returns an error.
func NewClient(namespace string, pool *redis.Pool) *Client {
	if pool == nil {
		return NewClientWithBackend(namespace, rdb.RefusingBackend(errNoPool))
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

	// DeadAfter is how many seconds without a heartbeat the pool declared its peers may take it for
	// dead (its DeadPoolTimeout, longer while it is Idle); 0 for a pool that declares none (a
	// gocraft/work pool, or one of an earlier version), which its peers wait LegacyDeadAfter for.
	DeadAfter int64 `json:"dead_after,omitempty"`

	// Idle says the pool held no job at its last heartbeat: it may beat less often (see
	// WorkerPoolOptions.HeartbeatInterval).
	Idle bool `json:"idle,omitempty"`
}

// LegacyDeadAfter is how long a pool that declares no dead-after limit (a gocraft/work pool, or one
// of an earlier version) may go without a heartbeat before its peers take it for dead.
const LegacyDeadAfter = rdb.LegacyDeadAfterSeconds * time.Second

// Stale reports whether the pool had gone without a heartbeat at now for longer than it declared
// (DeadAfter, else LegacyDeadAfter): peers whose own DeadPoolTimeout is no longer then take it for
// dead, and take its jobs back at their next heartbeat.
func (hb *WorkerPoolHeartbeat) Stale(now time.Time) bool {
	limit := hb.DeadAfter
	if limit <= 0 {
		limit = rdb.LegacyDeadAfterSeconds
	}
	return now.Unix()-hb.HeartbeatAt > limit
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

	// Progress is what the job last reported with Job.SetProgress; nil when it reported none (and
	// for workers of gocraft/work).
	Progress *Progress `json:"progress,omitempty"`
}

// Queue is a job name with the number of jobs waiting in its queue and the age in seconds of the oldest
// one (0 when the queue is empty or its oldest job cannot be read).
type Queue struct {
	JobName string `json:"job_name"`
	Count   int64  `json:"count"`
	Latency int64  `json:"latency"`
}

// WorkerPoolHeartbeats returns the heartbeats of the registered worker pools, sorted by pool ID, each
// with its JobNames and WorkerIDs sorted. A registered pool whose heartbeat is missing is listed with
// its WorkerPoolID only, as gocraft/work lists it (it is taken off the list once another pool has
// reaped it); a field that cannot be parsed is left at its zero value.
func (c *Client) WorkerPoolHeartbeats() ([]*WorkerPoolHeartbeat, error) {
	ids, hashes, err := c.store.PoolHashes(context.Background())
	if err != nil {
		return nil, err
	}
	out := make([]*WorkerPoolHeartbeat, 0, len(ids))
	for i, id := range ids {
		if len(hashes[i]) == 0 {
			out = append(out, &WorkerPoolHeartbeat{WorkerPoolID: id})
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
	if n := parseInt64(h["dead_after"]); n > 0 {
		hb.DeadAfter = n
	}
	hb.Idle = h["idle"] == "1"
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
// included, in gocraft/work's order: by pool ID, then by worker ID within each pool.
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
	hashes, err := c.store.WorkerHashes(context.Background(), ids)
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
			ob.Progress = parseProgress(h["progress"], h["progress_msg"], h["progress_at"])
		}
		out[i] = ob
	}
	return out, nil
}

// Queues returns every known job name (enqueued at least once, or registered by a worker pool) with
// its queue's length and latency, sorted by job name. Empty queues are included with Count 0.
func (c *Client) Queues() ([]*Queue, error) {
	stats, err := c.store.QueueStats(context.Background())
	if err != nil {
		return nil, err
	}
	now := nowEpochSeconds()
	out := make([]*Queue, len(stats))
	for i, st := range stats {
		out[i] = &Queue{JobName: st.Name, Count: st.Count, Latency: latencyOf(st.Oldest, now)}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].JobName < out[j].JobName })
	return out, nil
}

// latencyOf returns the age in seconds of a queue's oldest payload. Only t is read (as a float, which
// other writers may use); an empty queue, a malformed oldest job, or a clock ahead of ours, reads as 0.
func latencyOf(oldest []byte, now int64) int64 {
	if oldest == nil {
		return 0
	}
	var head struct {
		T float64 `json:"t"`
	}
	if json.Unmarshal(oldest, &head) == nil && head.T > 0 && float64(now) > head.T {
		return now - int64(head.T)
	}
	return 0
}

// PauseQueue stops worker pools from fetching jobs of the given name until UnpauseQueue; jobs already
// running finish. Jobs can still be enqueued. (Not in gocraft/work; it sets the layout's paused key.)
func (c *Client) PauseQueue(jobName string) error {
	if jobName == "" {
		return errEmptyJobName
	}
	return c.store.SetPaused(context.Background(), jobName, true)
}

// UnpauseQueue lets worker pools fetch jobs of the given name again, waking idle pools so they do at
// once. Unpausing a queue that is not paused does nothing. (Not in gocraft/work.)
func (c *Client) UnpauseQueue(jobName string) error {
	if jobName == "" {
		return errEmptyJobName
	}
	return c.store.SetPaused(context.Background(), jobName, false)
}

// QueueStat is the state of one job name's queue, as QueueStats reports it.
type QueueStat struct {
	JobName string `json:"job_name"`
	// Count is the number of jobs waiting in the queue.
	Count int64 `json:"count"`
	// Latency is the age in seconds of the oldest waiting job (0 when the queue is empty or its oldest
	// job cannot be read).
	Latency int64 `json:"latency"`
	// Paused is set while the queue is paused (see PauseQueue).
	Paused bool `json:"paused"`
	// InFlight is the number of jobs of this name fetched and not yet finished, over all pools: the
	// layout's lock key for a queue with a MaxConcurrency, the pools' in-progress lists otherwise.
	InFlight int64 `json:"in_flight"`
	// MaxConcurrency is the JobOptions.MaxConcurrency that pools registered for the name; 0: no limit.
	MaxConcurrency int64 `json:"max_concurrency"`
	// KeyedCount is the number of keyed jobs of this name waiting in their keys' queues (Count does
	// not include them; see Client.Keys). InFlight includes the keyed jobs in flight.
	KeyedCount int64 `json:"keyed_count,omitempty"`
}

// QueueStats returns the state of the queue of every known job name (see Queues), sorted by job name,
// in two round trips whatever the number of queues.
func (c *Client) QueueStats() ([]*QueueStat, error) {
	details, err := c.store.QueueDetails(context.Background())
	if err != nil {
		return nil, err
	}
	now := nowEpochSeconds()
	out := make([]*QueueStat, len(details))
	for i, d := range details {
		out[i] = &QueueStat{
			JobName:        d.Name,
			Count:          d.Count,
			Latency:        latencyOf(d.Oldest, now),
			Paused:         d.Paused,
			InFlight:       d.InFlight,
			MaxConcurrency: d.MaxConcurrency,
			KeyedCount:     d.Keyed,
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].JobName < out[j].JobName })
	return out, nil
}

// Summary is a snapshot of a namespace's sizes, as Client.Summary reports it.
type Summary struct {
	Queues    int   `json:"queues"`    // known job names
	Queued    int64 `json:"queued"`    // jobs waiting, over all queues, keyed jobs included
	Keyed     int64 `json:"keyed"`     // of Queued, the keyed jobs waiting in their keys' queues
	InFlight  int64 `json:"in_flight"` // jobs running, over all pools
	Paused    int   `json:"paused"`    // paused queues
	Scheduled int64 `json:"scheduled"` // jobs in the scheduled set
	// Debounced counts the pending bursts of debounced enqueues, each holding one job that waits
	// with its burst, not in the scheduled set, until it is due (see Client.PendingBursts).
	Debounced int64 `json:"debounced"`
	Retry     int64 `json:"retry"` // jobs waiting for a retry
	Dead      int64 `json:"dead"`  // dead jobs
}

// Summary returns the namespace's queue, in-flight, scheduled, debounced, retry and dead totals, in
// three round trips whatever the number of queues.
func (c *Client) Summary() (*Summary, error) {
	qs, err := c.QueueStats()
	if err != nil {
		return nil, err
	}
	s := &Summary{Queues: len(qs)}
	for _, q := range qs {
		s.Queued += q.Count + q.KeyedCount
		s.Keyed += q.KeyedCount
		s.InFlight += q.InFlight
		if q.Paused {
			s.Paused++
		}
	}
	s.Scheduled, s.Retry, s.Dead, s.Debounced, err = c.store.SetSizes(context.Background())
	if err != nil {
		return nil, err
	}
	return s, nil
}

// StatPoint is the number of jobs that finished in one minute.
type StatPoint struct {
	// Time is the start of the minute, in UTC.
	Time time.Time `json:"time"`
	// Processed counts the jobs that succeeded; Failed the attempts that failed (retried or dead).
	Processed int64 `json:"processed"`
	Failed    int64 `json:"failed"`
}

// statsMaxMinutes is how far back JobStats and NamespaceStats look: the counts are kept no longer.
const statsMaxMinutes = rdb.StatsTTLSeconds / 60

// JobStats returns, for every minute from since to until (both included, truncated to the minute),
// how many jobs named jobName succeeded and failed in it, as the worker pools count them. Counts are
// kept 8 days: a range reaching further back starts 8 days before until. One round trip.
func (c *Client) JobStats(jobName string, since, until time.Time) ([]StatPoint, error) {
	if jobName == "" {
		return nil, errEmptyJobName
	}
	return c.stats(context.Background(), []string{jobName}, since, until)
}

// NamespaceStats returns, for every minute from since to until (as JobStats), the counts summed over
// every known job name. Two round trips.
func (c *Client) NamespaceStats(since, until time.Time) ([]StatPoint, error) {
	ctx := context.Background()
	names, err := c.store.KnownJobNames(ctx)
	if err != nil {
		return nil, err
	}
	return c.stats(ctx, names, since, until)
}

// stats sums the per-minute counts of the given job names.
func (c *Client) stats(ctx context.Context, names []string, since, until time.Time) ([]StatPoint, error) {
	from, to := floorMinute(since.Unix()), floorMinute(until.Unix())
	if to < from {
		return nil, fmt.Errorf("work: stats: until (%v) is before since (%v)", until, since)
	}
	if from < 0 {
		from = 0
	}
	if to-from+1 > statsMaxMinutes {
		from = to - statsMaxMinutes + 1
	}
	points := make([]StatPoint, to-from+1)
	for i := range points {
		points[i].Time = time.Unix((from+int64(i))*60, 0).UTC()
	}
	processed, failed, err := c.store.StatsCounts(ctx, names, from, to)
	if err != nil {
		return nil, err
	}
	for n := range processed {
		for i := range points {
			points[i].Processed += processed[n][i]
			points[i].Failed += failed[n][i]
		}
	}
	return points, nil
}

// floorMinute returns the epoch minute holding an epoch second.
func floorMinute(sec int64) int64 {
	if sec < 0 {
		return (sec - 59) / 60
	}
	return sec / 60
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
	return c.store.PublishCancel(context.Background(), jobID)
}

// DeadJobsTrimmed returns how many dead jobs pools have removed under WorkerPoolOptions.DeadMaxJobs
// and DeadMaxAge, in total since the namespace began.
func (c *Client) DeadJobsTrimmed() (int64, error) {
	return c.store.DeadTrimmedCount(context.Background())
}

// NewClientWithBackend creates a Client that reaches Redis through b (see Backend). It panics when b
// is nil.
func NewClientWithBackend(namespace string, b Backend) *Client {
	if b == nil {
		panic("work: NewClientWithBackend needs a non-nil Backend")
	}
	st := rdb.NewStore(namespace, b)
	return &Client{store: st, waits: newJobWaiters(st)}
}

// PeriodicJob is a periodic job that a live worker pool enqueues (see WorkerPool.PeriodicallyEnqueue),
// as the pool's heartbeat describes it.
type PeriodicJob struct {
	JobName       string   `json:"job_name"`
	Spec          string   `json:"spec"`
	NextRunAt     int64    `json:"next_run_at"`     // epoch seconds of the next tick; 0 when the spec cannot be read
	WorkerPoolIDs []string `json:"worker_pool_ids"` // the pools that declare it, sorted
}

// PeriodicJobs returns the periodic jobs declared by the registered worker pools, one per job name
// and spec, sorted by next run, then job name and spec. The next run is computed from the caller's
// clock. Pools of gocraft/work do not describe theirs, so they are not listed.
func (c *Client) PeriodicJobs() ([]*PeriodicJob, error) {
	ids, hashes, err := c.store.PoolHashes(context.Background())
	if err != nil {
		return nil, err
	}
	now := time.Now()
	byKey := map[[2]string]*PeriodicJob{}
	out := []*PeriodicJob{}
	for i, id := range ids {
		raw := hashes[i]["periodic_jobs"]
		if raw == "" {
			continue
		}
		var list []struct {
			JobName string `json:"job_name"`
			Spec    string `json:"spec"`
		}
		if json.Unmarshal([]byte(raw), &list) != nil {
			continue // written by hand: nothing to show
		}
		for _, e := range list {
			k := [2]string{e.JobName, e.Spec}
			pj := byKey[k]
			if pj == nil {
				pj = &PeriodicJob{JobName: e.JobName, Spec: e.Spec, WorkerPoolIDs: []string{}}
				if sched, err := parseCronSpec(e.Spec); err == nil {
					if next := alignSchedule(sched).Next(now); !next.IsZero() {
						pj.NextRunAt = next.Unix()
					}
				}
				byKey[k] = pj
				out = append(out, pj)
			}
			if !slices.Contains(pj.WorkerPoolIDs, id) {
				pj.WorkerPoolIDs = append(pj.WorkerPoolIDs, id)
			}
		}
	}
	for _, pj := range out {
		sort.Strings(pj.WorkerPoolIDs)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.NextRunAt != b.NextRunAt {
			return a.NextRunAt != 0 && (b.NextRunAt == 0 || a.NextRunAt < b.NextRunAt) // unknown last
		}
		if a.JobName != b.JobName {
			return a.JobName < b.JobName
		}
		return a.Spec < b.Spec
	})
	return out, nil
}

// BatchStatus returns the status of a batch, or ErrBatchNotFound: one round trip.
func (c *Client) BatchStatus(id string) (*BatchStatus, error) {
	if err := checkBatchID(id); err != nil {
		return nil, err
	}
	h, err := c.store.BatchStatus(context.Background(), id)
	if err != nil {
		return nil, err
	}
	if h == nil {
		return nil, ErrBatchNotFound
	}
	return parseBatchStatus(id, h), nil
}

// Batches returns a page (1-based, 20 per page) of batches, newest first, and how many batches the
// index holds. The pools drop the batches whose status has expired from the index every minute;
// one met here before that is dropped at once.
func (c *Client) Batches(page uint) ([]*BatchStatus, int64, error) {
	if page == 0 {
		page = 1
	}
	ctx := context.Background()
	start := int64(page-1) * 20
	ids, total, err := c.store.BatchIDs(ctx, start, start+19)
	if err != nil {
		return nil, 0, err
	}
	out := make([]*BatchStatus, 0, len(ids))
	var gone []string
	for _, id := range ids {
		h, err := c.store.BatchStatus(ctx, id)
		if errors.Is(err, ErrWrongType) {
			// Another program overwrote this batch's key: listed as damaged, the page goes on.
			out = append(out, &BatchStatus{ID: id, Damaged: true})
			continue
		}
		if err != nil {
			return nil, 0, err
		}
		if h == nil {
			gone = append(gone, id)
			continue
		}
		out = append(out, parseBatchStatus(id, h))
	}
	if len(gone) > 0 {
		if err := c.store.ForgetBatches(ctx, gone); err == nil {
			total -= int64(len(gone))
		}
	}
	return out, total, nil
}
