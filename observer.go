package work

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/workqueue/work/internal/rdb"
)

// workerState is what a worker is doing, as shown by Client.WorkerObservations. Workers update it in
// memory on every job; the observer writes what changed to Redis at most once a second.
type workerState struct {
	workerID string
	store    *rdb.Store // for the running job's own reads (Job.DependencyResults)

	mu         sync.Mutex
	job        *Job
	cancel     context.CancelCauseFunc // nil when the job has no context of its own
	cancelled  bool                    // Client.CancelJob asked to cancel the running job
	startedAt  int64
	checkinMsg string
	checkinAt  int64
	progress   Progress // set by Job.SetProgress; At 0: none
	record     *rdb.RunningRecord
	version    uint64
}

func (s *workerState) start(job *Job, cancel context.CancelCauseFunc) {
	rec := newRunningRecord(job)
	s.mu.Lock()
	s.cancel, s.cancelled = cancel, false
	s.job, s.startedAt, s.checkinMsg, s.checkinAt = job, nowEpochSeconds(), "", 0
	s.progress, s.record = Progress{}, rec
	s.version++
	s.mu.Unlock()
}

// done records that the job ended and reports whether it was cancelled meanwhile.
func (s *workerState) done() bool {
	s.mu.Lock()
	cancelled := s.cancelled
	s.cancel, s.cancelled = nil, false
	s.job, s.checkinMsg, s.checkinAt = nil, "", 0
	s.progress, s.record = Progress{}, nil
	s.version++
	s.mu.Unlock()
	return cancelled
}

func (s *workerState) checkin(msg string) {
	s.mu.Lock()
	s.checkinMsg, s.checkinAt = msg, nowEpochSeconds()
	s.version++
	s.mu.Unlock()
}

// setProgress records the running job's progress (see Job.SetProgress), already checked.
func (s *workerState) setProgress(fraction float64, msg string) {
	now := nowEpochSeconds()
	s.mu.Lock()
	if s.job != nil && (s.progress.Fraction != fraction || s.progress.Message != msg || s.progress.At != now) {
		s.progress = Progress{Fraction: fraction, Message: msg, At: now}
		s.version++
	}
	s.mu.Unlock()
}

// cancelIfRunning cancels the running job's context when its ID is jobID.
func (s *workerState) cancelIfRunning(jobID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.job == nil || s.job.ID != jobID {
		return false
	}
	s.cancelled = true
	if s.cancel != nil {
		s.cancel(ErrJobCancelled)
	}
	return true
}

// cancelRun cancels the running job's context, with cause, when it is job.
func (s *workerState) cancelRun(job *Job, cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.job != job {
		return
	}
	s.cancelled = true
	if s.cancel != nil {
		s.cancel(cause)
	}
}

func (s *workerState) currentJob() *Job {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.job
}

// snapshot returns the state as an observation and its version.
func (s *workerState) snapshot() (rdb.Observation, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := rdb.Observation{WorkerID: s.workerID}
	if s.job != nil {
		o.Busy = true
		o.JobName, o.JobID, o.StartedAt = s.job.Name, s.job.ID, s.startedAt
		o.Checkin, o.CheckinAt = s.checkinMsg, s.checkinAt
		o.Args = argsJSON(s.job.raw)
		if s.progress.At != 0 {
			o.Progress = &rdb.ProgressNote{Fraction: s.progress.Fraction, Message: s.progress.Message, At: s.progress.At}
		}
		o.Record = s.record
	}
	return o, s.version
}

// argsJSON extracts the args of a payload from its immutable bytes (the handler may be changing the
// decoded map meanwhile). No args, null or {} give "", as gocraft/work writes them.
func argsJSON(raw []byte) []byte {
	var p struct {
		Args json.RawMessage `json:"args"`
	}
	if json.Unmarshal(raw, &p) != nil {
		return []byte{}
	}
	a := bytes.TrimSpace(p.Args)
	if len(a) == 0 || string(a) == "null" || (a[0] == '{' && len(bytes.TrimSpace(a[1:len(a)-1])) == 0) {
		return []byte{}
	}
	return p.Args
}

// observer writes worker observations to Redis: once a second, only the workers whose state changed.
type observer struct {
	observerParams
	written map[string]uint64
}

// observerParams are what an observer uses: the pool run's context (done when the pool stops), the
// store, the logger, the pool's ID and the states of its workers.
type observerParams struct {
	ctx     context.Context
	store   *rdb.Store
	logger  *slog.Logger
	poolID  string
	workers []*workerState
}

const observeEvery = time.Second

func newObserver(p observerParams) *observer {
	return &observer{observerParams: p, written: make(map[string]uint64)}
}

func (o *observer) start(wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(observeEvery)
		defer t.Stop()
		for {
			select {
			case <-o.ctx.Done():
				o.clear()
				return
			case <-t.C:
				o.flush()
			}
		}
	}()
}

func (o *observer) flush() {
	var obs []rdb.Observation
	var versions []uint64
	for _, w := range o.workers {
		ob, v := w.snapshot()
		if last, ok := o.written[ob.WorkerID]; ok && last == v {
			continue
		}
		if _, ok := o.written[ob.WorkerID]; !ok && !ob.Busy {
			o.written[ob.WorkerID] = v // idle from the start: nothing to write
			continue
		}
		obs = append(obs, ob)
		versions = append(versions, v)
	}
	if len(obs) == 0 {
		return
	}
	if err := o.store.WriteObservations(o.ctx, o.poolID, obs); err != nil {
		if o.ctx.Err() == nil { // a write cut short by the pool's stop is no failure: clear follows
			o.logger.Warn("work: writing worker observations", "err", err)
		}
		return
	}
	for i, ob := range obs {
		o.written[ob.WorkerID] = versions[i]
	}
}

// clear deletes the observations of a stopping pool.
func (o *observer) clear() {
	obs := make([]rdb.Observation, 0, len(o.workers))
	for _, w := range o.workers {
		obs = append(obs, rdb.Observation{WorkerID: w.workerID})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = o.store.WriteObservations(ctx, o.poolID, obs)
}
