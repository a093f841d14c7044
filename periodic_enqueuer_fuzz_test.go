package work

import (
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // TZ= specs and the daylight-saving starts resolve alike everywhere
	"unicode/utf8"

	"github.com/robfig/cron/v3"
)

// cronFuzzTicks is how many runs of each schedule the fuzz target follows from each start.
const cronFuzzTicks = 6

// cronFuzzStarts are the fixed starts schedules run from: an ordinary UTC time with a fraction of a
// second, and local times just before daylight-saving changes (an hour repeated, an hour skipped, a
// midnight skipped, a half-hour shift), where cron arithmetic is most fragile.
func cronFuzzStarts(tb testing.TB) []time.Time {
	tb.Helper()
	starts := []time.Time{time.Date(2024, 6, 15, 12, 34, 56, 789_000_000, time.UTC)}
	for _, s := range []struct {
		zone string
		at   [5]int // year, month, day, hour, minute
	}{
		{"America/New_York", [5]int{2024, 11, 3, 0, 59}},
		{"Europe/Berlin", [5]int{2024, 3, 31, 1, 59}},
		{"America/Sao_Paulo", [5]int{2018, 11, 3, 23, 59}},
		{"Australia/Lord_Howe", [5]int{2024, 4, 7, 1, 29}},
	} {
		loc, err := time.LoadLocation(s.zone)
		if err != nil {
			tb.Fatalf("time zone %s: %v", s.zone, err)
		}
		starts = append(starts, time.Date(s.at[0], time.Month(s.at[1]), s.at[2], s.at[3], s.at[4], 30, 0, loc))
	}
	return starts
}

// FuzzCronSpec: parseCronSpec, which PeriodicallyEnqueue validates specs with, never panics; an error
// comes without a schedule; a spec that can never fire for want of a second, minute, hour or month
// says so at once; a schedule's runs from fixed starts are whole seconds, strictly increasing, after
// the start, the same whatever the start between two runs (so every pool and every scheduling round
// computes the same ticks), and the same on a second parse; an "@every" schedule ticks on multiples
// of its interval; a five-field spec is the six-field one with any day of week (gocraft/work's
// reading, seconds first); and the enqueuer's ticks for the coming minutes are those runs, each with
// a deterministic payload.
func FuzzCronSpec(f *testing.F) {
	for _, spec := range []string{
		"* * * * *", "0 */5 * * *", "0 0 * * 1-5", "* * * * * *", "30 */2 * * * *", "0 30 1 * * *",
		"0 0 0 29 2 *", "0 0 0 30 2 *", "0 0 0 31 4,6,9,11 *", "0 0 12 13 * FRI", "0 0 0 L * *",
		"@every 1m", "@every 90s", "@every 1500ms", "@every 0s", "@every -5m", "@every 2562047h",
		"@hourly", "@daily", "@midnight", "@weekly", "@monthly", "@yearly", "@annually", "@reboot",
		"TZ=America/New_York 0 30 1 * * *", "CRON_TZ=Europe/Berlin 0 30 2 * * *", "TZ=UTC @every 1h",
		"", " ", "bad", "* * *", "61 * * * * *", "* * * * * * *", "*/0 * * * *", "@every", "@sometimes",
	} {
		f.Add(spec)
	}
	starts := cronFuzzStarts(f)
	f.Fuzz(func(t *testing.T, spec string) {
		if len(spec) > 256 {
			t.Skip("spec too long to be one")
		}
		sched, err := parseCronSpecNoPanic(t, spec)
		if err != nil {
			if sched != nil {
				t.Fatalf("parseCronSpec(%q) returned a schedule with its error %v", spec, err)
			}
			if err.Error() == "" {
				t.Fatalf("parseCronSpec(%q): an empty error", spec)
			}
			return
		}
		if sched == nil {
			t.Fatalf("parseCronSpec(%q): neither a schedule nor an error", spec)
		}
		switch s := sched.(type) {
		case cron.ConstantDelaySchedule:
			t.Fatalf("parseCronSpec(%q): an unaligned @every schedule", spec)
		case *cron.SpecSchedule:
			// Cron's Next takes seconds to find that such a schedule never fires.
			if s.Second == 0 || s.Minute == 0 || s.Hour == 0 || s.Month == 0 {
				t.Fatalf("parseCronSpec(%q): a cron expression with a field that matches nothing: %+v", spec, s)
			}
		}
		again, err := parseCronSpec(spec)
		if err != nil {
			t.Fatalf("parseCronSpec(%q) failed on a second parse: %v", spec, err)
		}
		var sixFields cron.Schedule
		if fields := strings.Fields(spec); len(fields) == 5 && !strings.HasPrefix(spec, "TZ=") && !strings.HasPrefix(spec, "CRON_TZ=") {
			if sixFields, err = parseCronSpec(spec + " *"); err != nil {
				t.Fatalf("five-field %q parses but not with a sixth field *: %v", spec, err)
			}
		}
		for _, start := range starts {
			runs := checkRuns(t, spec, sched, start)
			if got := nextRuns(again, start); !sameTimes(got, runs) {
				t.Fatalf("%q from %v: runs %v, then %v on a second parse", spec, start, runs, got)
			}
			if sixFields != nil {
				if got := nextRuns(sixFields, start); !sameTimes(got, runs) {
					t.Fatalf("%q from %v: runs %v, but %v with a sixth field *", spec, start, runs, got)
				}
			}
			checkEnqueuerTicks(t, spec, sched, start, runs)
		}
	})
}

// parseCronSpecNoPanic is parseCronSpec, failing the test on a panic (robfig/cron's Parse has
// panicked on some inputs; parseCronSpec turns that into an error).
func parseCronSpecNoPanic(t *testing.T, spec string) (sched cron.Schedule, err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("parseCronSpec(%q) panicked: %v", spec, r)
		}
	}()
	return parseCronSpec(spec)
}

