package work

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work/internal/rdb"
)

// schedFixture is a namespace with a Client, and the firing code run by hand at chosen times (the
// pools' clock is the server's; these tests pass their own).
type schedFixture struct {
	t    *testing.T
	pool *redis.Pool
	ns   string
	c    *Client
	st   *rdb.Store
	logs *bytes.Buffer
	log  *slog.Logger
	mu   sync.Mutex
}

func newSchedFixture(t *testing.T) *schedFixture {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	f := &schedFixture{t: t, pool: pool, ns: ns, c: NewClient(ns, pool), st: rdb.NewStore(ns, PoolBackend(pool)), logs: &bytes.Buffer{}}
	f.log = slog.New(slog.NewTextHandler(lockedWriter{&f.mu, f.logs}, nil))
	return f
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (f *schedFixture) logged() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.logs.String()
}

// set sets schedules as if the caller's clock read now.
func (f *schedFixture) set(now time.Time, list ...Schedule) {
	f.t.Helper()
	if err := f.c.setSchedules(list, now); err != nil {
		f.t.Fatalf("set %d schedules: %v", len(list), err)
	}
}

// fire fires every schedule due at now, as pools would; it returns how many it claimed.
func (f *schedFixture) fire(now time.Time) int {
	f.t.Helper()
	total := 0
	for {
		n, _, err := fireSchedules(context.Background(), f.st, now.Unix(), f.log)
		if err != nil {
			f.t.Fatalf("fire at %v: %v", now, err)
		}
		if n == 0 {
			return total
		}
		total += n
	}
}

// jobs returns the jobs of name waiting in its queue (or in key's queue), oldest first.
func (f *schedFixture) jobs(name, key string) []*Job {
	f.t.Helper()
	q := f.ns + ":jobs:" + name
	if key != "" {
		q = f.st.Ks.KeyedQueue(name, key)
	}
	raw, err := redis.ByteSlices(rdo(f.t, f.pool, "LRANGE", q, 0, -1), nil)
	if err != nil {
		f.t.Fatal(err)
	}
	var ordered [][]byte
	for i := len(raw) - 1; i >= 0; i-- {
		ordered = append(ordered, raw[i])
	}
	if key != "" {
		// A key's jobs in the lane (lib/keyed.lua), in their order, after those of its queue.
		lane, err := redis.ByteSlices(rdo(f.t, f.pool, "ZRANGE", f.st.Ks.KeyedReady(name), 0, -1), nil)
		if err != nil && !errors.Is(err, redis.ErrNil) && !strings.Contains(err.Error(), "WRONGTYPE") {
			f.t.Fatal(err)
		}
		for _, m := range lane {
			if k, payload, ok := bytes.Cut(m, []byte("\n")); ok && string(k) == key {
				ordered = append(ordered, payload)
			}
		}
	}
	var out []*Job
	for _, b := range ordered {
		j, err := decodeJob(b)
		if err != nil {
			f.t.Fatal(err)
		}
		out = append(out, j)
	}
	return out
}

// ticks returns the ticks of the jobs of name, as UTC times.
func (f *schedFixture) ticks(name string) []string {
	var out []string
	for _, j := range f.jobs(name, "") {
		out = append(out, time.Unix(j.Tick, 0).UTC().Format(time.DateTime))
	}
	return out
}

func (f *schedFixture) info(id string) *ScheduleInfo {
	f.t.Helper()
	in, err := f.c.Schedule(id)
	if err != nil {
		f.t.Fatalf("Schedule(%q): %v", id, err)
	}
	return in
}

func TestScheduleSetReadAndRefusals(t *testing.T) {
	f := newSchedFixture(t)
	now := utc(t, "2024-05-06 06:00:00") // a Monday, 8:00 in Berlin
	s := Schedule{ID: "customer-1234", Spec: "0 0 9 * * MON", Location: "Europe/Berlin", JobName: "report",
		Args: Q{"customer": 1234, "big": json64(12345678901234567890)}, Key: "customer-1234", Jitter: 30 * time.Second,
		Missed: MissedRunLatest}
	f.set(now, s)
	in := f.info("customer-1234")
	want := utc(t, "2024-05-06 07:00:00").Unix() // 9:00 CEST
	if in.NextTick != want || in.NextRun < want || in.NextRun >= want+30 || in.LastTick != 0 || in.Paused || in.Damaged != "" {
		t.Errorf("state: %+v, want next tick %d", in, want)
	}
	if in.Spec != s.Spec || in.Location != s.Location || in.JobName != s.JobName || in.Key != s.Key ||
		in.Jitter != s.Jitter || in.Missed != s.Missed || fmt.Sprint(in.Args) != "map[big:12345678901234567890 customer:1234]" {
		t.Errorf("definition: %+v", in.Schedule)
	}
	// What the Client reads back sets the same definition: nothing changes.
	out, err := f.st.SetSchedules(context.Background(), []rdb.ScheduleSet{mustDef(t, in.Schedule, now)})
	if err != nil || out[0] != rdb.ScheduleUnchanged {
		t.Errorf("setting what was read: %v, %v", out, err)
	}

	for _, tc := range []struct {
		s    Schedule
		want error
	}{
		{Schedule{ID: "", Spec: "@daily", JobName: "j"}, ErrMalformedSchedule},
		{Schedule{ID: "a\nb", Spec: "@daily", JobName: "j"}, ErrMalformedSchedule},
		{Schedule{ID: strings.Repeat("x", 201), Spec: "@daily", JobName: "j"}, ErrMalformedSchedule},
		{Schedule{ID: "a", Spec: "0 0 9 * *  * *", JobName: "j"}, ErrMalformedSpec},
		{Schedule{ID: "a", Spec: "@daily", Location: "Europe/Nowhere", JobName: "j"}, ErrUnknownLocation},
		{Schedule{ID: "a", Spec: "@daily", JobName: ""}, ErrMalformedJobName},
		{Schedule{ID: "a", Spec: "@daily", JobName: "j:lock"}, ErrMalformedJobName},
		{Schedule{ID: "a", Spec: "@daily", JobName: "j", Key: "{k}"}, ErrMalformedKey},
		{Schedule{ID: "a", Spec: "@daily", JobName: "j", Args: Q{"c": make(chan int)}}, ErrMalformedArgs},
		{Schedule{ID: "a", Spec: "@daily", JobName: "j", Args: Q{"s": strings.Repeat("x", MaxScheduleArgs)}}, ErrMalformedArgs},
		{Schedule{ID: "a", Spec: "@daily", JobName: "j", Jitter: -time.Second}, ErrMalformedSchedule},
		{Schedule{ID: "a", Spec: "@daily", JobName: "j", Jitter: 25 * time.Hour}, ErrMalformedSchedule},
		{Schedule{ID: "a", Spec: "@daily", JobName: "j", Missed: 7}, ErrMalformedSchedule},
	} {
		if err := f.c.SetSchedule(tc.s); !errors.Is(err, tc.want) {
			t.Errorf("SetSchedule(%+v): %v, want %v", tc.s, err, tc.want)
		}
	}
	// A bad schedule in a list refuses the whole list before anything is written, as does an ID given
	// twice.
	good := Schedule{ID: "good", Spec: "@daily", JobName: "j"}
	if err := f.c.SetSchedules([]Schedule{good, {ID: "bad", Spec: "nope", JobName: "j"}}); !errors.Is(err, ErrMalformedSpec) {
		t.Errorf("a list with a bad spec: %v", err)
	}
	if err := f.c.SetSchedules([]Schedule{good, good}); !errors.Is(err, ErrMalformedSchedule) {
		t.Errorf("an ID twice: %v", err)
	}
	if _, err := f.c.Schedule("good"); !errors.Is(err, ErrScheduleNotFound) {
		t.Errorf("a refused list wrote %q: %v", "good", err)
	}
	for _, err := range []error{f.c.DeleteSchedule("nope"), f.c.PauseSchedule("nope"), f.c.ResumeSchedule("nope"), errOf(f.c.RunScheduleNow("nope"))} {
		if !errors.Is(err, ErrScheduleNotFound) {
			t.Errorf("a control of a missing schedule: %v, want ErrScheduleNotFound", err)
		}
	}
}

