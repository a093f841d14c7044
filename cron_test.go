package work

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

func mustCron(t *testing.T, spec, zone string) *Cron {
	t.Helper()
	c, err := ParseCron(spec, zone)
	if err != nil {
		t.Fatalf("ParseCron(%q, %q): %v", spec, zone, err)
	}
	return c
}

// utc reads "2006-01-02 15:04:05" as UTC.
func utc(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.DateTime, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// ticks lists a cron's ticks after from, up to to.
func ticks(c *Cron, from, to time.Time) []time.Time {
	var out []time.Time
	for t := c.Next(from); !t.IsZero() && !t.After(to); t = c.Next(t) {
		out = append(out, t.UTC())
		if len(out) > 100000 {
			break
		}
	}
	return out
}

func TestCronDaylightSavingTime(t *testing.T) {
	// Berlin: on 2024-03-31 clocks jump from 02:00 CET to 03:00 CEST (01:00 UTC); on 2024-10-27 they
	// go back from 03:00 CEST to 02:00 CET (01:00 UTC), so 02:00-02:59 happens twice.
	for _, tc := range []struct {
		spec     string
		from, to string
		want     []string // UTC
	}{
		// A fixed time in the skipped hour fires once, at the first instant after the skip.
		{"0 30 2 * * *", "2024-03-30 00:00:00", "2024-04-01 23:00:00",
			[]string{"2024-03-30 01:30:00", "2024-03-31 01:00:00", "2024-04-01 00:30:00"}},
		// Every minute of the skipped hour: one tick at 03:00, then on by the clock.
		{"0 * 2-3 31 3 *", "2024-03-31 00:58:00", "2024-03-31 01:02:00",
			[]string{"2024-03-31 01:00:00", "2024-03-31 01:01:00", "2024-03-31 01:02:00"}},
		// A fixed time in the repeated hour fires once, the first time.
		{"0 30 2 * * *", "2024-10-26 00:00:00", "2024-10-28 23:00:00",
			[]string{"2024-10-26 00:30:00", "2024-10-27 00:30:00", "2024-10-28 01:30:00"}},
		{"0 0,30 2 27 10 *", "2024-10-26 23:00:00", "2024-10-27 03:00:00",
			[]string{"2024-10-27 00:00:00", "2024-10-27 00:30:00"}},
		// A spec that matches every hour runs by the clock: both passes of the repeated hour...
		{"0 */30 * * * *", "2024-10-26 23:45:00", "2024-10-27 02:00:00",
			[]string{"2024-10-27 00:00:00", "2024-10-27 00:30:00", "2024-10-27 01:00:00", "2024-10-27 01:30:00", "2024-10-27 02:00:00"}},
		// ...and none in the skipped one.
		{"0 */30 * * * *", "2024-03-31 00:15:00", "2024-03-31 01:30:00",
			[]string{"2024-03-31 00:30:00", "2024-03-31 01:00:00", "2024-03-31 01:30:00"}},
		{"@daily", "2024-03-30 12:00:00", "2024-04-01 12:00:00", []string{"2024-03-30 23:00:00", "2024-03-31 22:00:00"}},
	} {
		c := mustCron(t, tc.spec, "Europe/Berlin")
		var got []string
		for _, v := range ticks(c, utc(t, tc.from), utc(t, tc.to)) {
			got = append(got, v.Format(time.DateTime))
		}
		if len(got) != len(tc.want) {
			t.Errorf("%q from %s: %q, want %q", tc.spec, tc.from, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%q from %s: %q, want %q", tc.spec, tc.from, got, tc.want)
				break
			}
		}
	}
}

// oracleTicks is the definition Cron.Next implements, checked second by second: a spec that runs by
// the clock ticks at each instant whose local time matches; any other ticks at each instant where the
// local clock reaches, for the first time, a time that matches (a skipped span is reached all at
// once, at its end; a repeated span was reached already).
func oracleTicks(s *cron.SpecSchedule, clock bool, loc *time.Location, from, to time.Time) []time.Time {
	match := func(w time.Time) bool {
		if 1<<uint(w.Second())&s.Second == 0 || 1<<uint(w.Minute())&s.Minute == 0 || 1<<uint(w.Hour())&s.Hour == 0 ||
			1<<uint(w.Month())&s.Month == 0 {
			return false
		}
		// Day of month and day of week, as cron reads them: both must match when either is a star.
		dom, dow := 1<<uint(w.Day())&s.Dom != 0, 1<<uint(w.Weekday())&s.Dow != 0
		if s.Dom&(1<<63) != 0 || s.Dow&(1<<63) != 0 {
			return dom && dow
		}
		return dom || dow
	}
	wall := func(i time.Time) time.Time {
		_, off := i.In(loc).Zone()
		return time.Unix(i.Unix()+int64(off), 0).UTC()
	}
	var out []time.Time
	hw := wall(from)
	for i := from.Add(time.Second); !i.After(to); i = i.Add(time.Second) {
		w := wall(i)
		if clock {
			if match(w) {
				out = append(out, i)
			}
			continue
		}
		if !w.After(hw) {
			continue
		}
		for x := hw.Add(time.Second); !x.After(w); x = x.Add(time.Second) {
			if match(x) {
				out = append(out, i)
				break
			}
		}
		hw = w
	}
	return out
}

func TestCronMatchesItsDefinitionAroundChanges(t *testing.T) {
	zones := map[string][]string{ // zone -> noon (UTC) the day before some of its changes
		"Europe/Berlin":       {"2024-03-30 12:00:00", "2024-10-26 12:00:00"},
		"America/New_York":    {"2024-03-09 12:00:00", "2024-11-02 12:00:00"},
		"Australia/Lord_Howe": {"2024-04-06 12:00:00", "2024-10-05 12:00:00"}, // half-hour changes
		"America/Santiago":    {"2024-04-06 12:00:00", "2024-09-07 12:00:00"}, // changes at midnight
		"Pacific/Apia":        {"2011-12-29 00:00:00"},                        // skipped a whole day
		"Asia/Kolkata":        {"2024-03-30 12:00:00"},                        // no change
	}
	specs := []string{"0 30 2 * * *", "0 0 0 * * *", "0 15,45 1-3 * * *", "0 */20 * * * *", "30 * * * * *",
		"0 0 * * * *", "0 0 0 * * SAT,SUN", "0 30 23 * * *", "0 0 12 * * *", "0 */7 0-4 * * *"}
	rng := rand.New(rand.NewPCG(1, 2))
	for zone, days := range zones {
		for _, day := range days {
			from := utc(t, day)
			to := from.Add(48 * time.Hour)
			for _, spec := range specs {
				c := mustCron(t, spec, zone)
				want := oracleTicks(c.wall, c.clock, c.loc, from, to)
				got := ticks(c, from, to)
				if len(got) != len(want) {
					t.Errorf("%s %q from %v: %d ticks, want %d\n got %v\nwant %v", zone, spec, from, len(got), len(want), got, want)
					continue
				}
				for i := range got {
					if !got[i].Equal(want[i]) {
						t.Errorf("%s %q from %v: tick %d is %v, want %v", zone, spec, from, i, got[i], want[i])
						break
					}
				}
				// From any second of the window, Next is the first tick after it (from inside a
				// repeated span too), and latest the last tick at or before it.
				for range 50 {
					at := from.Add(time.Duration(rng.Int64N(int64(to.Sub(from)/time.Second))) * time.Second)
					first, last := time.Time{}, time.Time{}
					for _, w := range want {
						if w.After(at) && first.IsZero() {
							first = w
						}
						if !w.After(at) {
							last = w
						}
					}
					if first.IsZero() {
						continue
					}
					if n := c.Next(at); !n.Equal(first) {
						t.Errorf("%s %q: Next(%v) = %v, want %v", zone, spec, at, n, first)
					}
					if !last.IsZero() && len(want) > 0 {
						if l := c.latest(want[0], at); !l.Equal(last) {
							t.Errorf("%s %q: latest(%v, %v) = %v, want %v", zone, spec, want[0], at, l, last)
						}
					}
				}
			}
		}
	}
}

func TestCronEveryAndZones(t *testing.T) {
	// "@every" falls on multiples of its interval since the epoch, whatever the zone.
	for _, zone := range []string{"", "UTC", "Asia/Kathmandu", "America/New_York"} {
		c := mustCron(t, "@every 90m", zone)
		if n := c.Next(utc(t, "2024-03-10 06:59:59")); !n.Equal(utc(t, "2024-03-10 07:30:00")) {
			t.Errorf("@every 90m in %q: %v", zone, n)
		}
		if c.Location().String() == "" {
			t.Errorf("no location")
		}
	}
	c := mustCron(t, "0 0 9 * * MON", "Asia/Kathmandu") // +05:45
	if n := c.Next(utc(t, "2024-01-01 00:00:00")); !n.Equal(utc(t, "2024-01-01 03:15:00")) || n.Location().String() != "Asia/Kathmandu" {
		t.Errorf("Monday 9:00 in Kathmandu: %v", n)
	}
	if c.String() != "0 0 9 * * MON" {
		t.Errorf("String: %q", c.String())
	}
	// Five fields are seconds first, as PeriodicallyEnqueue reads them.
	if n := mustCron(t, "0 */5 * * *", "").Next(utc(t, "2024-01-01 00:00:00")); !n.Equal(utc(t, "2024-01-01 00:05:00")) {
		t.Errorf("five fields: %v", n)
	}
}

func TestParseCronRefusals(t *testing.T) {
	for _, tc := range []struct {
		spec, zone string
		want       error
	}{
		{"", "", ErrMalformedSpec},
		{"* * *", "", ErrMalformedSpec},
		{"61 * * * * *", "", ErrMalformedSpec},
		{"@sometimes", "", ErrMalformedSpec},
		{"TZ=Europe/Berlin 0 0 9 * * *", "", ErrMalformedSpec},
		{"CRON_TZ=", "", ErrMalformedSpec},
		{"0 0 0 30 2 *", "", ErrMalformedSpec}, // February 30th
		{", * * * * *", "", ErrMalformedSpec},
		{"0 0 9 * * *", "Mars/Olympus", ErrUnknownLocation},
		{"0 0 9 * * *", "Local", ErrUnknownLocation},
		{"0 0 9 * * *", "../../etc/passwd", ErrUnknownLocation},
		{"0 " + strings.Repeat("1,", 200) + "1 * * * *", "", ErrMalformedSpec},
	} {
		if _, err := ParseCron(tc.spec, tc.zone); !errors.Is(err, tc.want) {
			t.Errorf("ParseCron(%q, %q): %v, want %v", tc.spec, tc.zone, err, tc.want)
		}
	}
	if _, err := ParseCron("0 0 0 29 2 *", "Europe/Berlin"); err != nil {
		t.Errorf("February 29th: %v", err)
	}
	if l, err := ParseLocation("Europe/Berlin"); err != nil || l.String() != "Europe/Berlin" {
		t.Errorf("ParseLocation: %v, %v", l, err)
	}
}

// FuzzParseCron: ParseCron never panics; a Cron's ticks from any start are whole seconds, strictly
// increasing, strictly after the start, the same from any second between two ticks, and latest finds
// the last of them before a time, in every zone, across its changes.
func FuzzParseCron(f *testing.F) {
	for _, spec := range []string{"0 30 2 * * *", "0 */20 * * * *", "* * * * * *", "0 0 0 * * SUN", "@daily", "@every 90m",
		"0 15,45 1-3 * * *", "0 0 0 29 2 *", "TZ=UTC @daily", "", "bad"} {
		f.Add(spec, uint8(0), int64(1711846800))
	}
	zones := []string{"", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Pacific/Apia", "Asia/Kolkata", "America/Santiago"}
	f.Fuzz(func(t *testing.T, spec string, zone uint8, start int64) {
		if len(spec) > 256 {
			t.Skip("spec too long to be one")
		}
		c, err := ParseCron(spec, zones[int(zone)%len(zones)])
		if err != nil {
			if !errors.Is(err, ErrMalformedSpec) {
				t.Fatalf("ParseCron(%q): %v, not ErrMalformedSpec", spec, err)
			}
			return
		}
		start = 946684800 + (start%(1<<31)+(1<<31))%(1<<31) // 2000 to 2068
		from := time.Unix(start, 0)
		var ticks []time.Time
		for at := from; len(ticks) < 8; {
			n := c.Next(at)
			if n.IsZero() {
				break
			}
			if !n.After(at) || n.Nanosecond() != 0 {
				t.Fatalf("%q: Next(%v) = %v", spec, at, n)
			}
			ticks = append(ticks, n)
			at = n
		}
		for i := 1; i < len(ticks); i++ {
			mid := ticks[i-1].Add(ticks[i].Sub(ticks[i-1]) / 2).Truncate(time.Second)
			if n := c.Next(mid); !mid.Equal(ticks[i-1]) && !n.Equal(ticks[i]) {
				t.Fatalf("%q: Next(%v) = %v, want %v", spec, mid, n, ticks[i])
			}
			if l := c.latest(ticks[0], ticks[i].Add(-time.Second)); !l.Equal(ticks[i-1]) {
				t.Fatalf("%q: latest before %v = %v, want %v", spec, ticks[i], l, ticks[i-1])
			}
		}
	})
}
