package work

// Cron specs in a time zone: the one parser of specs (for PeriodicallyEnqueue and for schedules) and
// of zone names, and when a schedule's ticks fall, daylight saving time included. The ticks are
// computed here, in Go; the scripts only compare and store them.

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robfig/cron/v3"
)

// cronParser reads specs as gocraft/work did (robfig/cron v1): seconds first, day of week optional,
// so a five-field spec is "second minute hour day-of-month month". Reading it minutes-first would
// silently change existing schedules.
var cronParser = cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.DowOptional | cron.Descriptor)

func parseCronSpec(spec string) (sched cron.Schedule, err error) {
	// robfig/cron v3.0.1 slices out of range on a "TZ=" prefix with nothing after it: an error,
	// like any other spec it cannot read.
	defer func() {
		if r := recover(); r != nil {
			sched, err = nil, fmt.Errorf("cannot parse %q", spec)
		}
	}()
	s, err := cronParser.Parse(spec)
	if err != nil {
		return nil, err
	}
	return alignSchedule(s), nil
}

// maxSpecLen bounds a spec's length: the longest lists of values fit.
const maxSpecLen = 256

// Cron is a spec in a time zone, as ParseCron read it: it says when its ticks fall. It is safe for
// concurrent use.
//
// The spec's fields are matched against the local time of the zone. Where daylight saving time
// changes the clock, a spec that names its hours (such as "0 30 2 * * *") behaves as cron users
// expect: a local time that the change skips fires once, at the first instant after the skipped
// span (2:30 fires at 3:00 when clocks jump from 2:00 to 3:00), and a local time that happens twice
// fires once, the first time. A spec that matches every hour (such as "0 */15 * * * *") runs by the
// clock instead, as cron runs such jobs: through both passes of a repeated hour, and not in the
// skipped one. "@every" specs fall on multiples of their interval since the Unix epoch, whatever the
// zone.
type Cron struct {
	spec  string
	loc   *time.Location
	sched cron.Schedule      // alignedEvery or neverSchedule: no wall clock involved
	wall  *cron.SpecSchedule // the fields, matched against local time written as UTC
	clock bool               // the spec matches every hour: it runs by the clock through changes

	// last holds the last second Next was asked about and its answer (-1: none): the schedules set in
	// one call, most of which share a few specs, all ask about the same second.
	last atomic.Pointer[[2]int64]
}

// ParseCron reads a spec as WorkerPool.PeriodicallyEnqueue reads it ("second minute hour
// day-of-month month [day-of-week]", or a descriptor: "@daily", "@every 1h"...) in the time zone
// location (see ParseLocation; "" is UTC). A spec with a "TZ=" or "CRON_TZ=" prefix is refused: the
// zone goes in location; so is one longer than 256 bytes. It returns an error wrapping ErrMalformedSpec for a spec it cannot read or
// that never fires, and one wrapping ErrUnknownLocation for an unknown zone.
func ParseCron(spec, location string) (*Cron, error) {
	loc, err := ParseLocation(location)
	if err != nil {
		return nil, err
	}
	if len(spec) > maxSpecLen {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrMalformedSpec, len(spec), maxSpecLen)
	}
	if t := strings.TrimSpace(spec); strings.HasPrefix(t, "TZ=") || strings.HasPrefix(t, "CRON_TZ=") {
		return nil, fmt.Errorf("%w %q: give the time zone as the location, not in the spec", ErrMalformedSpec, spec)
	}
	s, err := parseCronSpec(spec)
	if err != nil {
		return nil, fmt.Errorf("%w %q: %v", ErrMalformedSpec, spec, err)
	}
	c := &Cron{spec: spec, loc: loc}
	switch s := s.(type) {
	case *cron.SpecSchedule:
		w := *s
		w.Location = time.UTC
		c.wall = &w
		const allHours = 1<<24 - 1
		c.clock = w.Hour&allHours == allHours
	default:
		c.sched = s
	}
	if c.Next(time.Now()).IsZero() {
		return nil, fmt.Errorf("%w %q: it never fires", ErrMalformedSpec, spec)
	}
	return c, nil
}

// String returns the spec as given to ParseCron.
func (c *Cron) String() string { return c.spec }