func errOf(_ *Job, err error) error { return err }

// json64 is a large integer as ParseArgs keeps it.
func json64(n uint64) interface{} {
	a, _ := ParseArgs(fmt.Sprintf(`{"n":%d}`, n))
	return a["n"]
}

// mustDef encodes a schedule as setSchedules takes it.
func mustDef(t *testing.T, s Schedule, now time.Time) rdb.ScheduleSet {
	def, cr, err := s.check()
	if err != nil {
		t.Fatal(err)
	}
	next, due := firstTick(s.ID, cr, def.jitter, now)
	return rdb.ScheduleSet{Id: s.ID, Rec: (&scheduleRecord{next: next, def: *def}).encode(), Next: next, Due: due}
}

func TestScheduleFiresEachTickOnceAtItsTime(t *testing.T) {
	f := newSchedFixture(t)
	t0 := utc(t, "2024-01-01 00:00:30")
	f.set(t0, Schedule{ID: "every-minute", Spec: "0 * * * * *", JobName: "tick"})
	if n := f.fire(t0.Add(29 * time.Second)); n != 0 || len(f.jobs("tick", "")) != 0 {
		t.Fatalf("fired before its time: %d claimed", n)
	}
	f.fire(t0.Add(30 * time.Second))
	f.fire(t0.Add(30 * time.Second)) // again at the same time: nothing more
	got := f.jobs("tick", "")
	if len(got) != 1 || got[0].ScheduleID != "every-minute" || got[0].Tick != utc(t, "2024-01-01 00:01:00").Unix() || got[0].Name != "tick" {
		t.Fatalf("jobs: %+v", got)
	}
	in := f.info("every-minute")
	if in.LastTick != got[0].Tick || in.NextTick != got[0].Tick+60 {
		t.Errorf("after a tick: %+v", in)
	}

	// Many firers at once, as many pools would: each tick once.
	var wg sync.WaitGroup
	at := t0.Add(90 * time.Second)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n, _, err := fireSchedules(context.Background(), f.st, at.Unix(), f.log)
				if err != nil {
					t.Error(err)
				}
				if n == 0 || err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	if got := f.ticks("tick"); len(got) != 2 || got[1] != "2024-01-01 00:02:00" {
		t.Errorf("ticks: %q", got)
	}
	// A claim whose commit never comes (its pool died) holds the schedule until its lease ends;
	// then another claim fires it, once.
	_, _, claims, err := f.st.ClaimSchedules(context.Background(), t0.Add(150*time.Second).Unix(), scheduleLease, 10, 10)
	if err != nil || len(claims) != 1 {
		t.Fatalf("claim: %v, %v", claims, err)
	}
	if n := f.fire(t0.Add(150*time.Second + (scheduleLease-1)*time.Second)); n != 0 {
		t.Errorf("claimed again within the lease: %d", n)
	}
	f.fire(t0.Add(150*time.Second + scheduleLease*time.Second))
	// The dead claim's commit, arriving late, finds the record changed and does nothing.
	late, _ := planClaim(&claims[0], t0.Add(150*time.Second).Unix(), f.log)
	if res, err := f.st.CommitSchedules(context.Background(), t0.Add(150*time.Second).Unix(), []rdb.ScheduleCommit{late}); err != nil || res.Stale != 1 || res.Committed != 0 {
		t.Errorf("a late commit: %+v, %v", res, err)
	}
	if got := f.ticks("tick"); len(got) != 3 || got[2] != "2024-01-01 00:03:00" {
		t.Errorf("ticks: %q", got)
	}
}

