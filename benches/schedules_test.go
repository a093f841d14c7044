package main

import (
	"strings"
	"testing"
	"time"

	"github.com/workqueue/work"
)

// The due schedules' spec names the second asked for, and their first tick is that second.
func TestSpecAtTicksAtTheSecondGiven(t *testing.T) {
	loc, err := time.LoadLocation(schedZone)
	if err != nil {
		t.Skip(err)
	}
	for _, at := range []time.Time{
		time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC),    // a Monday
		time.Date(2026, 3, 29, 0, 59, 59, 0, time.UTC), // 1:59:59 in Berlin, just before the clocks go forward
		time.Date(2026, 11, 27, 23, 30, 7, 0, time.UTC),
	} {
		spec := specAt(at, loc)
		c, err := work.ParseCron(spec, schedZone)
		if err != nil {
			t.Fatalf("specAt(%v) = %q: %v", at, spec, err)
		}
		if next := c.Next(at.Add(-time.Second)); !next.Equal(at) {
			t.Errorf("specAt(%v) = %q ticks at %v", at, spec, next.UTC())
		}
	}
}

// The stored schedules' spec ticks at 9:00 on a weekday whose next tick is days away, so that no
// tick of theirs falls during a run.
func TestStoredSpecTicksDaysAhead(t *testing.T) {
	loc, err := time.LoadLocation(schedZone)
	if err != nil {
		t.Skip(err)
	}
	spec := storedSpec(loc)
	if !strings.HasPrefix(spec, "0 0 9 * * ") {
		t.Fatalf("storedSpec = %q", spec)
	}
	c, err := work.ParseCron(spec, schedZone)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Until(c.Next(time.Now())); d < 48*time.Hour {
		t.Fatalf("storedSpec %q ticks in %v", spec, d)
	}
}

// A schedule of customer i has the customer's number in its ID, key and args.
func TestCustomerSchedule(t *testing.T) {
	s := customerSchedule(23456, "report", "0 0 9 * * MON")
	if s.ID != "customer-1023456-report" || s.Key != "1023456" || s.Args["customer_id"] != 1023456 || s.JobName != "report" || s.Location != schedZone {
		t.Fatalf("customerSchedule = %+v", s)
	}
}
