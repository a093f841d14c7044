package work

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/workqueue/work/internal/rdb"
)

// scheduler fires the namespace's due schedules (schedules.go) from this pool. Like the requeuer, it
// runs when something is due, not on a clock: the looks the pool makes anyway (fetcher scans,
// heartbeats) say when the earliest schedule is due, a SetSchedule that makes one due sooner says so
// on the due channel, and each firing says when the next one is (the dueAlarm); the requeuer's pass
// at that time finds the schedules due and says so on due. So an idle pool sends nothing for schedules,
// however many are stored. A poke runs scheduleFirers loops at once, each claiming, planning and
// committing batches of due schedules until none is left; the claims' leases keep them, and other
// pools, on different schedules.
type scheduler struct {
	ctx    context.Context
	store  *rdb.Store
	logger *slog.Logger
	due    <-chan struct{}
	alarm  *dueAlarm
}

// schedulerParams are what a scheduler uses: the pool run's context (done when the pool stops), the
// store, the logger, the signal that schedules are due, and the alarm it sets for the next one.
type schedulerParams struct {
	ctx    context.Context
	store  *rdb.Store
	logger *slog.Logger
	due    <-chan struct{}
	alarm  *dueAlarm
}

const (
	// scheduleFirers is how many claim-and-commit loops one pool runs while schedules are due: the
	// planning of one batch in Go overlaps the scripts of another.
	scheduleFirers = 2
	// scheduleLease is how long a claim keeps a bucket of schedules from other claims: what a pool
	// that dies after claiming delays them by.
	scheduleLease = 10
	// scheduleClaimMost and scheduleClaimBudget bound one claim: the schedules it returns and the
	// buckets it looks at. A commit of 1,000 ticks held Redis about 20 ms, and every other client's
	// next command waited behind it: with 500, other jobs wait 0.6 to 0.7 times as long while a
	// burst of schedules fires, and the burst is queued no later (benches/README.md, "Schedules").
	scheduleClaimMost   = 500
	scheduleClaimBudget = 2000
)

func newScheduler(p schedulerParams) *scheduler {
	return &scheduler{ctx: p.ctx, store: p.store, logger: p.logger, due: p.due, alarm: p.alarm}
}

func (s *scheduler) start(wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-s.ctx.Done():
				return
			case <-s.due:
			}
			s.pass()
		}
	}()
}

// pass fires the due schedules, then sets the alarm for when the next one is due.
func (s *scheduler) pass() {
	var wg sync.WaitGroup
	for range scheduleFirers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, next, err := fireSchedules(s.ctx, s.store, 0, s.logger)
			if err != nil {
				if s.ctx.Err() == nil {
					s.logger.Error("work: firing schedules", "err", err)
					s.alarm.in(time.Second)
				}
				return
			}
			if next >= 0 {
				s.alarm.at(time.Unix(next, 0))
			}
		}()
	}
	wg.Wait()
}

// fireSchedules fires the schedules due at now (0: the server's clock) until a claim finds none
// left: it claims a batch, plans each (planClaim), and commits them together with the next claim,
// in one round trip (Store.CommitAndClaim). It returns how many it claimed and the earliest score
// left in the due index (-1: none).
func fireSchedules(ctx context.Context, st *rdb.Store, now int64, logger *slog.Logger) (int, int64, error) {
	at, next, claims, err := st.ClaimSchedules(ctx, now, scheduleLease, scheduleClaimMost, scheduleClaimBudget)
	total := 0
	for err == nil && len(claims) > 0 {
		total += len(claims)
		commits := make([]rdb.ScheduleCommit, 0, len(claims))
		for i := range claims {
			if c, ok := planClaim(&claims[i], at, logger); ok {
				commits = append(commits, c)
			}
		}
		claimedAt := at
		switch {
		case len(commits) == 0:
			at, next, claims, err = st.ClaimSchedules(ctx, now, scheduleLease, scheduleClaimMost, scheduleClaimBudget)
			continue
		case ctx.Err() != nil:
			// Stopping: these are committed, no more are claimed.
			var res rdb.CommitResult
			res, err = st.CommitSchedules(ctx, claimedAt, commits)
			logRefused(logger, res)
			return total, res.Next, err
		}
		var res rdb.CommitResult
		res, at, next, claims, err = st.CommitAndClaim(ctx, claimedAt, commits, now, scheduleLease, scheduleClaimMost, scheduleClaimBudget)
		logRefused(logger, res)
	}
	if err != nil {
		return total, -1, err
	}
	return total, next, nil
}

// logRefused logs the ticks a commit could not enqueue.
func logRefused(logger *slog.Logger, res rdb.CommitResult) {
	if res.Refused > 0 {
		logger.Error("work: schedules' jobs not enqueued: their queue key holds another Redis type; tried again in a minute",
			"schedules", res.Refused)
	}
}