func TestScheduleUpsertNeverRepeatsATick(t *testing.T) {
	f := newSchedFixture(t)
	t0 := utc(t, "2024-01-01 08:59:00")
	s := Schedule{ID: "s", Spec: "0 0 9 * * *", JobName: "j"}
	f.set(t0, s)
	f.set(t0.Add(30*time.Second), s) // a second deploy: unchanged
	f.fire(utc(t, "2024-01-01 09:00:00"))
	// Deploys after the tick, with the same definition and with one that also names 9:00: no second
	// job for the 9:00 tick, whatever the caller's clock says.
	f.set(t0, s)
	s2 := s
	s2.Spec, s2.Args = "0 0 9,10 * * *", Q{"v": 2}
	f.set(t0, s2)
	in := f.info("s")
	if in.NextTick != utc(t, "2024-01-01 10:00:00").Unix() || in.LastTick != utc(t, "2024-01-01 09:00:00").Unix() {
		t.Errorf("replaced: %+v", in)
	}
	f.fire(utc(t, "2024-01-01 09:00:00"))
	f.fire(utc(t, "2024-01-01 10:00:00"))
	got := f.jobs("j", "")
	if len(got) != 2 || got[0].Tick != utc(t, "2024-01-01 09:00:00").Unix() || got[1].Tick != utc(t, "2024-01-01 10:00:00").Unix() ||
		got[0].Args != nil || got[1].Args["v"] != 2.0 {
		t.Errorf("jobs: %+v", got)
	}
	// A pause survives a deploy that changes the definition.
	if err := f.c.PauseSchedule("s"); err != nil {
		t.Fatal(err)
	}
	s2.Args = Q{"v": 3}
	f.set(utc(t, "2024-01-01 10:30:00"), s2)
	if in := f.info("s"); !in.Paused || in.NextTick != 0 {
		t.Errorf("after a deploy, paused: %+v", in)
	}
	if n := f.fire(utc(t, "2024-01-02 11:00:00")); n != 0 || len(f.jobs("j", "")) != 2 {
		t.Errorf("a paused schedule fired")
	}
}

func TestSchedulePauseResumeDeleteRunNow(t *testing.T) {
	f := newSchedFixture(t)
	t0 := utc(t, "2024-01-01 00:00:00")
	f.set(t0, Schedule{ID: "p", Spec: "0 0 * * * *", JobName: "j", Args: Q{"a": "b"}},
		Schedule{ID: "d", Spec: "0 0 * * * *", JobName: "j"})
	if err := f.c.PauseSchedule("p"); err != nil {
		t.Fatal(err)
	}
	if err := f.c.PauseSchedule("p"); err != nil {
		t.Fatal("pausing twice:", err)
	}
	if err := f.c.DeleteSchedule("d"); err != nil {
		t.Fatal(err)
	}
	if err := f.c.DeleteSchedule("d"); !errors.Is(err, ErrScheduleNotFound) {
		t.Errorf("deleting twice: %v", err)
	}
	f.fire(utc(t, "2024-01-01 03:00:00"))
	if got := f.jobs("j", ""); len(got) != 0 {
		t.Fatalf("paused or deleted schedules fired: %+v", got)
	}
	// Resumed at 03:30: the ticks that fell while it was paused are not enqueued.
	if err := f.c.resumeSchedule("p", utc(t, "2024-01-01 03:30:00")); err != nil {
		t.Fatal(err)
	}
	if err := f.c.resumeSchedule("p", utc(t, "2024-01-01 03:40:00")); err != nil {
		t.Fatal("resuming twice:", err)
	}
	if in := f.info("p"); in.Paused || in.NextTick != utc(t, "2024-01-01 04:00:00").Unix() {
		t.Errorf("resumed: %+v", in)
	}
	job, err := f.c.runScheduleNow("p", utc(t, "2024-01-01 03:45:00"))
	if err != nil || job.ScheduleID != "p" || job.Tick != utc(t, "2024-01-01 03:45:00").Unix() || job.Args["a"] != "b" {
		t.Fatalf("run now: %+v, %v", job, err)
	}
	if in := f.info("p"); in.NextTick != utc(t, "2024-01-01 04:00:00").Unix() || in.LastTick != 0 {
		t.Errorf("a run now changed the ticks: %+v", in)
	}
	f.fire(utc(t, "2024-01-01 04:00:00"))
	if got := f.ticks("j"); strings.Join(got, ",") != "2024-01-01 03:45:00,2024-01-01 04:00:00" {
		t.Errorf("ticks: %q", got)
	}
	// The deleted schedule left nothing in the due index.
	if n := rInt(t, f.pool, "ZCARD", f.st.Ks.ScheduleBucket(rdb.ScheduleBucket("d"))); n != 0 && rInt(t, f.pool, "ZSCORE", f.st.Ks.ScheduleBucket(rdb.ScheduleBucket("d")), "d") != 0 {
		t.Errorf("deleted schedule still indexed")
	}
}

func TestScheduleKeyedJobsAndJitter(t *testing.T) {
	f := newSchedFixture(t)
	t0 := utc(t, "2024-01-01 00:00:00")
	f.set(t0, Schedule{ID: "k", Spec: "0 0 9 * * *", JobName: "sync", Key: "acme", Jitter: time.Hour})
	in := f.info("k")
	tick := utc(t, "2024-01-01 09:00:00").Unix()
	if in.NextTick != tick || in.NextRun != tick+jitterOf("k", tick, 3600) {
		t.Fatalf("jitter: %+v", in)
	}
	if in.NextRun == tick {
		t.Log("the jitter of this tick happens to be 0")
	}
	f.fire(time.Unix(in.NextRun-1, 0))
	if got := f.jobs("sync", "acme"); len(got) != 0 {
		t.Fatalf("fired before its jitter")
	}
	f.fire(time.Unix(in.NextRun, 0))
	got := f.jobs("sync", "acme")
	if len(got) != 1 || got[0].Key != "acme" || got[0].Tick != tick {
		t.Fatalf("keyed job: %+v", got)
	}
	// The key has a turn: a pool serving it would take the job.
	if n := rInt(t, f.pool, "ZCARD", f.st.Ks.KeyedReady("sync")); n != 1 {
		t.Errorf("the key has no turn: %d", n)
	}
}

