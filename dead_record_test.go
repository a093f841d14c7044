package work

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/workqueue/work/internal/rdb"
)

// The original bytes of a payload that could not be decoded, as a dead record keeps them: raw_text
// when they are UTF-8, raw_base64 otherwise, and raw_payload (base64) in records of earlier versions.

// jsonStringMinimal encodes s as a JSON string escaping only what JSON requires of these test
// strings, which hold no control characters: the quote and the backslash.
func jsonStringMinimal(t *testing.T, s string) string {
	t.Helper()
	for _, r := range s {
		if r < 0x20 || r == '\u2028' || r == '\u2029' {
			t.Fatalf("test string %q holds %U, which this helper does not escape", s, r)
		}
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

func TestADeadLetteredPayloadReadsAsItselfInRedis(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	text := `{"name":"x", broken é <b>&amp; \ 日本`
	binary := "\xff\xfe{\"name\":\"x\"} \xc3"
	queue := bhvKey(ns, "jobs", "x")
	rdo(t, pool, "LPUSH", queue, text, binary)
	wp := bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).Job("x", func(j *Job) error {
		t.Errorf("a malformed payload reached the handler: %+v", j)
		return nil
	}))
	eventually(t, 10*time.Second, "both payloads dead-lettered", func() bool {
		return rInt(t, pool, "ZCARD", bhvKey(ns, "dead")) == 2
	})
	wp.Stop()

	// What redis-cli ZRANGE prints: the members as they are stored.
	members := rStrings(t, pool, "ZRANGE", bhvKey(ns, "dead"), 0, -1)
	textField := `"raw_text":` + jsonStringMinimal(t, text)
	binaryField := `"raw_base64":"` + base64.StdEncoding.EncodeToString([]byte(binary)) + `"`
	var sawText, sawBinary bool
	for _, m := range members {
		switch {
		case strings.Contains(m, textField):
			sawText = true
			if strings.Contains(m, `"raw_base64"`) || strings.Contains(m, `"raw_payload"`) {
				t.Errorf("record %s holds the text a second time", m)
			}
		case strings.Contains(m, binaryField):
			sawBinary = true
			if strings.Contains(m, `"raw_text"`) || strings.Contains(m, `"raw_payload"`) {
				t.Errorf("record %s holds the bytes a second time", m)
			}
		default:
			t.Errorf("record %s holds neither %s nor %s", m, textField, binaryField)
		}
	}
	if !sawText || !sawBinary {
		t.Errorf("records %q: text found %v, bytes found %v", members, sawText, sawBinary)
	}

	// A retry puts back exactly the bytes that were pushed.
	if err := NewClient(ns, pool).RetryAllDeadJobs(); err != nil {
		t.Fatal(err)
	}
	got := rStrings(t, pool, "LRANGE", queue, 0, -1)
	sort.Strings(got)
	want := []string{text, binary}
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("queue after the retry %q, want %q", got, want)
	}
}

// deadRecordForms are hand-written records of each form, and the bytes each holds.
var deadRecordForms = []struct {
	form, record, raw string
}{
	{"raw_text", `{"name":"mail","id":"r1","t":3,"args":null,"err":"malformed job payload","failed_at":9,"raw_text":"{\"name\":\"mail\",broken é <b>"}`,
		`{"name":"mail",broken é <b>`},
	{"raw_base64", `{"name":"mail","id":"r1","t":3,"args":null,"err":"malformed job payload","failed_at":9,"raw_base64":"` +
		base64.StdEncoding.EncodeToString([]byte("\xff{broken")) + `"}`,
		"\xff{broken"},
	// As earlier versions wrote them.
	{"raw_payload", `{"name":"mail","id":"r1","t":3,"args":null,"err":"malformed job payload","failed_at":9,"raw_payload":"` +
		base64.StdEncoding.EncodeToString([]byte(`{"name":"mail",broken é`)) + `"}`,
		`{"name":"mail",broken é`},
}