// nextRuns follows up to cronFuzzTicks runs from start; the zero time (a spec that never fires, such
// as February 30th) or a time not after the previous one ends the list.
func nextRuns(s cron.Schedule, start time.Time) []time.Time {
	var runs []time.Time
	for prev := start; len(runs) < cronFuzzTicks; {
		next := s.Next(prev)
		if next.IsZero() || !next.After(prev) {
			break
		}
		runs = append(runs, next)
		prev = next
	}
	return runs
}

// checkRuns checks the runs of s from start and returns them.
func checkRuns(t *testing.T, spec string, s cron.Schedule, start time.Time) []time.Time {
	t.Helper()
	runs := nextRuns(s, start)
	prev := start
	for i, r := range runs {
		if r.Nanosecond() != 0 {
			t.Fatalf("%q from %v: run %v is not on a whole second (ticks are stored as epoch seconds)", spec, start, r)
		}
		// Every start between two runs leads to the later one, unless the clock's offset changes in
		// between (a repeated or skipped local hour).
		if !offsetChanges(s, prev, r) {
			for _, probe := range []time.Time{prev.Add(time.Second), prev.Add(r.Sub(prev) / 2), r.Add(-time.Second)} {
				if probe.Before(prev) || !probe.Before(r) {
					continue
				}
				if got := s.Next(probe); !got.Equal(r) {
					t.Fatalf("%q: runs %v from %v, but the run after %v is %v, not %v", spec, runs, start, probe, got, r)
				}
			}
		}
		prev = runs[i]
	}
	if len(runs) < cronFuzzTicks {
		// Only a cron expression may stop firing, and then for good: after the last run (or from the
		// start) Next answers the zero time.
		switch s.(type) {
		case *cron.SpecSchedule, neverSchedule:
		default:
			t.Fatalf("%q (%T) from %v: only %d runs %v", spec, s, start, len(runs), runs)
		}
		if next := s.Next(prev); !next.IsZero() {
			t.Fatalf("%q from %v: runs %v, then %v, not after %v", spec, start, runs, next, prev)
		}
	}
	if a, ok := s.(alignedEvery); ok {
		d := int64(a.every / time.Second)
		if d < 1 {
			t.Fatalf("%q: an interval of %v", spec, a.every)
		}
		for i, r := range runs {
			if r.Unix()%d != 0 {
				t.Fatalf("%q: run %v is not on a multiple of %ds since the epoch", spec, r, d)
			}
			if i > 0 && r.Unix()-runs[i-1].Unix() != d {
				t.Fatalf("%q: runs %v and %v are not %ds apart", spec, runs[i-1], r, d)
			}
		}
	}
	return runs
}

// offsetChanges reports whether the clock offset of s's time zone changes between a and b.
func offsetChanges(s cron.Schedule, a, b time.Time) bool {
	loc := a.Location()
	switch x := s.(type) {
	case alignedEvery:
		return false // plain epoch arithmetic
	case *cron.SpecSchedule:
		if x.Location != time.Local {
			loc = x.Location
		}
	}
	_, end := a.In(loc).ZoneBounds()
	return !end.IsZero() && !b.Before(end)
}

// checkEnqueuerTicks checks what the periodic enqueuer schedules from start: the runs within its
// horizon, as epoch seconds, with payloads that every pool writes alike.
func checkEnqueuerTicks(t *testing.T, spec string, s cron.Schedule, start time.Time, runs []time.Time) {
	t.Helper()
	ticks := periodicTicks(s, start)
	end := start.Add(periodicHorizon)
	if max := int(periodicHorizon/time.Second) + 1; len(ticks) > max {
		t.Fatalf("%q from %v: %d ticks in %v", spec, start, len(ticks), periodicHorizon)
	}
	for i, e := range ticks {
		if tt := time.Unix(e, 0); !tt.After(start) || tt.After(end) {
			t.Fatalf("%q from %v: tick %v outside (start, start+%v]", spec, start, tt, periodicHorizon)
		}
		if i > 0 && e <= ticks[i-1] {
			t.Fatalf("%q from %v: ticks %v not increasing", spec, start, ticks)
		}
		if i < len(runs) && e != runs[i].Unix() {
			t.Fatalf("%q from %v: ticks %v, but runs %v", spec, start, ticks, runs)
		}
	}
	// Every run within the horizon is a tick.
	for i, r := range runs {
		if !r.After(end) && i >= len(ticks) {
			t.Fatalf("%q from %v: run %v within the horizon, but ticks %v", spec, start, r, ticks)
		}
	}
	if len(ticks) == 0 {
		return
	}
	e := ticks[0]
	job := &Job{Name: "job", ID: periodicJobID("job", spec, e), EnqueuedAt: e}
	raw1, err1 := job.serialize()
	raw2, err2 := job.serialize()
	if err1 != nil || err2 != nil || string(raw1) != string(raw2) {
		t.Fatalf("%q: payloads %q (%v) and %q (%v)", spec, raw1, err1, raw2, err2)
	}
	back, err := decodeJob(raw1)
	if err != nil {
		t.Fatalf("%q: payload %q does not decode: %v", spec, raw1, err)
	}
	// JSON carries invalid UTF-8 as U+FFFD: the ID then differs, but alike in every pool.
	if back.Name != "job" || back.EnqueuedAt != e || (utf8.ValidString(spec) && back.ID != job.ID) {
		t.Fatalf("%q: payload %q decodes to %+v", spec, raw1, back)
	}
}

func sameTimes(a, b []time.Time) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}