func TestScheduleMissedTicks(t *testing.T) {
	f := newSchedFixture(t)
	f.set(utc(t, "2024-01-01 00:00:30"), Schedule{ID: "skip", Spec: "0 0 * * * *", JobName: "skip"},
		Schedule{ID: "latest", Spec: "0 0 * * * *", JobName: "latest", Missed: MissedRunLatest},
		Schedule{ID: "minutely", Spec: "0 * * * * *", JobName: "minutely"})
	// Every pool was stopped from 00:00:30 to 02:05: the 01:00 tick is skipped under both policies
	// (a later one is due), the 02:00 one is missed (5 minutes late).
	f.fire(utc(t, "2024-01-01 02:05:00"))
	if got := f.ticks("skip"); len(got) != 0 {
		t.Errorf("skip: %q", got)
	}
	if got := f.ticks("latest"); strings.Join(got, ",") != "2024-01-01 02:00:00" {
		t.Errorf("run latest: %q", got)
	}
	// A minutely schedule's latest tick is never a minute late: it goes on from it.
	if got := f.ticks("minutely"); strings.Join(got, ",") != "2024-01-01 02:05:00" {
		t.Errorf("minutely: %q", got)
	}
	// Late within the grace, a tick fires under both policies; past it, only under MissedRunLatest.
	f.fire(utc(t, "2024-01-01 03:00:00").Add(MissedTickAfter))
	f.fire(utc(t, "2024-01-01 04:00:01").Add(MissedTickAfter))
	if got := strings.Join(f.ticks("skip"), ","); got != "2024-01-01 03:00:00" {
		t.Errorf("skip: %s", got)
	}
	if got := strings.Join(f.ticks("latest"), ","); got != "2024-01-01 02:00:00,2024-01-01 03:00:00,2024-01-01 04:00:00" {
		t.Errorf("run latest: %s", got)
	}
	// Each goes on from its next tick.
	f.fire(utc(t, "2024-01-01 05:00:00"))
	if got := f.ticks("skip"); len(got) != 2 || got[1] != "2024-01-01 05:00:00" {
		t.Errorf("skip, after: %q", got)
	}
}

func TestScheduleTimeZonesAndDST(t *testing.T) {
	f := newSchedFixture(t)
	f.set(utc(t, "2024-03-29 00:00:00"),
		Schedule{ID: "berlin-230", Spec: "0 30 2 * * *", Location: "Europe/Berlin", JobName: "b230"},
		Schedule{ID: "berlin-half", Spec: "0 */30 * * * *", Location: "Europe/Berlin", JobName: "half"},
		Schedule{ID: "ny-9", Spec: "0 0 9 * * *", Location: "America/New_York", JobName: "ny"})
	// A pool fires every 10 minutes through both of Berlin's changes of 2024 (and New York's).
	step := func(from, to string) {
		for at := utc(t, from); !at.After(utc(t, to)); at = at.Add(10 * time.Minute) {
			f.fire(at)
		}
	}
	step("2024-03-29 00:00:00", "2024-04-01 14:00:00")
	if got := strings.Join(f.ticks("b230"), ","); got != "2024-03-29 01:30:00,2024-03-30 01:30:00,2024-03-31 01:00:00,2024-04-01 00:30:00" {
		t.Errorf("02:30 Berlin around the skipped hour: %s", got)
	}
	var spring []string
	for _, tk := range f.ticks("half") {
		if tk >= "2024-03-31 00:00:00" && tk <= "2024-03-31 02:00:00" {
			spring = append(spring, tk)
		}
	}
	if got := strings.Join(spring, ","); got != "2024-03-31 00:00:00,2024-03-31 00:30:00,2024-03-31 01:00:00,2024-03-31 01:30:00,2024-03-31 02:00:00" {
		t.Errorf("every half hour in Berlin around the skipped hour: %s", got)
	}
	if got := strings.Join(f.ticks("ny"), ","); got != "2024-03-29 13:00:00,2024-03-30 13:00:00,2024-03-31 13:00:00,2024-04-01 13:00:00" {
		t.Errorf("9:00 New York: %s", got)
	}
	rdo(t, f.pool, "DEL", f.ns+":jobs:b230", f.ns+":jobs:half")
	// Autumn: set again on the 25th (unchanged: the schedules go on), the clocks go back on the 27th.
	f.set(utc(t, "2024-10-25 00:00:00"),
		Schedule{ID: "berlin-230", Spec: "0 30 2 * * *", Location: "Europe/Berlin", JobName: "b230"},
		Schedule{ID: "berlin-half", Spec: "0 */30 * * * *", Location: "Europe/Berlin", JobName: "half"})
	step("2024-10-26 00:00:00", "2024-10-28 12:00:00")
	b230 := f.ticks("b230")
	if got := strings.Join(b230[len(b230)-3:], ","); got != "2024-10-26 00:30:00,2024-10-27 00:30:00,2024-10-28 01:30:00" {
		t.Errorf("02:30 Berlin around the repeated hour: %s (all: %q)", got, b230)
	}
	var autumn []string
	for _, tk := range f.ticks("half") {
		if tk >= "2024-10-27 00:00:00" && tk <= "2024-10-27 02:00:00" {
			autumn = append(autumn, tk)
		}
	}
	if got := strings.Join(autumn, ","); got != "2024-10-27 00:00:00,2024-10-27 00:30:00,2024-10-27 01:00:00,2024-10-27 01:30:00,2024-10-27 02:00:00" {
		t.Errorf("every half hour in Berlin around the repeated hour: %s", got)
	}
}