func TestClientReadsAndRetriesEveryFormOfADeadRecord(t *testing.T) {
	t.Parallel()
	for _, tc := range deadRecordForms {
		t.Run(tc.form, func(t *testing.T) {
			t.Parallel()
			c, pool, ks := newTestClient(t)
			rdo(t, pool, "ZADD", ks.Dead(), 9, tc.record)

			jobs, total, err := c.DeadJobs(1)
			if err != nil || total != 1 || len(jobs) != 1 {
				t.Fatalf("DeadJobs: %v, %d, %v", jobs, total, err)
			}
			if j := jobs[0]; string(j.Raw) != tc.raw || j.ID != "r1" || j.Name != "mail" || j.DiedAt != 9 {
				t.Errorf("DeadJobs: %+v, Raw %q; want Raw %q", j.Job, j.Raw, tc.raw)
			}
			loc, err := c.FindJob("r1")
			if err != nil || loc.State != JobStateDead || string(loc.Job.Raw) != tc.raw || loc.Payload != tc.record {
				t.Errorf("FindJob: %+v (%v)", loc, err)
			}
			if err := c.RetryDeadJob(9, "r1"); err != nil {
				t.Fatal(err)
			}
			if got := rStrings(t, pool, "LRANGE", ks.Jobs("mail"), 0, -1); !reflect.DeepEqual(got, []string{tc.raw}) {
				t.Errorf("queue %q, want the original bytes %q", got, tc.raw)
			}
		})
	}
}

func TestDecodingADeadRecordReadsEachForm(t *testing.T) {
	for _, tc := range deadRecordForms {
		var j Job
		if err := json.Unmarshal([]byte(tc.record), &j); err != nil || string(j.Raw) != tc.raw {
			t.Errorf("%s: Raw %q (%v), want %q", tc.form, j.Raw, err, tc.raw)
		}
	}
	// A record written by hand may carry more than one form: raw_text comes first, then raw_base64,
	// then raw_payload; an empty one counts as absent.
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	for rec, want := range map[string]string{
		`{"raw_text":"t","raw_base64":"` + b64("b") + `","raw_payload":"` + b64("p") + `"}`: "t",
		`{"raw_text":"","raw_base64":"` + b64("b") + `","raw_payload":"` + b64("p") + `"}`:  "b",
		`{"raw_text":null,"raw_base64":"","raw_payload":"` + b64("p") + `"}`:                "p",
		`{"raw_text":"","raw_base64":"","raw_payload":""}`:                                  "",
	} {
		var j Job
		if err := json.Unmarshal([]byte(rec), &j); err != nil || string(j.Raw) != want || (want == "" && j.Raw != nil) {
			t.Errorf("%s: Raw %#v (%v), want %q", rec, j.Raw, err, want)
		}
	}
	for _, rec := range []string{`{"raw_base64":"not base64!"}`, `{"raw_payload":"not base64!"}`, `{"raw_text":7}`} {
		var j Job
		if err := json.Unmarshal([]byte(rec), &j); err == nil {
			t.Errorf("%s decoded: Raw %q", rec, j.Raw)
		}
	}
}

func TestADeadRecordIsWrittenAsTextOnlyWhenItsBytesAreUTF8(t *testing.T) {
	for _, tc := range []struct {
		raw, want string
	}{
		{`{"name":"x", <b>&</b> é \ "`, `"raw_text":"{\"name\":\"x\", <b>&</b> é \\ \""`},
		{"line\nbreak\ttab\x00nul", `"raw_text":"line\nbreak\ttab\u0000nul"`},
		{"\xff\xfe", `"raw_base64":"//4="`},
		{"é\xc3", `"raw_base64":"` + base64.StdEncoding.EncodeToString([]byte("é\xc3")) + `"`},
	} {
		op := rdb.FinishOp{Payload: deadLetterRecord("x", []byte(tc.raw), fmt.Errorf("malformed job payload"), nowEpochSeconds())}
		rec := string(op.Payload)
		if !strings.Contains(rec, tc.want) {
			t.Errorf("record of %q: %s; want it to hold %s", tc.raw, rec, tc.want)
		}
		if strings.Count(rec, `"raw_`) != 1 {
			t.Errorf("record of %q: %s; want one raw field", tc.raw, rec)
		}
		j, _ := decodeMember(op.Payload)
		if string(j.Raw) != tc.raw || j.Name != "x" || j.LastErr != "malformed job payload" {
			t.Errorf("record of %q decodes with name %q, err %q, Raw %q", tc.raw, j.Name, j.LastErr, j.Raw)
		}
	}
}

