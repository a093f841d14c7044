package work

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/workqueue/work/internal/rdb"
)

// periodicEnqueuer puts the next runs of the pool's periodic jobs into the scheduled set, a few
// minutes ahead. Each run has a deterministic payload (ID "periodic:<name>:<spec>:<epoch>", t = the
// epoch, args null), so every pool writes the same bytes and ZADD keeps a single copy; the requeuer
// then moves it to its queue once.
type periodicEnqueuer struct {
	periodicEnqueuerParams
	changes chan struct{} // a periodic job was registered on the started pool
}

// periodicEnqueuerParams are what a periodicEnqueuer uses: the pool run's context (done when the
// pool stops), the store, the logger, the alarm it sets for the first run it schedules, and the
// pool's periodic jobs (they change when one is registered on the started pool).
type periodicEnqueuerParams struct {
	ctx    context.Context
	store  *rdb.Store
	logger *slog.Logger
	alarm  *dueAlarm
	jobs   func() []*periodicJob
}

type periodicJob struct {
	jobName  string
	spec     string
	schedule cron.Schedule
}

const (
	periodicHorizon = 4 * time.Minute
	periodicEvery   = time.Minute
)

func newPeriodicEnqueuer(p periodicEnqueuerParams) *periodicEnqueuer {
	return &periodicEnqueuer{periodicEnqueuerParams: p, changes: make(chan struct{}, 1)}
}

// changed schedules the runs of periodic jobs registered on the started pool at once.
func (p *periodicEnqueuer) changed() {
	select {
	case p.changes <- struct{}{}:
	default:
	}
}

func (p *periodicEnqueuer) start(wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			p.enqueue(time.Now())
			// Jitter spreads the pools' writes; the horizon is far longer than the wait.
			wait := periodicEvery + time.Duration(rand.Int64N(int64(10*time.Second)))
			select {
			case <-p.ctx.Done():
				return
			case <-p.changes:
			case <-time.After(wait):
			}
		}
	}()
}

// enqueue schedules every run from now until now+horizon.
func (p *periodicEnqueuer) enqueue(now time.Time) {
	var scores []int64
	var payloads [][]byte
	for _, pj := range p.jobs() {
		for _, epoch := range periodicTicks(pj.schedule, now) {
			job := &Job{Name: pj.jobName, ID: periodicJobID(pj.jobName, pj.spec, epoch), EnqueuedAt: epoch}
			raw, err := job.serialize()
			if err != nil {
				continue
			}
			scores = append(scores, epoch)
			payloads = append(payloads, raw)
		}
	}
	if len(scores) == 0 {
		return
	}
	if _, err := p.store.SchedulePeriodic(p.ctx, scores, payloads); err != nil {
		if p.ctx.Err() == nil {
			p.logger.Error("work: scheduling periodic jobs", "err", err)
		}
		return
	}
	p.alarm.at(time.Unix(slices.Min(scores), 0))
}

// periodicTicks returns the epochs of a schedule's runs after now, up to now+horizon. A spec that
// parses may never fire ("0 0 0 30 2 *": February 30th), and cron's Next then answers the zero time,
// again and again: only a strictly later time continues the list, so that it always ends.
func periodicTicks(s cron.Schedule, now time.Time) []int64 {
	var epochs []int64
	end := now.Add(periodicHorizon)
	for prev, t := now, s.Next(now); t.After(prev) && !t.After(end); prev, t = t, s.Next(t) {
		epochs = append(epochs, t.Unix())
	}
	return epochs
}

// alignedEvery is an "@every" schedule whose ticks fall on multiples of its interval since the epoch,
// so that every pool, and every scheduling round, computes the same ticks.
type alignedEvery struct{ every time.Duration }

func (a alignedEvery) Next(t time.Time) time.Time {
	d := int64(a.every / time.Second)
	if d < 1 {
		d = 1
	}
	return time.Unix((t.Unix()/d+1)*d, 0)
}

// neverSchedule is a cron expression that can never fire. It says so at once, where cron's Next
// would search five years for a match, second by second: seconds of CPU at every scheduling round.
type neverSchedule struct{}

func (neverSchedule) Next(time.Time) time.Time { return time.Time{} }

// alignSchedule replaces an "@every" schedule by its aligned form; cron expressions are aligned
// already. A cron expression with a time field that matches nothing (", * * * * *" parses: the
// empty list of seconds) becomes a neverSchedule.
func alignSchedule(s cron.Schedule) cron.Schedule {
	switch c := s.(type) {
	case cron.ConstantDelaySchedule:
		return alignedEvery{every: c.Delay}
	case *cron.SpecSchedule:
		if c.Second == 0 || c.Minute == 0 || c.Hour == 0 || c.Month == 0 {
			return neverSchedule{}
		}
	}
	return s
}

func periodicJobID(name, spec string, epoch int64) string {
	return fmt.Sprintf("periodic:%s:%s:%d", name, spec, epoch)
}