func TestScheduleDamagedRecordsAreSkipped(t *testing.T) {
	f := newSchedFixture(t)
	t0 := utc(t, "2024-01-01 00:00:00")
	var list []Schedule
	for i := range 20 {
		list = append(list, Schedule{ID: fmt.Sprint("s", i), Spec: "0 0 * * * *", JobName: "j"})
	}
	f.set(t0, list...)
	h, top := f.st.Ks.Schedules(), f.st.Ks.SchedulesDue()
	due := utc(t, "2024-01-01 01:00:00").Unix()
	damage := map[string]string{
		"s3": "not json",
		"s4": `[1,1704070800,0,0,"nope","","j","",0,0,null]`,                 // a spec no pool reads
		"s5": `[1,1704070800,0,0,"0 0 * * * *","","j:lock","",0,0,null]`,     // a job name no job has
		"s6": `[1,1704070800,0,0,"0 0 * * * *","","j","",0,0,[1,2]]`,         // args not an object
		"s7": `[2,1704070800,0,0,"0 0 * * * *","","j","",0,0,null]`,          // a format to come
		"s8": `[1, 1704070800,0,0,"0 0 * * * *","","j","",0,0,null]`,         // a head the scripts cannot read
		"s9": `[1,1704070800,0,0,"0 0 * * * *","Mars/Base","j","",0,0,null]`, // a zone no pool knows
	}
	for id, rec := range damage {
		rdo(t, f.pool, "HSET", h, id, rec)
	}
	// An index entry without a record, and a bucket key of another type.
	rdo(t, f.pool, "ZADD", f.st.Ks.ScheduleBucket(rdb.ScheduleBucket("ghost")), due, "ghost")
	rdo(t, f.pool, "ZADD", top, due, rdb.ScheduleBucket("ghost"))
	rdo(t, f.pool, "SET", f.st.Ks.ScheduleBucket(16383), "x")
	rdo(t, f.pool, "ZADD", top, due, 16383)

	f.fire(utc(t, "2024-01-01 01:00:00"))
	got := map[string]bool{}
	for _, j := range f.jobs("j", "") {
		got[j.ScheduleID] = true
	}
	for _, s := range list {
		if _, bad := damage[s.ID]; bad == got[s.ID] {
			t.Errorf("%s: fired %v", s.ID, got[s.ID])
		}
	}
	logs := f.logged()
	for _, want := range []string{"schedule_id=s3", "schedule_id=s4", "schedule_id=s5", "schedule_id=s6", "schedule_id=s7", "schedule_id=s8",
		"schedule_id=s9", "schedule_id=ghost", "bucket=16383"} {
		if !strings.Contains(logs, want) {
			t.Errorf("no log naming %s:\n%s", want, logs)
		}
	}
	// The damaged records are left for inspection, out of the index (but the one whose zone this
	// machine lacks, tried again in a minute).
	for id := range damage {
		in := f.info(id)
		if (in.Damaged == "") != (id == "s4" || id == "s5" || id == "s9") {
			t.Errorf("%s: Damaged %q", id, in.Damaged)
		}
		score, _ := redis.Int64(rdo(t, f.pool, "ZSCORE", f.st.Ks.ScheduleBucket(rdb.ScheduleBucket(id)), id), nil)
		if (score != 0) != (id == "s9") {
			t.Errorf("%s: index score %d", id, score)
		}
	}
	if err := f.c.PauseSchedule("s8"); !errors.Is(err, ErrDamagedSchedule) {
		t.Errorf("pausing a damaged record: %v", err)
	}
	if _, err := f.c.RunScheduleNow("s3"); !errors.Is(err, ErrDamagedSchedule) {
		t.Errorf("running a damaged record: %v", err)
	}
	// Setting a damaged schedule repairs it; the others fire on.
	f.set(utc(t, "2024-01-01 01:10:00"), Schedule{ID: "s3", Spec: "0 0 * * * *", JobName: "j"})
	f.fire(utc(t, "2024-01-01 02:00:00"))
	n := 0
	for _, j := range f.jobs("j", "") {
		if j.Tick == utc(t, "2024-01-01 02:00:00").Unix() {
			n++
		}
	}
	if n != 14 {
		t.Errorf("%d schedules fired at 02:00, want 14", n)
	}
}

func TestSchedulesListsPagesAndBothKinds(t *testing.T) {
	f := newSchedFixture(t)
	var list []Schedule
	for i := range 300 {
		list = append(list, Schedule{ID: fmt.Sprintf("cust-%03d", i), Spec: "@hourly", JobName: "j"})
	}
	list = append(list, Schedule{ID: "other*[x]", Spec: "@daily", JobName: "j"})
	f.set(time.Now(), list...)
	wp := NewWorkerPool(struct{}{}, 1, f.ns, f.pool)
	wp.Job("j", func(*Job) error { return nil }).PeriodicallyEnqueue("0 0 0 * * *", "j")
	wp.Start()
	defer wp.Stop()

	seen := map[string]int{}
	periodic := 0
	q := ScheduleQuery{Count: 50}
	for pages := 0; ; pages++ {
		page, err := f.c.Schedules(q)
		if err != nil {
			t.Fatal(err)
		}
		if page.Stored != 301 {
			t.Errorf("stored: %d", page.Stored)
		}
		for _, s := range page.Schedules {
			if s.Periodic {
				periodic++
				if s.ID != "periodic:j:0 0 0 * * *" || s.NextTick == 0 || len(s.WorkerPoolIDs) != 1 {
					t.Errorf("periodic: %+v", s)
				}
				continue
			}
			seen[s.ID]++
			if s.NextTick == 0 {
				t.Errorf("%s: no next tick", s.ID)
			}
		}
		if page.Next == "" {
			break
		}
		if pages > 100 {
			t.Fatal("no end")
		}
		q.Cursor = page.Next
	}
	if len(seen) != 301 || periodic != 1 {
		t.Errorf("%d schedules, %d periodic", len(seen), periodic)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s listed %d times", id, n)
		}
	}
	page, err := f.c.Schedules(ScheduleQuery{Prefix: "other*[", Count: 1000, StoredOnly: true})
	if err != nil || len(page.Schedules) != 1 || page.Schedules[0].ID != "other*[x]" {
		t.Errorf("by prefix: %+v, %v", page, err)
	}
	page, err = f.c.Schedules(ScheduleQuery{Prefix: "cust-29", Count: 1000})
	var ids []string
	for _, s := range page.Schedules {
		ids = append(ids, s.ID)
	}
	sort.Strings(ids)
	if err != nil || len(ids) != 10 || ids[0] != "cust-290" {
		t.Errorf("by prefix: %q, %v", ids, err)
	}
	for _, bad := range []string{"x", "-1", "1e3", " 5"} {
		if _, err := f.c.Schedules(ScheduleQuery{Cursor: bad}); !errors.Is(err, ErrMalformedSchedule) {
			t.Errorf("cursor %q: %v, want ErrMalformedSchedule", bad, err)
		}
	}
}

