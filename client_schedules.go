package work

// The Client's methods on schedules (schedules.go): set, read, list, pause, resume, run now, delete.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/workqueue/work/internal/rdb"
)

// SetSchedule creates the schedule s.ID, or replaces its definition, atomically. Setting a schedule
// to the definition it has changes nothing (its next tick, last tick and pause stay), so a deploy may
// set every schedule it wants on each start. A replaced schedule stays paused if it was, and its
// next tick comes after both now and the last tick it enqueued, so no tick is enqueued twice; a new
// schedule's first tick is the first after now, by the caller's clock. Bad input is refused before
// any round trip, with an error wrapping ErrMalformedSchedule, ErrMalformedSpec,
// ErrUnknownLocation, ErrMalformedJobName, ErrMalformedKey or ErrMalformedArgs.
//
// Any live WorkerPool of the namespace enqueues its ticks, whatever job names it serves.
func (c *Client) SetSchedule(s Schedule) error { return c.setSchedules([]Schedule{s}, time.Now()) }

// SetSchedules sets many schedules as SetSchedule sets one, in few round trips (a thousand schedules
// a script call, pipelined). Every schedule is checked before anything is written, and an ID may
// appear once; each schedule is set atomically, but not the list as a whole: after an error, some
// may be set and others not, and calling again with the same list is safe.
func (c *Client) SetSchedules(list []Schedule) error { return c.setSchedules(list, time.Now()) }

// setSchedules sets schedules whose first ticks come after now.
func (c *Client) setSchedules(list []Schedule, now time.Time) error {
	if len(list) == 0 {
		return nil
	}
	sets := make([]rdb.ScheduleSet, len(list))
	crs := make([]*Cron, len(list))
	defs := make([]*scheduleDef, len(list))
	seen := make(map[string]struct{}, len(list))
	for i := range list {
		s := &list[i]
		def, cr, err := s.check()
		if err != nil {
			if len(list) > 1 {
				return fmt.Errorf("schedule %d (%q): %w", i, rdb.TruncateKey(s.ID), err)
			}
			return err
		}
		if _, dup := seen[s.ID]; dup {
			return fmt.Errorf("%w: ID %q given twice", ErrMalformedSchedule, rdb.TruncateKey(s.ID))
		}
		seen[s.ID] = struct{}{}
		next, due := firstTick(s.ID, cr, def.jitter, now)
		sets[i], crs[i], defs[i] = rdb.ScheduleSet{Id: s.ID, Rec: (&scheduleRecord{next: next, def: *def}).encode(), Next: next, Due: due}, cr, def
	}
	idx := make([]int, len(sets)) // the index in list of each entry of sets
	for i := range idx {
		idx[i] = i
	}
	for round := 0; ; round++ {
		out, err := c.store.SetSchedules(context.Background(), sets)
		if err != nil {
			return err
		}
		var again []rdb.ScheduleSet
		var againIdx []int
		for i, last := range out {
			if last <= 0 {
				continue
			}
			// The schedule enqueued a tick at or after the next one computed: its next tick comes
			// after that one.
			d, st := defs[idx[i]], sets[i]
			st.Next, st.Due = firstTick(st.Id, crs[idx[i]], d.jitter, time.Unix(max(last, now.Unix()), 0))
			st.Rec = (&scheduleRecord{next: st.Next, def: *d}).encode()
			again, againIdx = append(again, st), append(againIdx, idx[i])
		}
		if len(again) == 0 {
			return nil
		}
		if round == 3 {
			return fmt.Errorf("work: schedule %q: its ticks kept moving while it was being set", rdb.TruncateKey(again[0].Id))
		}
		sets, idx = again, againIdx
	}
}

// Schedule returns the schedule id with its state, or an error wrapping ErrScheduleNotFound. A
// schedule whose record cannot be read is returned with Damaged saying why.
func (c *Client) Schedule(id string) (*ScheduleInfo, error) {
	if err := CheckScheduleID(id); err != nil {
		return nil, err
	}
	rec, err := c.readSchedule(context.Background(), id)
	if err != nil {
		return nil, err
	}
	return scheduleInfo(id, rec), nil
}

// periodicIDPrefix starts the ID that Schedules gives a periodic job declared in code.
const periodicIDPrefix = "periodic:"

// periodicScheduleID is the ID of the periodic job of a name and spec, as Schedules lists it.
func periodicScheduleID(name, spec string) string { return periodicIDPrefix + name + ":" + spec }

// scheduleNotFound is the error for an ID no schedule has; one in the form of a periodic job's
// says that those are not stored.
func scheduleNotFound(id string) error {
	if strings.HasPrefix(id, periodicIDPrefix) {
		return fmt.Errorf("%w: %q (a periodic job declared in code, with WorkerPool.PeriodicallyEnqueue, changes with the code only)",
			ErrScheduleNotFound, rdb.TruncateKey(id))
	}
	return fmt.Errorf("%w: %q", ErrScheduleNotFound, rdb.TruncateKey(id))
}