// Location returns the time zone the spec is read in.
func (c *Cron) Location() *time.Location { return c.loc }

// Next returns the first tick strictly after t, to the second, in the cron's zone; the zero time
// when there is none within five years.
func (c *Cron) Next(t time.Time) time.Time {
	if c.sched != nil {
		n := c.sched.Next(t)
		if n.IsZero() {
			return n
		}
		return n.In(c.loc)
	}
	at := t.Unix()
	if m := c.last.Load(); m != nil && m[0] == at {
		if m[1] == -1 {
			return time.Time{}
		}
		return time.Unix(m[1], 0).In(c.loc)
	}
	n := c.nextWall(time.Unix(at, 0))
	next := int64(-1)
	if !n.IsZero() {
		next = n.Unix()
	}
	c.last.Store(&[2]int64{at, next})
	return n
}

// wallOf returns the local time of instant t in the cron's zone, written as a UTC time: a clock
// without changes, on which the spec's fields are matched.
func (c *Cron) wallOf(t time.Time) time.Time {
	_, off := t.In(c.loc).Zone()
	return time.Unix(t.Unix()+int64(off), 0).UTC()
}

// nextWall finds the first tick after a, zone period by zone period (a span of one UTC offset, as
// time.Time.ZoneBounds gives it). hw is the local time after which a matching time counts: the
// latest local time reached so far, so that a spec with fixed hours fires each local time once; a
// spec that runs by the clock lowers it to the start of each period instead.
func (c *Cron) nextWall(a time.Time) time.Time {
	hw := c.wallOf(a)
	if !c.clock {
		// Within a repeated span after clocks went back, the local times up to where they were
		// before the change were reached already.
		t := a.In(c.loc)
		if start, _ := t.ZoneBounds(); !start.IsZero() {
			if before := c.wallOf(start.Add(-time.Second)); before.After(hw) {
				hw = before
			}
		}
	}
	at := a
	for range 64 { // a zone changes offset twice a year at most; 64 periods is past any match
		w := c.wall.Next(hw)
		if w.IsZero() {
			return w
		}
		t := at.In(c.loc)
		_, off := t.Zone()
		_, end := t.ZoneBounds()
		cand := time.Unix(w.Unix()-int64(off), 0)
		if end.IsZero() || cand.Before(end) {
			return cand.In(c.loc)
		}
		// The match lies past this period: in the next one, or in the local times a change skips.
		startWall := c.wallOf(end)
		if w.Before(startWall) {
			if !c.clock {
				return end.In(c.loc) // a skipped local time fires at the first instant after the skip
			}
			hw = startWall.Add(-time.Second)
		} else if c.clock {
			hw = startWall.Add(-time.Second)
		}
		at = end
	}
	return time.Time{}
}

// latest returns the latest tick in [from, to], given that from is a tick at or before to: a binary
// search for the last second whose next tick is still at or before to, which needs Next only.
func (c *Cron) latest(from, to time.Time) time.Time {
	lo, hi := from.Unix()-1, to.Unix() // Next(lo) <= to holds; find the largest such second
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if n := c.Next(time.Unix(mid, 0)); !n.IsZero() && !n.After(to) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return c.Next(time.Unix(lo, 0))
}

// locations caches the zones ParseLocation loaded: time.LoadLocation reads the zone database on every
// call.
var locations sync.Map // name -> *time.Location

// ParseLocation returns the time zone of an IANA name such as "Europe/Berlin"; "" and "UTC" are UTC.
// "Local" is refused, as is any name the zone database does not know, with an error wrapping
// ErrUnknownLocation: the pools that fire a schedule may run on machines in other zones. A program
// on a machine without a zone database can embed one by importing time/tzdata.
func ParseLocation(name string) (*time.Location, error) {
	if name == "" || name == "UTC" {
		return time.UTC, nil
	}
	if l, ok := locations.Load(name); ok {
		return l.(*time.Location), nil
	}
	if name == "Local" {
		return nil, fmt.Errorf("%w %q: name the zone (the pools may run in other zones)", ErrUnknownLocation, name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("%w %q: %v", ErrUnknownLocation, name, err)
	}
	locations.Store(name, loc)
	return loc, nil
}