// TestSchedulesFireFromPools runs pools on the server's clock: each of several pools fires the
// schedules of the namespace, and each tick is enqueued once.
func TestSchedulesFireFromPools(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	var mu sync.Mutex
	runs := map[string]int{}
	var pools []*WorkerPool
	for range 3 {
		wp := NewWorkerPoolWithOptions(struct{}{}, 2, ns, pool, WorkerPoolOptions{HeartbeatInterval: time.Second})
		wp.Job("tick", func(j *Job) error {
			mu.Lock()
			runs[fmt.Sprint(j.ScheduleID, "@", j.Tick)]++
			mu.Unlock()
			return nil
		})
		wp.Start()
		pools = append(pools, wp)
	}
	c := NewClient(ns, pool)
	var list []Schedule
	for i := range 50 {
		list = append(list, Schedule{ID: fmt.Sprint("every-second-", i), Spec: "* * * * * *", JobName: "tick"})
	}
	if err := c.SetSchedules(list); err != nil {
		t.Fatal(err)
	}
	ticks := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(runs)
	}
	eventually(t, 30*time.Second, "150 ticks run", func() bool { return ticks() >= 150 })
	for _, s := range list {
		if err := c.DeleteSchedule(s.ID); err != nil {
			t.Fatal(err)
		}
	}
	for _, wp := range pools {
		wp.Drain()
		wp.Stop()
	}
	mu.Lock()
	defer mu.Unlock()
	for k, n := range runs {
		if n != 1 {
			t.Errorf("%s ran %d times", k, n)
		}
	}
}

// TestScheduleLayoutAsDocumented holds docs/redis-layout.md's "Schedules" to the code: its record
// decodes as the table says, and its bucket and jitter are what another program computes from the
// formulas given (zlib's CRC-32 of the ID modulo 16384; FNV-1a of the ID, a zero byte and the tick).
func TestScheduleLayoutAsDocumented(t *testing.T) {
	rec := `[1,1715583600,1714978800,0,"0 0 9 * * MON","Europe/Berlin","send_report","customer-1234",30,1,{"customer":1234}]`
	doc, err := os.ReadFile("docs/redis-layout.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), rec) {
		t.Fatal("the documented record is not the one tested")
	}
	r, err := decodeScheduleRecord([]byte(rec))
	if err != nil {
		t.Fatal(err)
	}
	want := scheduleDef{spec: "0 0 9 * * MON", zone: "Europe/Berlin", job: "send_report", key: "customer-1234", jitter: 30,
		missed: MissedRunLatest, args: []byte(`{"customer":1234}`)}
	if r.next != 1715583600 || r.last != 1714978800 || r.paused || fmt.Sprint(r.def) != fmt.Sprint(want) {
		t.Errorf("decoded %+v", r)
	}
	if string(r.encode()) != rec {
		t.Errorf("encoded back as %s", r.encode())
	}
	if b := rdb.ScheduleBucket("customer-1234"); b != 14203 { // zlib.crc32(b"customer-1234") % 16384
		t.Errorf("bucket %d", b)
	}
	h := uint64(14695981039346656037)
	for _, c := range []byte("customer-1234\x001715583600") {
		h = (h ^ uint64(c)) * 1099511628211
	}
	if j := jitterOf("customer-1234", 1715583600, 30); j != int64(h%30) {
		t.Errorf("jitter %d, want %d", j, h%30)
	}
}

// A tick whose job cannot be queued, because its queue key (or a keyed state key of its job name)
// holds another type, is left due again in a minute with a logged error; the other schedules of the
// same commit fire. Once the key is repaired, the tick is enqueued once.
func TestScheduleTickRefusedByAKeyOfAnotherType(t *testing.T) {
	f := newSchedFixture(t)
	at := time.Date(2026, 3, 2, 8, 59, 0, 0, time.UTC)
	f.set(at,
		Schedule{ID: "plain-bad", Spec: "0 0 9 * * *", JobName: "plainbad"},
		Schedule{ID: "key-bad", Spec: "0 0 9 * * *", JobName: "keyed", Key: "bad"},
		Schedule{ID: "name-bad", Spec: "0 0 9 * * *", JobName: "namebad", Key: "k"},
		Schedule{ID: "key-good", Spec: "0 0 9 * * *", JobName: "keyed", Key: "good"},
		Schedule{ID: "plain-good", Spec: "0 0 9 * * *", JobName: "plaingood"},
	)
	rdo(t, f.pool, "SET", f.st.Ks.Jobs("plainbad"), "x")
	limitKeys(t, f.pool, f.ns, "keyed") // keys' own queues: the lane needs none
	rdo(t, f.pool, "SET", f.st.Ks.KeyedQueue("keyed", "bad"), "x")
	rdo(t, f.pool, "SET", f.st.Ks.KeyedReady("namebad"), "x")
	due := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	f.fire(due)
	if n := len(f.jobs("keyed", "good")); n != 1 {
		t.Errorf("key-good: %d jobs, want 1", n)
	}
	if n := len(f.jobs("plaingood", "")); n != 1 {
		t.Errorf("plain-good: %d jobs, want 1", n)
	}
	for _, id := range []string{"plain-bad", "key-bad", "name-bad"} {
		if in := f.info(id); in.LastTick != 0 {
			t.Errorf("%s: last tick %d, want none while its key holds another type", id, in.LastTick)
		}
	}
	if !strings.Contains(f.logged(), "holds another Redis type") {
		t.Errorf("no error logged for the refused ticks: %s", f.logged())
	}
	for _, k := range []string{f.st.Ks.Jobs("plainbad"), f.st.Ks.KeyedQueue("keyed", "bad"), f.st.Ks.KeyedReady("namebad")} {
		rdo(t, f.pool, "DEL", k)
	}
	// Due again a minute after the refusal: still within MissedTickAfter of the tick.
	f.fire(due.Add(MissedTickAfter))
	if n := len(f.jobs("plainbad", "")); n != 1 {
		t.Errorf("plain-bad after the repair: %d jobs, want 1", n)
	}
	if n := len(f.jobs("keyed", "bad")); n != 1 {
		t.Errorf("key-bad after the repair: %d jobs, want 1", n)
	}
	if n := len(f.jobs("namebad", "k")); n != 1 {
		t.Errorf("name-bad after the repair: %d jobs, want 1", n)
	}
}

