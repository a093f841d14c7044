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
// on the due channel, and each firing says when the next one is; the requeuer's pass at that time
// finds the schedules due and pokes the scheduler. So an idle pool sends nothing for schedules,
// however many are stored. A poke runs scheduleFirers loops at once, each claiming, planning and
// committing batches of due schedules until none is left; the claims' leases keep them, and other
// pools, on different schedules.
type scheduler struct {
	r    *poolRun
	wake chan struct{}
}

const (
	// scheduleFirers is how many claim-and-commit loops one pool runs while schedules are due: the
	// planning of one batch in Go overlaps the scripts of another.
	scheduleFirers = 2
	// scheduleLease is how long a claim keeps a bucket of schedules from other claims: what a pool
	// that dies after claiming delays them by.
	scheduleLease = 10
	// scheduleClaimMost and scheduleClaimBudget bound one claim: the schedules it returns and the
	// buckets it looks at.
	scheduleClaimMost   = 1000
	scheduleClaimBudget = 2000
)

func newScheduler(r *poolRun) *scheduler { return &scheduler{r: r, wake: make(chan struct{}, 1)} }

// poke asks for a firing pass: schedules are due.
func (s *scheduler) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *scheduler) start(wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-s.r.ctx.Done():
				return
			case <-s.wake:
			}
			s.pass()
		}
	}()
}

// pass fires the due schedules, then asks the requeuer for a pass when the next one is due.
func (s *scheduler) pass() {
	var wg sync.WaitGroup
	for range scheduleFirers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s.r.ctx.Err() == nil {
				n, next, err := fireSchedules(s.r.ctx, s.r.wp.store, 0, s.r.wp.logger)
				if err != nil {
					if s.r.ctx.Err() == nil {
						s.r.wp.logger.Error("work: firing schedules", "err", err)
						s.r.requeuer.in(time.Second)
					}
					return
				}
				if n == 0 {
					if next >= 0 {
						s.r.requeuer.at(time.Unix(next, 0))
					}
					return
				}
			}
		}()
	}
	wg.Wait()
}

// fireSchedules claims a batch of due schedules at now (0: the server's clock), plans each (planClaim)
// and commits them. It returns how many it claimed and the earliest score left in the due index (-1:
// none).
func fireSchedules(ctx context.Context, st *rdb.Store, now int64, logger *slog.Logger) (int, int64, error) {
	at, next, claims, err := st.ClaimSchedules(ctx, now, scheduleLease, scheduleClaimMost, scheduleClaimBudget)
	if err != nil || len(claims) == 0 {
		return 0, next, err
	}
	commits := make([]rdb.ScheduleCommit, 0, len(claims))
	for i := range claims {
		if c, ok := planClaim(&claims[i], at, logger); ok {
			commits = append(commits, c)
		}
	}
	if len(commits) == 0 {
		return len(claims), next, nil
	}
	res, err := st.CommitSchedules(ctx, at, commits)
	if err != nil {
		return 0, -1, err
	}
	if res.Refused > 0 {
		logger.Error("work: schedules' jobs not enqueued: their queue key holds another Redis type; tried again in a minute",
			"schedules", res.Refused)
	}
	return len(claims), res.Next, nil
}