// FindSchedule returns the schedule id as Schedule does or, when none is stored under that ID, the
// periodic job declared in code that Schedules lists under it (ScheduleInfo.Periodic), with the
// time of its next run computed from the caller's clock. It returns an error wrapping
// ErrScheduleNotFound when there is neither. A periodic job costs one more round trip.
func (c *Client) FindSchedule(id string) (*ScheduleInfo, error) {
	in, err := c.Schedule(id)
	if !errors.Is(err, ErrScheduleNotFound) || !strings.HasPrefix(id, periodicIDPrefix) {
		return in, err
	}
	periodic, perr := c.PeriodicJobs()
	if perr != nil {
		return nil, perr
	}
	for _, pj := range periodic {
		if periodicScheduleID(pj.JobName, pj.Spec) == id {
			return periodicInfo(pj), nil
		}
	}
	return nil, err
}

// periodicInfo is a periodic job declared in code, as Schedules and FindSchedule report it.
func periodicInfo(pj *PeriodicJob) *ScheduleInfo {
	return &ScheduleInfo{Schedule: Schedule{ID: periodicScheduleID(pj.JobName, pj.Spec), Spec: pj.Spec, JobName: pj.JobName},
		NextTick: pj.NextRunAt, NextRun: pj.NextRunAt, Periodic: true, WorkerPoolIDs: pj.WorkerPoolIDs}
}

// readSchedule reads the record of schedule id, or returns an error wrapping ErrScheduleNotFound.
func (c *Client) readSchedule(ctx context.Context, id string) ([]byte, error) {
	rec, err := c.store.ScheduleRecord(ctx, id)
	if err == nil && rec == nil {
		err = scheduleNotFound(id)
	}
	return rec, err
}

// scheduleInfo decodes the record of schedule id for the Client.
func scheduleInfo(id string, rec []byte) *ScheduleInfo {
	r, err := decodeScheduleRecord(rec)
	if err != nil {
		return &ScheduleInfo{Schedule: Schedule{ID: id}, Damaged: err.Error()}
	}
	return r.info(id)
}

// ScheduleQuery asks Client.Schedules for a page of schedules.
type ScheduleQuery struct {
	// Cursor is "" for the first page, then the Next of the page before.
	Cursor string
	// Count is about how many schedules a page holds (a hint, as for Redis SCAN); 0: 100.
	Count int
	// Prefix, when set, keeps the schedules whose ID starts with it.
	Prefix string
	// StoredOnly leaves out the periodic jobs declared in code, which the first page lists first.
	StoredOnly bool
}

// SchedulePage is a page of Client.Schedules.
type SchedulePage struct {
	Schedules []*ScheduleInfo `json:"schedules"`
	// Next is the cursor of the next page; "" when this is the last.
	Next string `json:"next"`
	// Stored is the number of schedules stored (whatever Prefix says).
	Stored int64 `json:"stored"`
}

// Schedules returns a page of the schedules, each with its state (next and last tick, pause), in no
// particular order, and on the first page, unless q.StoredOnly, the periodic jobs that live pools
// declare in code (WorkerPool.PeriodicallyEnqueue), marked Periodic, so both kinds show side by
// side. As with Redis SCAN, a schedule stored for the whole walk is returned once; one set or deleted
// meanwhile may or may not be; a page may hold more or fewer than q.Count, and be empty before the
// last. A page costs one round trip (two for the first, with periodic jobs). A cursor that is not a
// page's Next is refused with an error wrapping ErrMalformedSchedule.
func (c *Client) Schedules(q ScheduleQuery) (*SchedulePage, error) {
	cursor, count := q.Cursor, q.Count
	if cursor == "" {
		cursor = "0"
	} else if _, err := strconv.ParseUint(cursor, 10, 64); err != nil {
		// Redis would answer "invalid cursor"; say which argument is wrong instead.
		return nil, fmt.Errorf("%w: page cursor %q is not one that Schedules returned", ErrMalformedSchedule, cursor)
	}
	if count <= 0 {
		count = 100
	}
	match := ""
	if q.Prefix != "" {
		match = globEscape(q.Prefix) + "*"
	}
	ctx := context.Background()
	next, kv, total, err := c.store.ScanSchedules(ctx, cursor, match, count)
	if err != nil {
		return nil, err
	}
	page := &SchedulePage{Schedules: make([]*ScheduleInfo, 0, len(kv)/2), Stored: total}
	if next != "0" {
		page.Next = next
	}
	if q.Cursor == "" && !q.StoredOnly {
		periodic, err := c.PeriodicJobs()
		if err != nil {
			return nil, err
		}
		for _, pj := range periodic {
			if in := periodicInfo(pj); strings.HasPrefix(in.ID, q.Prefix) {
				page.Schedules = append(page.Schedules, in)
			}
		}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		page.Schedules = append(page.Schedules, scheduleInfo(string(kv[i]), kv[i+1]))
	}
	return page, nil
}