// A commit carries a bucket's schedules in one run, under its claim's token: a schedule of the bucket
// changed, paused or deleted since the claim makes the whole run stale, and the bucket due again at
// its earliest schedule, so that the next claim fires them as they now are: the changed one with its
// new args, the paused and deleted ones not at all. Two ticks for one key both queue behind it.
func TestScheduleCommitOfOneBucket(t *testing.T) {
	f := newSchedFixture(t)
	var ids []string
	bucket := rdb.ScheduleBucket("same-0")
	for i := 0; len(ids) < 6; i++ {
		if id := fmt.Sprintf("same-%d", i); rdb.ScheduleBucket(id) == bucket {
			ids = append(ids, id)
		}
	}
	t0 := utc(t, "2024-01-01 08:59:00")
	list := []Schedule{
		{ID: ids[0], Spec: "0 0 9 * * *", JobName: "sync", Key: "shared"},
		{ID: ids[1], Spec: "0 0 9 * * *", JobName: "sync", Key: "shared"},
		{ID: ids[2], Spec: "0 0 9 * * *", JobName: "sync", Key: "other"},
		{ID: ids[3], Spec: "0 0 9 * * *", JobName: "plain"},
		{ID: ids[4], Spec: "0 30 9 * * *", JobName: "plain"},
		{ID: ids[5], Spec: "0 0 9 * * *", JobName: "gone"},
	}
	f.set(t0, list...)
	at := utc(t, "2024-01-01 09:00:00").Unix()
	claim := func(want int) []rdb.ScheduleClaim {
		t.Helper()
		_, _, claims, err := f.st.ClaimSchedules(context.Background(), at, scheduleLease, 100, 100)
		if err != nil || len(claims) != want {
			t.Fatalf("claim: %+v, %v", claims, err)
		}
		for _, c := range claims {
			if c.Bucket != strconv.Itoa(bucket) || c.Rec == nil || c.Token == "" {
				t.Fatalf("claim %+v: want bucket %d, the record and the claim's token", c, bucket)
			}
		}
		return claims
	}
	commit := func(claims []rdb.ScheduleClaim) rdb.CommitResult {
		t.Helper()
		var commits []rdb.ScheduleCommit
		for i := range claims {
			if c, ok := planClaim(&claims[i], at, f.log); ok {
				commits = append(commits, c)
			}
		}
		res, err := f.st.CommitSchedules(context.Background(), at, commits)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// Between the claim and the commit, each change alone: one schedule is given other args, one is
	// paused, one deleted. Nothing is enqueued or written, and the bucket is due again at once.
	changes := []func(){
		func() {
			changed := list[2]
			changed.Args = Q{"v": 2}
			f.set(t0.Add(30*time.Second), changed)
		},
		func() {
			if err := f.c.PauseSchedule(list[3].ID); err != nil {
				t.Fatal(err)
			}
		},
		func() {
			if err := f.c.DeleteSchedule(list[5].ID); err != nil {
				t.Fatal(err)
			}
		},
	}
	for i, change := range changes {
		claims := claim([]int{5, 5, 4}[i]) // the schedule paused before is not claimed again
		change()
		if res := commit(claims); res.Committed != 0 || res.Stale != int64(len(claims)) {
			t.Fatalf("change %d: commit %+v, want all %d stale", i, res, len(claims))
		}
		if n := len(f.jobs("sync", "shared")) + len(f.jobs("plain", "")) + len(f.jobs("gone", "")); n != 0 {
			t.Fatalf("change %d: %d jobs enqueued by a stale commit", i, n)
		}
		if got := rInt(t, f.pool, "ZSCORE", f.st.Ks.SchedulesDue(), strconv.Itoa(bucket)); got != at {
			t.Errorf("change %d: the bucket's score %d, want %d", i, got, at)
		}
	}
	if rec, err := f.st.ScheduleRecord(context.Background(), list[5].ID); err != nil || rec != nil {
		t.Errorf("the deleted schedule's record: %q, %v", rec, err)
	}
	// The next claim fires them as they now are, in one run.
	if res := commit(claim(3)); res.Committed != 3 || res.Stale != 0 {
		t.Fatalf("commit: %+v", res)
	}
	if got := f.jobs("sync", "shared"); len(got) != 2 || got[0].ScheduleID == got[1].ScheduleID {
		t.Errorf("the shared key's jobs: %+v", got)
	}
	if n := rKeyBacklog(t, f.pool, f.ns, "sync", "shared"); n != 2 {
		t.Errorf("the shared key counts %d jobs waiting, want 2", n)
	}
	if got := f.jobs("sync", "other"); len(got) != 1 || got[0].Args["v"] != float64(2) {
		t.Errorf("the changed schedule's jobs: %+v", got)
	}
	if n := len(f.jobs("plain", "")) + len(f.jobs("gone", "")); n != 0 {
		t.Errorf("the paused or deleted schedule fired: %d jobs", n)
	}
	if rec, err := f.st.ScheduleRecord(context.Background(), list[5].ID); err != nil || rec != nil {
		t.Errorf("the deleted schedule's record: %q, %v", rec, err)
	}
	// The bucket's score ends the claim's lease with the earliest of its schedules: the 9:30 one.
	if got := rInt(t, f.pool, "ZSCORE", f.st.Ks.SchedulesDue(), strconv.Itoa(bucket)); got != at+30*60 {
		t.Errorf("the bucket's score %d, want %d", got, at+30*60)
	}
}

// A claim that finds an index entry without a record plans its removal from the index; a schedule of
// that ID created before the commit takes the claim's token away, so the commit does not remove the
// new schedule's entry, and the schedule fires. Schedules new to the index take no token: a claim of
// their bucket commits.
func TestScheduleCreatedOverAClaimedGhostFires(t *testing.T) {
	f := newSchedFixture(t)
	t0 := utc(t, "2024-01-01 08:59:00")
	at := utc(t, "2024-01-01 09:00:00").Unix()
	b := rdb.ScheduleBucket("ghost")
	var other string
	for i := 0; other == ""; i++ {
		if id := fmt.Sprintf("other-%d", i); rdb.ScheduleBucket(id) == b {
			other = id
		}
	}
	rdo(t, f.pool, "ZADD", f.st.Ks.ScheduleBucket(b), at, "ghost")
	rdo(t, f.pool, "ZADD", f.st.Ks.SchedulesDue(), at, b)
	commitClaims := func() rdb.CommitResult {
		t.Helper()
		_, _, claims, err := f.st.ClaimSchedules(context.Background(), at, scheduleLease, 100, 100)
		if err != nil || len(claims) != 1 || claims[0].Id != "ghost" || claims[0].Rec != nil {
			t.Fatalf("claim: %+v, %v", claims, err)
		}
		// Meanwhile: a schedule new to the index in the same bucket, then the ghost's own.
		f.set(t0, Schedule{ID: other, Spec: "0 0 10 * * *", JobName: "j"})
		score, _ := rdo(t, f.pool, "ZSCORE", f.st.Ks.SchedulesDue(), strconv.Itoa(b)).([]byte)
		if got, err1 := strconv.ParseFloat(string(score), 64); err1 != nil || strconv.FormatFloat(got, 'f', 6, 64) != claims[0].Token {
			t.Fatalf("the bucket's score %q after a new schedule, want the claim's token %q", score, claims[0].Token)
		}
		c, ok := planClaim(&claims[0], at, f.log)
		if !ok || c.Due != -1 {
			t.Fatalf("plan: %+v, %v", c, ok)
		}
		// Due after the claim's lease, so that the bucket's score is not lowered below the token.
		f.set(t0, Schedule{ID: "ghost", Spec: "0 30 9 * * *", JobName: "j"})
		res, err := f.st.CommitSchedules(context.Background(), at, []rdb.ScheduleCommit{c})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := commitClaims(); res.Committed != 0 || res.Stale != 1 {
		t.Fatalf("commit: %+v, want the ghost's stale", res)
	}
	if n := rInt(t, f.pool, "ZSCORE", f.st.Ks.ScheduleBucket(b), "ghost"); n != at+30*60 {
		t.Errorf("the new schedule's due score %d, want %d", n, at+30*60)
	}
	f.fire(time.Unix(at+30*60, 0))
	if got := f.jobs("j", ""); len(got) != 1 || got[0].ScheduleID != "ghost" {
		t.Errorf("jobs: %+v, want the ghost schedule's tick", got)
	}
}

// A firing loop's commit carries its next claim in one round trip, and Redis runs them in that order:
// the claim sees the commit's writes. Here the commit puts its schedule back in the index, due at
// once, so the claim that goes with it takes it again, with the schedule due in another bucket.
func TestScheduleCommitGoesWithTheNextClaim(t *testing.T) {
	f := newSchedFixture(t)
	t0 := utc(t, "2024-01-01 08:59:00")
	f.set(t0, Schedule{ID: "first", Spec: "0 0 9 * * *", JobName: "j"})
	at := utc(t, "2024-01-01 09:00:00").Unix()
	_, _, claims, err := f.st.ClaimSchedules(context.Background(), at, scheduleLease, 100, 100)
	if err != nil || len(claims) != 1 {
		t.Fatalf("claim: %+v, %v", claims, err)
	}
	// Set once the first is claimed: the next claim takes it.
	f.set(t0, Schedule{ID: "second", Spec: "0 0 9 * * *", JobName: "j"})
	// The commit script known to the server first: one it lacks is refused and sent again after the
	// claim went through (which CommitAndClaim allows), and this test is about the order.
	if _, err := f.st.CommitSchedules(context.Background(), at, nil); err != nil {
		t.Fatal(err)
	}
	again := rdb.ScheduleCommit{Claim: &claims[0], Due: at}
	res, _, _, next, err := f.st.CommitAndClaim(context.Background(), at, []rdb.ScheduleCommit{again}, at, scheduleLease, 100, 100)
	if err != nil || res.Committed != 1 {
		t.Fatalf("commit: %+v, %v", res, err)
	}
	var ids []string
	for _, c := range next {
		ids = append(ids, c.Id)
	}
	sort.Strings(ids)
	if fmt.Sprint(ids) != "[first second]" {
		t.Errorf("the claim with the commit took %v, want [first second]", ids)
	}
}

// A tick of a key whose one job waits in the lane moves that job to the key's queue first, so the
// key's jobs stay in order: the job enqueued before the tick runs before it.
func TestScheduleTickOfAKeyWithALaneJob(t *testing.T) {
	f := newSchedFixture(t)
	t0 := utc(t, "2024-01-01 00:00:00")
	f.set(t0, Schedule{ID: "k", Spec: "0 0 9 * * *", JobName: "sync", Key: "acme"})
	first, err := NewEnqueuer(f.ns, f.pool).EnqueueWith("sync", nil, EnqueueOptions{Key: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	if n := rInt(t, f.pool, "HEXISTS", f.ns+":keyed:sync:lane", "acme"); n != 1 {
		t.Fatalf("the key's first job is not in the lane")
	}
	f.fire(utc(t, "2024-01-01 09:00:00"))
	queued := rStrings(t, f.pool, "LRANGE", f.st.Ks.KeyedQueue("sync", "acme"), 0, -1)
	if len(queued) != 2 || !strings.Contains(queued[1], first.ID) || !strings.Contains(queued[0], `"schedule_id":"k"`) {
		t.Fatalf("the key's queue %v, want its enqueued job at the tail and the tick's at the head", queued)
	}
	// The commit gets the tick's job as its lane member ("<key>\n<payload>"): the queue holds the job.
	if tick, err := decodeJob([]byte(queued[0])); err != nil || tick.Key != "acme" || queued[0][0] != '{' {
		t.Fatalf("the tick's job in the key's queue %q: %v, want the job of key acme", queued[0], err)
	}
	if n := rInt(t, f.pool, "HEXISTS", f.ns+":keyed:sync:lane", "acme") + rInt(t, f.pool, "ZCARD", f.st.Ks.KeyedReady("sync")); n != 1 {
		t.Fatalf("the key is still in the lane, or ready holds more than the key's turn")
	}
	if n := rKeyBacklog(t, f.pool, f.ns, "sync", "acme"); n != 2 {
		t.Fatalf("the key has %d jobs waiting, want 2", n)
	}
}
