package main

import (
	"sort"
	"strings"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
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

// A burst job taken and not started counts as queued, and so does one started after the started
// count was read; one started before it, or a job of no schedule, does not.
func TestNotStartedByCountsTakenBurstJobs(t *testing.T) {
	r := &schedRecorder{}
	r.reset(1700000000)
	for _, id := range []string{"customer-1000002-digest", "customer-1000004-digest"} {
		if err := r.burstJob(&work.Job{ScheduleID: id, Tick: 1700000000}); err != nil {
			t.Fatal(err)
		}
	}
	entries := [][]byte{
		[]byte("1000001\n" + `{"name":"digest","id":"a","t":1,"key":"1000001","schedule_id":"customer-1000001-digest","tick":1700000000}`),
		[]byte("1000002\n" + `{"name":"digest","id":"b","t":1,"key":"1000002","schedule_id":"customer-1000002-digest","tick":1700000000}`),
		[]byte("1000004\n" + `{"name":"digest","id":"d","t":1,"key":"1000004","schedule_id":"customer-1000004-digest","tick":1700000000}`),
		[]byte("k\n" + `{"name":"digest","id":"c","t":1,"key":"k"}`),
		[]byte("1000003\n" + `{"name":"digest","schedule_id":"customer-1000003`),
	}
	if n := r.notStartedBy(entries, 1); n != 2 {
		t.Fatalf("notStartedBy(1) = %d, want 2 (1000001 never started, 1000004 second)", n)
	}
	if n := r.notStartedBy(entries, 2); n != 1 {
		t.Fatalf("notStartedBy(2) = %d, want 1", n)
	}
}

// The other jobs of the burst carry the time each was due to be sent: their stamps step by the
// pacing interval from the first, whenever the calls themselves ran.
func TestOfferOthersStampsTheTimeDue(t *testing.T) {
	addr, names := testRedisAndNames(t, "offer")
	ns := names[0]
	pool := redigoPool(addr, 4)
	defer pool.Close()
	stop := make(chan struct{})
	time.AfterFunc(200*time.Millisecond, func() { close(stop) })
	sent, errs, lag := offerOthers(work.NewEnqueuer(ns, pool), 500, 3, stop)
	if errs != 0 || sent < 10 || lag < 0 {
		t.Fatalf("sent %d, errors %d, lag %v", sent, errs, lag)
	}
	c := pool.Get()
	defer c.Close()
	var stamps []int64
	for _, name := range trafficNames {
		raw, err := redigo.ByteSlices(c.Do("LRANGE", ns+":jobs:"+name, 0, -1))
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range raw {
			stamps = append(stamps, argsT(b))
		}
		c.Do("DEL", ns+":jobs:"+name)
	}
	if int64(len(stamps)) != sent {
		t.Fatalf("%d jobs queued, %d sent", len(stamps), sent)
	}
	// 500 jobs/s: one due every 2,000 µs, each at its own step (the goroutines stop at different
	// steps, so the last ones may leave gaps).
	sort.Slice(stamps, func(i, j int) bool { return stamps[i] < stamps[j] })
	for i, s := range stamps {
		if d := s - stamps[0]; d%2000 != 0 || (i > 0 && s == stamps[i-1]) {
			t.Fatalf("stamp %d is %d µs after the first: want a step of its own, a multiple of 2,000", i, d)
		}
	}
}