// globEscape escapes the characters a Redis glob pattern gives a meaning to.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]^\-`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// DeleteSchedule deletes the schedule id; its jobs already enqueued stay. It returns an error
// wrapping ErrScheduleNotFound when there was none.
func (c *Client) DeleteSchedule(id string) error {
	if err := CheckScheduleID(id); err != nil {
		return err
	}
	ok, err := c.store.ScheduleControl(context.Background(), id, "delete")
	if err == nil && !ok {
		err = scheduleNotFound(id)
	}
	return err
}

// PauseSchedule pauses the schedule id: no tick of it is enqueued until ResumeSchedule. Pausing a
// paused schedule does nothing. It returns an error wrapping ErrScheduleNotFound when there is none,
// and one wrapping ErrDamagedSchedule for a record that cannot be read.
func (c *Client) PauseSchedule(id string) error {
	if err := CheckScheduleID(id); err != nil {
		return err
	}
	ok, err := c.store.ScheduleControl(context.Background(), id, "pause")
	if err == nil && !ok {
		err = scheduleNotFound(id)
	}
	return err
}

// ResumeSchedule resumes the paused schedule id from its first tick after now: the ticks that fell
// while it was paused are not enqueued. Resuming a schedule that is not paused does nothing. It
// returns errors as PauseSchedule does.
func (c *Client) ResumeSchedule(id string) error { return c.resumeSchedule(id, time.Now()) }

func (c *Client) resumeSchedule(id string, now time.Time) error {
	if err := CheckScheduleID(id); err != nil {
		return err
	}
	ctx := context.Background()
	for range 4 {
		rec, err := c.readSchedule(ctx, id)
		if err != nil {
			return err
		}
		r, err := decodeScheduleRecord(rec)
		if err != nil {
			return fmt.Errorf("%w: %q: %v", ErrDamagedSchedule, rdb.TruncateKey(id), err)
		}
		if !r.paused {
			return nil
		}
		cr, err := r.cron()
		if err != nil {
			return fmt.Errorf("%w: %q: %v", ErrDamagedSchedule, rdb.TruncateKey(id), err)
		}
		resumed := r.copyWith(0)
		resumed.paused = false
		var due int64 = -1
		if next, d := firstTick(id, cr, r.def.jitter, time.Unix(max(now.Unix(), r.last), 0)); next > 0 {
			resumed.next, due = next, d
		}
		claim := &rdb.ScheduleClaim{Bucket: fmt.Sprint(rdb.ScheduleBucket(id)), Id: id, Rec: rec}
		res, err := c.store.CommitSchedules(ctx, now.Unix(), []rdb.ScheduleCommit{{Claim: claim, Rec: resumed.encode(), Due: due}})
		if err != nil {
			return err
		}
		if res.Committed == 1 {
			if due >= 0 {
				return c.store.PublishDue(ctx, due)
			}
			return nil
		}
		// Changed meanwhile: read it again.
	}
	return fmt.Errorf("work: schedule %q kept changing while it was being resumed", rdb.TruncateKey(id))
}

// RunScheduleNow enqueues the job of the schedule id at once, paused or not, with the time of the
// call as its Tick; the schedule's own ticks are not changed. It returns the job, or an error
// wrapping ErrScheduleNotFound or ErrDamagedSchedule, or ErrKeyFull for a keyed job whose key is
// full, as an enqueue would.
func (c *Client) RunScheduleNow(id string) (*Job, error) { return c.runScheduleNow(id, time.Now()) }

func (c *Client) runScheduleNow(id string, now time.Time) (*Job, error) {
	if err := CheckScheduleID(id); err != nil {
		return nil, err
	}
	rec, err := c.readSchedule(context.Background(), id)
	if err != nil {
		return nil, err
	}
	r, err := decodeScheduleRecord(rec)
	var job *Job
	if err == nil {
		job, err = newCheckedJob(r.def.job, nil, r.def.key)
	}
	if err == nil {
		job.Args, err = decodeArgs(r.def.args)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrDamagedSchedule, rdb.TruncateKey(id), err)
	}
	job.ScheduleID, job.Tick = id, now.Unix()
	raw, err := job.serialize()
	if err != nil {
		return nil, err
	}
	e := &Enqueuer{store: c.store, knownJobs: make(map[string]int64)}
	return e.push(job, raw)
}