func TestListedJobsAndLocationsShowTheBytesAsRecordsDo(t *testing.T) {
	text := &Job{Name: "x", ID: "i", EnqueuedAt: 1, Fails: 1, LastErr: "e", FailedAt: 2, Raw: []byte(`{"x": <é>`)}
	bin := &Job{Name: "x", ID: "i", EnqueuedAt: 1, Fails: 1, LastErr: "e", FailedAt: 2, Raw: []byte("\xff\x00")}
	const head = `"name":"x","id":"i","t":1,"args":null,"fails":1,"err":"e","failed_at":2`
	const asText = `"raw_text":"{\"x\": \u003cé\u003e"` // json.Marshal escapes < and > around the record
	const asBase64 = `"raw_base64":"/wA="`
	for _, tc := range []struct {
		v    interface{}
		want string
	}{
		{&ScheduledJob{RunAt: 9, Job: text}, `{"run_at":9,` + head + `,` + asText + `}`},
		{&RetryJob{RetryAt: 9, Job: text}, `{"retry_at":9,` + head + `,` + asText + `}`},
		{DeadJob{DiedAt: 9, Job: text}, `{"died_at":9,` + head + `,` + asText + `}`},
		{&DeadJob{DiedAt: 9, Job: bin}, `{"died_at":9,` + head + `,` + asBase64 + `}`},
		{&DeadJob{DiedAt: 9}, `{"died_at":9}`},
		{&JobLocation{State: JobStateDead, Score: 9, Job: text, Decoded: true, Payload: "p"},
			`{"state":"dead","score":9,"job":{` + head + `,` + asText + `},"decoded":true,"payload":"p"}`},
		{JobLocation{State: JobStateQueued, Job: bin, Payload: "p"},
			`{"state":"queued","job":{` + head + `,` + asBase64 + `},"decoded":false,"payload":"p"}`},
		// A bare Job has no encoder of its own: json.Marshal writes Raw as base64, which reads back.
		{text, `{` + head + `,"raw_base64":"` + base64.StdEncoding.EncodeToString(text.Raw) + `"}`},
	} {
		b, err := json.Marshal(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("json.Marshal(%T)\n got %s\nwant %s", tc.v, b, tc.want)
		}
	}
	// Each decodes back to the same bytes.
	for _, j := range []*Job{text, bin} {
		var d DeadJob
		var l JobLocation
		var bare Job
		for _, rt := range []struct {
			in, out interface{}
			raw     func() []byte
		}{
			{&DeadJob{DiedAt: 9, Job: j}, &d, func() []byte { return d.Raw }},
			{&JobLocation{Job: j}, &l, func() []byte { return l.Job.Raw }},
			{j, &bare, func() []byte { return bare.Raw }},
		} {
			b, err := json.Marshal(rt.in)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, rt.out); err != nil {
				t.Fatalf("%s: %v", b, err)
			}
			if got := rt.raw(); string(got) != string(j.Raw) {
				t.Errorf("%s read back Raw %q, want %q", b, got, j.Raw)
			}
		}
	}
}

func TestJobLocationJSONHasEveryFieldOfTheStruct(t *testing.T) {
	// JobLocation's encoder lists the fields itself; this keeps it in step with the struct.
	var want []string
	typ := reflect.TypeOf(JobLocation{})
	for i := 0; i < typ.NumField(); i++ {
		want = append(want, strings.Split(typ.Field(i).Tag.Get("json"), ",")[0])
	}
	b, err := json.Marshal(JobLocation{State: "s", Score: 1, PoolID: "p", Job: &Job{}, Decoded: true, Payload: "x"})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var got []string
	for k := range m {
		got = append(got, k)
	}
	sort.Strings(got)
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("JobLocation JSON keys %q, want %q", got, want)
	}
}
