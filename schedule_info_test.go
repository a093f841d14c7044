package work

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestScheduleInfoStatus(t *testing.T) {
	for _, tc := range []struct {
		in   ScheduleInfo
		want ScheduleStatus
		word string
	}{
		{ScheduleInfo{NextTick: 1}, ScheduleActive, "active"},
		{ScheduleInfo{Paused: true}, SchedulePaused, "paused"},
		{ScheduleInfo{}, ScheduleEnded, "ended"},
		{ScheduleInfo{Damaged: "bad", Paused: true}, ScheduleDamaged, "damaged"},
		{ScheduleInfo{Periodic: true, NextTick: 1}, SchedulePeriodic, "periodic"},
	} {
		if got := tc.in.Status(); got != tc.want || got.String() != tc.word {
			t.Errorf("%+v: %v, want %v", tc.in, got, tc.word)
		}
	}
}

func TestScheduleInfoNextTicksAndZone(t *testing.T) {
	next := utc(t, "2024-03-30 08:00:00").Unix() // 9:00 in Berlin, the day before summer time
	in := &ScheduleInfo{Schedule: Schedule{Spec: "0 0 9 * * *", Location: "Europe/Berlin"}, NextTick: next}
	got := in.NextTicks(3)
	want := []int64{next, utc(t, "2024-03-31 07:00:00").Unix(), utc(t, "2024-04-01 07:00:00").Unix()}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("next ticks %v, want %v", got, want)
	}
	if z := in.Zone(); z.String() != "Europe/Berlin" {
		t.Errorf("zone %v", z)
	}
	for _, none := range []*ScheduleInfo{{Schedule: in.Schedule}, {Schedule: in.Schedule, NextTick: next, Damaged: "x"}} {
		if got := none.NextTicks(3); got == nil || len(got) != 0 {
			t.Errorf("%+v: next ticks %v, want none", none, got)
		}
	}
	for _, loc := range []string{"", "UTC", "Nowhere/Special"} {
		if z := (&ScheduleInfo{Schedule: Schedule{Location: loc}}).Zone(); z != time.UTC {
			t.Errorf("zone of %q: %v, want UTC", loc, z)
		}
	}
}

func TestFindSchedule(t *testing.T) {
	f := newSchedFixture(t)
	f.set(time.Now(), Schedule{ID: "stored", Spec: "@hourly", JobName: "j"})
	wp := NewWorkerPool(struct{}{}, 1, f.ns, f.pool)
	wp.Job("j", func(*Job) error { return nil }).PeriodicallyEnqueue("0 0 0 * * *", "j")
	wp.Start()
	defer wp.Stop()

	if in, err := f.c.FindSchedule("stored"); err != nil || in.ID != "stored" || in.Periodic {
		t.Errorf("stored: %+v, %v", in, err)
	}
	in, err := f.c.FindSchedule("periodic:j:0 0 0 * * *")
	if err != nil || !in.Periodic || in.JobName != "j" || in.NextTick == 0 || in.Status() != SchedulePeriodic {
		t.Errorf("periodic: %+v, %v", in, err)
	}
	if _, err := f.c.FindSchedule("nope"); !errors.Is(err, ErrScheduleNotFound) {
		t.Errorf("unknown: %v", err)
	}
	// A periodic job cannot be changed through the Client, and the error says why.
	err = f.c.PauseSchedule("periodic:j:0 0 0 * * *")
	if !errors.Is(err, ErrScheduleNotFound) || !strings.Contains(err.Error(), "declared in code") {
		t.Errorf("pausing a periodic job: %v", err)
	}
}
