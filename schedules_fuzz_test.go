package work

import (
	"bytes"
	"io"
	"log/slog"
	"regexp"
	"testing"
	"time"

	"github.com/workqueue/work/internal/rdb"
)

// luaScheduleHead mirrors the pattern of scheduleHead in lua/lib/schedules.lua.
var luaScheduleHead = regexp.MustCompile(`^\[1,([0-9]+),([0-9]+),([01]),`)

// FuzzScheduleRecord: decoding a record from Redis, which any program may have written, never panics;
// a record it accepts is one the scripts read the same way (their head pattern matches), and encodes
// to a record that decodes to the same; reading it for the Client and planning its tick never
// panic, and a planned record decodes.
func FuzzScheduleRecord(f *testing.F) {
	f.Add([]byte(`[1,1715583600,0,0,"0 0 9 * * MON","Europe/Berlin","send_report","customer-1",30,1,{"customer":1}]`), int64(1715583600))
	f.Add([]byte(`[1,1704070800,1704067200,1,"@every 1h","","j","",0,0,null]`), int64(1704070800))
	f.Add([]byte(`[1,60,0,0,"* * * * * *","","j","k\u00e9\"",86400,0,{"a":[1,{"b":null}],"n":12345678901234567890}]`), int64(100000))
	f.Add([]byte(`[1,1704070800,0,0,"0 0 * * * *","Mars/Base","j","",0,0,null]`), int64(1704070800))
	f.Add([]byte(`[1, 1,0,0,"@daily","","j","",0,0,null]`), int64(0))
	f.Add([]byte(`[1,01,0,0,"@daily","","j","",0,0,null]`), int64(0))
	f.Add([]byte(`[1,-0,0,0,"@daily","","j","",0,0,null]`), int64(0))
	f.Add([]byte(`[1,1,0,2,"@daily","","j","",0,0,null]`), int64(0))
	f.Add([]byte(`[2,1,0,0,"@daily","","j","",0,0,null]`), int64(0))
	f.Add([]byte(`[1,1,0,0,"@daily","","j","",0,0,[]]`), int64(0))
	f.Add([]byte(`[1,1,0,0,"@daily","","j","",0,0,{}] `), int64(0))
	f.Add([]byte(`not json`), int64(0))
	f.Add([]byte(``), int64(0))
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	f.Fuzz(func(t *testing.T, rec []byte, now int64) {
		if len(rec) > maxFuzzInput {
			t.Skip("input too large")
		}
		orig := append([]byte(nil), rec...)
		r, err := decodeScheduleRecord(rec)
		if !bytes.Equal(rec, orig) {
			t.Fatal("decodeScheduleRecord modified its input")
		}
		in := scheduleInfo("id", rec)
		if (err != nil) != (in.Damaged != "") && err != nil {
			t.Fatalf("the Client reads a record refused (%v) as undamaged", err)
		}
		if now < 0 || now > maxScheduleTime {
			now = 1
		}
		// Planning its tick (the claim of any record) never panics, and what it writes decodes.
		cl := rdb.ScheduleClaim{Bucket: "1", Id: "id", Rec: rec}
		if c, ok := planClaim(&cl, now, logger); ok && c.Rec != nil {
			if _, err := decodeScheduleRecord(c.Rec); err != nil {
				t.Fatalf("planned record %q does not decode: %v", c.Rec, err)
			}
			if c.Due >= 0 && c.Due < now && c.Payload == nil && c.Due != now+60 {
				// A schedule put back in the index is due now at the earliest.
				t.Fatalf("planned due %d before now %d", c.Due, now)
			}
		}
		if err != nil {
			if r != nil {
				t.Fatal("a record with its error")
			}
			return
		}
		m := luaScheduleHead.FindSubmatch(rec)
		if m == nil || string(m[1]) != itoa(r.next) || string(m[2]) != itoa(r.last) || (string(m[3]) == "1") != r.paused {
			t.Fatalf("the scripts read the head of %q otherwise than Go (%+v)", rec, r)
		}
		again := r.encode()
		r2, err := decodeScheduleRecord(again)
		if err != nil {
			t.Fatalf("re-encoded %q does not decode: %v", again, err)
		}
		if !bytes.Equal(r2.encode(), again) {
			t.Fatalf("encode is not a fixed point: %q then %q", again, r2.encode())
		}
		if r2.next != r.next || r2.last != r.last || r2.paused != r.paused || r2.def.spec != r.def.spec || r2.def.zone != r.def.zone ||
			r2.def.job != r.def.job || r2.def.key != r.def.key || r2.def.jitter != r.def.jitter || r2.def.missed != r.def.missed {
			t.Fatalf("re-encoding changed %+v into %+v", r, r2)
		}
		_ = time.Unix(r.next, 0)
	})
}

func itoa(n int64) string { return string(appendInt(nil, n)) }

func appendInt(b []byte, n int64) []byte {
	if n == 0 {
		return append(b, '0')
	}
	var d [20]byte
	i := len(d)
	for n > 0 {
		i--
		d[i] = byte('0' + n%10)
		n /= 10
	}
	return append(b, d[i:]...)
}
