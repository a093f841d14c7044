package work

import (
	"math"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/workqueue/work/internal/rdb"
)

// checkProgressMessage fails unless msg is safe to store and show: valid UTF-8, no control
// characters, at most MaxProgressMessage bytes.
func checkProgressMessage(t *testing.T, msg string) {
	t.Helper()
	if len(msg) > MaxProgressMessage || !utf8.ValidString(msg) || strings.IndexFunc(msg, unicode.IsControl) >= 0 {
		t.Fatalf("unsafe message %q", msg)
	}
}

// FuzzSetProgress: whatever a handler passes, SetProgress never panics, records a fraction within
// 0..1 and a safe message, reports every change it made to the fraction, and a message that was
// safe already is kept as it is.
func FuzzSetProgress(f *testing.F) {
	f.Add(0.5, "halfway")
	f.Add(math.NaN(), "")
	f.Add(math.Inf(-1), "\x00\x1b[31mred")
	f.Add(1e300, strings.Repeat("ü", 300))
	f.Add(math.Copysign(0, -1), "\xff\xfe")
	f.Fuzz(func(t *testing.T, fraction float64, msg string) {
		s := &workerState{job: &Job{}}
		j := &Job{observer: s}
		err := j.SetProgress(fraction, msg)
		if math.IsNaN(fraction) {
			if err == nil || s.progress.At != 0 {
				t.Fatalf("NaN: %v, recorded %+v", err, s.progress)
			}
			return
		}
		p := s.progress
		if p.At == 0 || p.Fraction < 0 || p.Fraction > 1 || math.IsNaN(p.Fraction) {
			t.Fatalf("recorded %+v for %v", p, fraction)
		}
		if (fraction < 0 || fraction > 1) != (err != nil) {
			t.Fatalf("fraction %v: error %v", fraction, err)
		}
		checkProgressMessage(t, p.Message)
		if len(msg) <= MaxProgressMessage && utf8.ValidString(msg) && strings.IndexFunc(msg, func(r rune) bool {
			return unicode.IsControl(r) || r == '\u2028' || r == '\u2029'
		}) < 0 && p.Message != msg {
			t.Fatalf("safe message %q changed to %q", msg, p.Message)
		}
		// What is stored reads back as itself.
		back := parseProgress(rdb.FormatFraction(p.Fraction), p.Message, "1")
		if back == nil || back.Fraction != p.Fraction || back.Message != p.Message {
			t.Fatalf("stored %+v, read back %+v", p, back)
		}
	})
}

// FuzzParseProgress: the progress fields of a record or a worker hash, which any program may write,
// read as nothing or as a fraction within 0..1 with a safe message, never a panic.
func FuzzParseProgress(f *testing.F) {
	f.Add("0.25", "step 1", "1700000000")
	f.Add("", "x", "")
	f.Add("NaN", "", "")
	f.Add("-Inf", "\x07", "-5")
	f.Add("1e999", strings.Repeat("\xc3", 500), "x")
	f.Add("0x1p-2", "", "12")
	f.Fuzz(func(t *testing.T, fraction, msg, at string) {
		p := parseProgress(fraction, msg, at)
		if p == nil {
			return
		}
		if p.Fraction < 0 || p.Fraction > 1 || math.IsNaN(p.Fraction) || p.Percent() < 0 || p.Percent() > 100 {
			t.Fatalf("%q read as %+v", fraction, p)
		}
		checkProgressMessage(t, p.Message)
	})
}
