package work

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

// gocraftPayload is a job as gocraft/work writes it to Redis after one failure: every field present,
// the args keys sorted as json.Marshal sorts them.
const gocraftPayload = `{"name":"send_email","id":"5f0c7e6a1b2c3d4e5f607182","t":1588156848,` +
	`"args":{"address":"test@example.com","count":3,"meta":{"depth":{"deeper":[1,2.5,"x",null,true]},"k":"v"},` +
	`"none":null,"ok":true,"ratio":0.5,"tags":["a","b"]},` +
	`"unique":true,"unique_key":"work:unique:send_email:{\"address\":\"test@example.com\"}\n",` +
	`"fails":2,"err":"smtp: 550 \u003cmailbox\u003e unavailable","failed_at":1588156900}`

func mustDecodeJob(t testing.TB, payload string) *Job {
	t.Helper()
	j, err := decodeJob([]byte(payload))
	if err != nil {
		t.Fatalf("decodeJob(%s): %v", payload, err)
	}
	return j
}

func mustSerialize(t testing.TB, j *Job) []byte {
	t.Helper()
	b, err := j.serialize()
	if err != nil {
		t.Fatalf("serialize %+v: %v", j, err)
	}
	return b
}

// exported returns a copy of a job without its unexported bookkeeping, for comparisons.
func exported(j *Job) Job {
	c := *j
	c.raw, c.argError, c.observer = nil, nil, nil
	return c
}

func TestDecodeJobReadsEveryGocraftField(t *testing.T) {
	j := mustDecodeJob(t, gocraftPayload)
	want := Job{
		Name:       "send_email",
		ID:         "5f0c7e6a1b2c3d4e5f607182",
		EnqueuedAt: 1588156848,
		Args: map[string]interface{}{
			"address": "test@example.com",
			"count":   float64(3),
			"meta": map[string]interface{}{
				"depth": map[string]interface{}{"deeper": []interface{}{float64(1), 2.5, "x", nil, true}},
				"k":     "v",
			},
			"none":  nil,
			"ok":    true,
			"ratio": 0.5,
			"tags":  []interface{}{"a", "b"},
		},
		Unique:    true,
		UniqueKey: "work:unique:send_email:{\"address\":\"test@example.com\"}\n",
		Fails:     2,
		LastErr:   "smtp: 550 <mailbox> unavailable",
		FailedAt:  1588156900,
	}
	if got := exported(j); !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded job\n got %#v\nwant %#v", got, want)
	}
	if string(j.raw) != gocraftPayload {
		t.Fatalf("raw = %q, want the payload as given", j.raw)
	}
}

func TestDecodeJobRoundTripsGocraftPayloadByteForByte(t *testing.T) {
	j := mustDecodeJob(t, gocraftPayload)
	out := mustSerialize(t, j)
	if string(out) != gocraftPayload {
		t.Fatalf("serialize(decode(p)) differs from p\n got %s\nwant %s", out, gocraftPayload)
	}
	again := mustDecodeJob(t, string(out))
	if !reflect.DeepEqual(exported(again), exported(j)) {
		t.Fatalf("decode(serialize(job)) != job\n got %#v\nwant %#v", exported(again), exported(j))
	}
}

func TestDecodeJobAcceptsMinimalPayloads(t *testing.T) {
	for _, tc := range []struct {
		payload string
		want    Job
	}{
		{`{"name":"x"}`, Job{Name: "x"}},
		{`{"name":"x","id":"","t":0,"args":null}`, Job{Name: "x"}},
		{`{"name":"x","args":{}}`, Job{Name: "x", Args: map[string]interface{}{}}},
		{" \n\t{\"name\":\"x\",\"id\":\"i\",\"t\":5}\r\n ", Job{Name: "x", ID: "i", EnqueuedAt: 5}},
		// Unknown fields are ignored, as gocraft/work ignores them.
		{`{"name":"x","queue":"q","extra":{"a":[1]}}`, Job{Name: "x"}},
	} {
		j := mustDecodeJob(t, tc.payload)
		if got := exported(j); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("decodeJob(%q)\n got %#v\nwant %#v", tc.payload, got, tc.want)
		}
	}
}

func TestDecodeJobNullArgsGiveNilMap(t *testing.T) {
	j := mustDecodeJob(t, `{"name":"x","id":"a","t":1,"args":null}`)
	if j.Args != nil {
		t.Fatalf("Args = %#v, want nil", j.Args)
	}
	if out := string(mustSerialize(t, j)); out != `{"name":"x","id":"a","t":1,"args":null}` {
		t.Fatalf("serialize = %s", out)
	}
}

func TestDecodeJobRejectsMalformedPayloadsSayingWhy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		payload string
		because []string // substrings the error text must hold
	}{
		{"empty input", ``, []string{"malformed job payload", "EOF"}},
		{"only whitespace", " \n", []string{"malformed job payload", "EOF"}},
		{"missing name", `{"id":"a","t":1,"args":{}}`, []string{"malformed job payload", "no job name"}},
		{"empty name", `{"name":"","id":"a","t":1,"args":{}}`, []string{"no job name"}},
		{"null payload", `null`, []string{"no job name"}},
		{"empty object", `{}`, []string{"no job name"}},
		{"args a string", `{"name":"x","id":"a","t":1,"args":"{\"a\":1}"}`, []string{"malformed job payload", "args", "string"}},
		{"args an array", `{"name":"x","id":"a","t":1,"args":[1,2]}`, []string{"args", "array"}},
		{"args a number", `{"name":"x","id":"a","t":1,"args":7}`, []string{"args", "number"}},
		{"id a number", `{"name":"x","id":12345,"t":1,"args":{}}`, []string{"malformed job payload", "id", "number"}},
		{"name a number", `{"name":5,"id":"a","t":1,"args":{}}`, []string{"name", "number"}},
		{"t a string", `{"name":"x","id":"a","t":"1588156848","args":{}}`, []string{"malformed job payload", "t", "string"}},
		{"t a float", `{"name":"x","id":"a","t":1.5,"args":{}}`, []string{"malformed job payload", "t"}},
		{"t beyond int64", `{"name":"x","id":"a","t":9223372036854775808,"args":{}}`, []string{"malformed job payload", "t"}},
		{"fails a string", `{"name":"x","id":"a","t":1,"fails":"2"}`, []string{"fails", "string"}},
		{"unique a string", `{"name":"x","id":"a","t":1,"unique":"true"}`, []string{"unique", "string"}},
		{"top-level array", `[{"name":"x"}]`, []string{"malformed job payload", "array"}},
		{"top-level string", `"x"`, []string{"malformed job payload", "string"}},
		{"truncated", `{"name":"x","id":"a","t":1,"args":{"a":`, []string{"malformed job payload"}},
		{"unquoted key", `{name:"x"}`, []string{"malformed job payload", "invalid character"}},
		{"single quotes", `{'name':'x'}`, []string{"malformed job payload", "invalid character"}},
		{"trailing comma", `{"name":"x",}`, []string{"malformed job payload", "invalid character"}},
		{"NUL byte inside", "{\"name\":\"x\x00\"}", []string{"malformed job payload", "invalid character"}},
		{"trailing object", `{"name":"x","id":"a","t":1,"args":{}}{"name":"y"}`, []string{"malformed job payload", "data after the JSON object"}},
		{"trailing garbage", `{"name":"x","id":"a","t":1,"args":{}} xyz`, []string{"malformed job payload", "data after the JSON object"}},
		{"trailing number", `{"name":"x"} 1`, []string{"data after the JSON object"}},
		{"trailing brace", `{"name":"x"}}`, []string{"data after the JSON object"}},
		{"trailing NUL", "{\"name\":\"x\"}\x00", []string{"data after the JSON object"}},
		{"too deep", `{"name":"x","args":{"a":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}}`, []string{"malformed job payload", "depth"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, err := decodeJob([]byte(tc.payload))
			if err == nil {
				t.Fatalf("decodeJob(%q) = %#v, want an error", tc.payload, exported(j))
			}
			if j != nil {
				t.Errorf("decodeJob returned a job with its error: %#v", exported(j))
			}
			for _, s := range tc.because {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		})
	}
}

func TestDecodeJobToleratesInvalidUTF8AndNULInStrings(t *testing.T) {
	j := mustDecodeJob(t, "{\"name\":\"bad\xff\xfename\",\"id\":\"a\\u0000b\",\"t\":1,\"args\":{\"k\xc3\":\"v\\u0000\xed\xa0\x80\"}}")
	if j.Name != "bad\ufffd\ufffdname" {
		t.Errorf("Name = %q, want invalid bytes replaced by U+FFFD", j.Name)
	}
	if j.ID != "a\x00b" {
		t.Errorf("ID = %q, want an escaped NUL kept", j.ID)
	}
	if v, ok := j.Args["k\ufffd"]; !ok || v != "v\x00\ufffd\ufffd\ufffd" {
		t.Errorf("Args = %#v", j.Args)
	}
	again := mustDecodeJob(t, string(mustSerialize(t, j)))
	if !reflect.DeepEqual(exported(again), exported(j)) {
		t.Errorf("round trip changed the job\n got %#v\nwant %#v", exported(again), exported(j))
	}
}

// Handlers written for gocraft/work read numbers as float64 (job.Args["n"].(float64)).
func TestDecodeJobNumbersWithinFloatPrecisionAreFloat64(t *testing.T) {
	for _, tc := range []struct {
		lit  string
		want float64
	}{
		{"0", 0},
		{"-0", 0},
		{"1", 1},
		{"-1", -1},
		{"42", 42},
		{"2.5", 2.5},
		{"-0.125", -0.125},
		{"1.0", 1},
		{"1e3", 1000},
		{"1E-3", 0.001},
		{"1.5e300", 1.5e300},
		{"9007199254740991", 9007199254740991},   // 2^53-1
		{"9007199254740992", 9007199254740992},   // 2^53
		{"-9007199254740992", -9007199254740992}, // -2^53
		{"1e20", 1e20},                           // not an integer literal: a float, as in gocraft
		{"12345678901234567890.5", 12345678901234567890.5},
	} {
		j := mustDecodeJob(t, `{"name":"x","args":{"n":`+tc.lit+`}}`)
		got, ok := j.Args["n"].(float64)
		if !ok {
			t.Errorf("%s decoded as %T(%v), want float64", tc.lit, j.Args["n"], j.Args["n"])
			continue
		}
		if got != tc.want {
			t.Errorf("%s decoded as %v, want %v", tc.lit, got, tc.want)
		}
	}
}

// encoding/json (and so gocraft/work) decodes -0 as a negative zero; a retry must not change it.
func TestDecodeJobKeepsTheSignOfNegativeZero(t *testing.T) {
	payload := `{"name":"x","id":"a","t":1,"args":{"a":-0,"b":-0.0,"c":[-0e0]}}`
	j := mustDecodeJob(t, payload)
	for _, v := range []interface{}{j.Args["a"], j.Args["b"], j.Args["c"].([]interface{})[0]} {
		if f, ok := v.(float64); !ok || f != 0 || !math.Signbit(f) {
			t.Errorf("decoded %T(%v), want float64 negative zero", v, v)
		}
	}
	first := mustSerialize(t, j)
	second := mustSerialize(t, mustDecodeJob(t, string(first)))
	if string(first) != string(second) {
		t.Errorf("serialize is not stable across a retry\nfirst  %s\nsecond %s", first, second)
	}
}

func TestDecodeJobIntegersBeyondFloatPrecisionStayExact(t *testing.T) {
	for _, lit := range []string{
		"9007199254740993",  // 2^53+1: the first integer a float64 cannot hold
		"-9007199254740993", // -(2^53+1)
		"9007199254740994",  // 2^53+2: a float64 holds it, but it is beyond the safe range
		"9223372036854775807",
		"-9223372036854775808",
		"9223372036854775808",
		"12345678901234567890",
		"-12345678901234567890123",
		"123456789012345678901234567890123456789012345678901234567890",
	} {
		payload := `{"name":"x","id":"a","t":1,"args":{"list":[` + lit + `],"n":` + lit + `,"nested":{"m":` + lit + `}}}`
		j := mustDecodeJob(t, payload)
		for _, v := range []interface{}{j.Args["n"], j.Args["list"].([]interface{})[0], j.Args["nested"].(map[string]interface{})["m"]} {
			if n, ok := v.(json.Number); !ok || string(n) != lit {
				t.Errorf("%s decoded as %T(%v), want json.Number(%s)", lit, v, v, lit)
			}
		}
		if out := string(mustSerialize(t, j)); out != payload {
			t.Errorf("%s did not survive a round trip byte for byte\n got %s\nwant %s", lit, out, payload)
		}
	}
}

func TestDecodeJobNormalizesNumbersInNestedMapsAndSlices(t *testing.T) {
	j := mustDecodeJob(t, `{"name":"x","args":{"a":[1,[2,{"b":3}],{"c":[4.5]}],"d":{"e":{"f":6}},"g":[12345678901234567890]}}`)
	want := map[string]interface{}{
		"a": []interface{}{float64(1), []interface{}{float64(2), map[string]interface{}{"b": float64(3)}}, map[string]interface{}{"c": []interface{}{4.5}}},
		"d": map[string]interface{}{"e": map[string]interface{}{"f": float64(6)}},
		"g": []interface{}{json.Number("12345678901234567890")},
	}
	if !reflect.DeepEqual(j.Args, want) {
		t.Fatalf("Args\n got %#v\nwant %#v", j.Args, want)
	}
}

func TestDecodeJobHugeExponentStaysExact(t *testing.T) {
	payload := `{"name":"x","id":"a","t":1,"args":{"big":1e400,"tiny":-2E+999}}`
	j := mustDecodeJob(t, payload)
	if j.Args["big"] != json.Number("1e400") || j.Args["tiny"] != json.Number("-2E+999") {
		t.Fatalf("Args = %#v, want json.Number literals kept", j.Args)
	}
	if out := string(mustSerialize(t, j)); out != payload {
		t.Fatalf("serialize = %s, want %s", out, payload)
	}
}

func TestDecodeJobAcceptsDeepButBoundedNesting(t *testing.T) {
	const depth = 500
	payload := `{"name":"x","id":"a","t":1,"args":{"a":` + strings.Repeat(`{"a":[`, depth) + `1` + strings.Repeat(`]}`, depth) + `}}`
	j := mustDecodeJob(t, payload)
	if out := string(mustSerialize(t, j)); out != payload {
		t.Fatalf("deeply nested args did not round-trip")
	}
	v := j.Args["a"]
	for i := 0; i < depth; i++ {
		v = v.(map[string]interface{})["a"].([]interface{})[0]
	}
	if v != float64(1) {
		t.Fatalf("innermost value = %T(%v), want float64(1)", v, v)
	}
}

func TestJobJSONWithOnlyInputFieldsHasExactLayout(t *testing.T) {
	for _, tc := range []struct {
		job  Job
		want string
	}{
		{
			Job{Name: "x", ID: "0123456789abcdef01234567", EnqueuedAt: 123, Args: map[string]interface{}{"b": 1, "a": "s<&>"}},
			`{"name":"x","id":"0123456789abcdef01234567","t":123,"args":{"a":"s\u003c\u0026\u003e","b":1}}`,
		},
		{
			Job{Name: "x", ID: "i", EnqueuedAt: 123},
			`{"name":"x","id":"i","t":123,"args":null}`,
		},
		{
			Job{Name: "x", ID: "i", EnqueuedAt: 123, Args: map[string]interface{}{}},
			`{"name":"x","id":"i","t":123,"args":{}}`,
		},
		{
			// Name is omitempty; id, t and args never are.
			Job{},
			`{"id":"","t":0,"args":null}`,
		},
	} {
		b, err := json.Marshal(&tc.job)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("json.Marshal\n got %s\nwant %s", b, tc.want)
		}
		if s := string(mustSerialize(t, &tc.job)); s != tc.want {
			t.Errorf("serialize\n got %s\nwant %s", s, tc.want)
		}
	}
}

func TestJobJSONWithRetryAndUniqueFieldsKeepsCompatOrder(t *testing.T) {
	j := &Job{
		Name:       "x",
		ID:         "i",
		EnqueuedAt: 123,
		Args:       map[string]interface{}{"a": 1},
		Unique:     true,
		UniqueKey:  "work:unique:x:{\"a\":1}\n",
		Fails:      3,
		LastErr:    "boom",
		FailedAt:   456,
	}
	want := `{"name":"x","id":"i","t":123,"args":{"a":1},"unique":true,"unique_key":"work:unique:x:{\"a\":1}\n","fails":3,"err":"boom","failed_at":456}`
	if got := string(mustSerialize(t, j)); got != want {
		t.Fatalf("serialize\n got %s\nwant %s", got, want)
	}
	// Unexported bookkeeping never reaches the wire.
	j.raw = []byte("raw bytes")
	j.argError = fmt.Errorf("arg error")
	if got := string(mustSerialize(t, j)); got != want {
		t.Fatalf("serialize with unexported fields set\n got %s\nwant %s", got, want)
	}
}

func TestJobJSONOfListedJobsPutsTheScoreFirst(t *testing.T) {
	j := &Job{Name: "x", ID: "i", EnqueuedAt: 1, Fails: 1, LastErr: "e", FailedAt: 2}
	for _, tc := range []struct {
		v    interface{}
		want string
	}{
		{&ScheduledJob{RunAt: 9, Job: j}, `{"run_at":9,"name":"x","id":"i","t":1,"args":null,"fails":1,"err":"e","failed_at":2}`},
		{&RetryJob{RetryAt: 9, Job: j}, `{"retry_at":9,"name":"x","id":"i","t":1,"args":null,"fails":1,"err":"e","failed_at":2}`},
		{&DeadJob{DiedAt: 9, Job: j}, `{"died_at":9,"name":"x","id":"i","t":1,"args":null,"fails":1,"err":"e","failed_at":2}`},
	} {
		b, err := json.Marshal(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("json.Marshal(%T)\n got %s\nwant %s", tc.v, b, tc.want)
		}
	}
}

func TestIdentifierIs24LowercaseHexChars(t *testing.T) {
	const n = 20000
	seen := make(map[string]bool, n)
	for i := 0; i < n; i++ {
		id := makeIdentifier()
		if len(id) != 24 {
			t.Fatalf("makeIdentifier() = %q: %d chars, want 24", id, len(id))
		}
		for _, c := range id {
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				t.Fatalf("makeIdentifier() = %q: %q is not a lowercase hex digit", id, c)
			}
		}
		if seen[id] {
			t.Fatalf("makeIdentifier() returned %q twice in %d calls", id, i+1)
		}
		seen[id] = true
	}
}

func TestIdentifierClockFallbackDiffersAcrossCalls(t *testing.T) {
	seen := make(map[[12]byte]bool)
	for i := 0; i < 1000; i++ {
		var b [12]byte
		binaryPutTime(b[:])
		if seen[b] {
			t.Fatalf("binaryPutTime repeated %x after %d calls", b, i)
		}
		seen[b] = true
	}
}

// ---- Arg helpers ----

func TestArgStringReturnsStringsAndRejectsOtherTypes(t *testing.T) {
	j := &Job{Args: map[string]interface{}{"s": "hello", "empty": "", "n": 1.5, "b": true, "nil": nil, "bytes": []byte("x")}}
	if got := j.ArgString("s"); got != "hello" || j.ArgError() != nil {
		t.Fatalf("ArgString(s) = %q, %v", got, j.ArgError())
	}
	if got := j.ArgString("empty"); got != "" || j.ArgError() != nil {
		t.Fatalf("ArgString(empty) = %q, %v", got, j.ArgError())
	}
	for key, text := range map[string]string{
		"n":       "looking for a string in job.Arg[n] but value wasn't right type: float64(1.5)",
		"b":       "looking for a string in job.Arg[b] but value wasn't right type: bool(true)",
		"nil":     "looking for a string in job.Arg[nil] but value wasn't right type: <nil>(<nil>)",
		"bytes":   "looking for a string in job.Arg[bytes] but value wasn't right type: []uint8([120])",
		"missing": "looking for a string in job.Arg[missing] but key wasn't found",
	} {
		j := &Job{Args: j.Args}
		if got := j.ArgString(key); got != "" {
			t.Errorf("ArgString(%s) = %q, want \"\"", key, got)
		}
		assertArgError(t, j, text)
	}
}

func TestArgBoolReturnsBoolsAndRejectsOtherTypes(t *testing.T) {
	j := &Job{Args: map[string]interface{}{"t": true, "f": false, "s": "true", "n": float64(1)}}
	if !j.ArgBool("t") || j.ArgBool("f") || j.ArgError() != nil {
		t.Fatalf("ArgBool: t=%v f=%v err=%v", j.ArgBool("t"), j.ArgBool("f"), j.ArgError())
	}
	for key, text := range map[string]string{
		"s":       "looking for a bool in job.Arg[s] but value wasn't right type: string(true)",
		"n":       "looking for a bool in job.Arg[n] but value wasn't right type: float64(1)",
		"missing": "looking for a bool in job.Arg[missing] but key wasn't found",
	} {
		j := &Job{Args: j.Args}
		if j.ArgBool(key) {
			t.Errorf("ArgBool(%s) = true, want false", key)
		}
		assertArgError(t, j, text)
	}
}

func TestArgInt64AcceptsEveryIntegerKind(t *testing.T) {
	for _, tc := range []struct {
		v    interface{}
		want int64
	}{
		{int(-7), -7},
		{int8(math.MinInt8), math.MinInt8},
		{int16(math.MaxInt16), math.MaxInt16},
		{int32(math.MinInt32), math.MinInt32},
		{int64(math.MaxInt64), math.MaxInt64},
		{int64(math.MinInt64), math.MinInt64},
		{uint(7), 7},
		{uint8(math.MaxUint8), math.MaxUint8},
		{uint16(math.MaxUint16), math.MaxUint16},
		{uint32(math.MaxUint32), math.MaxUint32},
		{uint64(math.MaxInt64), math.MaxInt64},
		{float64(0), 0},
		{float64(42), 42},
		{float64(-42), -42},
		{float32(1 << 20), 1 << 20},
		{float64(1 << 53), 1 << 53},
		{float64(-(1 << 53)), -(1 << 53)},
		{json.Number("12"), 12},
		{json.Number("-9223372036854775808"), math.MinInt64},
		{json.Number("9223372036854775807"), math.MaxInt64},
		{json.Number("9007199254740993"), 9007199254740993},
	} {
		j := &Job{Args: map[string]interface{}{"k": tc.v}}
		if got := j.ArgInt64("k"); got != tc.want || j.ArgError() != nil {
			t.Errorf("ArgInt64(%T(%v)) = %d, %v; want %d, nil", tc.v, tc.v, got, j.ArgError(), tc.want)
		}
	}
}

func TestArgInt64RejectsValuesItCannotHoldExactly(t *testing.T) {
	for _, tc := range []struct {
		v    interface{}
		text string
	}{
		{uint64(math.MaxInt64) + 1, "looking for a int64 in job.Arg[k] but value wasn't right type: uint64(9223372036854775808)"},
		{uint64(math.MaxUint64), "looking for a int64 in job.Arg[k] but value wasn't right type: uint64(18446744073709551615)"},
		{uint(math.MaxUint64), "looking for a int64 in job.Arg[k] but value wasn't right type: uint(18446744073709551615)"},
		{1.5, "looking for a int64 in job.Arg[k] but value wasn't right type: float64(1.5)"},
		{-0.001, "looking for a int64 in job.Arg[k] but value wasn't right type: float64(-0.001)"},
		{float32(2.5), "looking for a int64 in job.Arg[k] but value wasn't right type: float32(2.5)"},
		{float64(1<<53) + 2, "looking for a int64 in job.Arg[k] but value wasn't right type: float64(9.007199254740994e+15)"},
		{-float64(1<<53) - 2, "looking for a int64 in job.Arg[k] but value wasn't right type: float64(-9.007199254740994e+15)"},
		{1e19, "looking for a int64 in job.Arg[k] but value wasn't right type: float64(1e+19)"},
		{math.Inf(1), "looking for a int64 in job.Arg[k] but value wasn't right type: float64(+Inf)"},
		{math.Inf(-1), "looking for a int64 in job.Arg[k] but value wasn't right type: float64(-Inf)"},
		{math.NaN(), "looking for a int64 in job.Arg[k] but value wasn't right type: float64(NaN)"},
		{json.Number("9223372036854775808"), "looking for a int64 in job.Arg[k] but value wasn't right type: json.Number(9223372036854775808)"},
		{json.Number("1.5"), "looking for a int64 in job.Arg[k] but value wasn't right type: json.Number(1.5)"},
		{json.Number("1e400"), "looking for a int64 in job.Arg[k] but value wasn't right type: json.Number(1e400)"},
		{"12", "looking for a int64 in job.Arg[k] but value wasn't right type: string(12)"},
		{true, "looking for a int64 in job.Arg[k] but value wasn't right type: bool(true)"},
		{nil, "looking for a int64 in job.Arg[k] but value wasn't right type: <nil>(<nil>)"},
		{[]interface{}{1.0}, "looking for a int64 in job.Arg[k] but value wasn't right type: []interface {}([1])"},
		{map[string]interface{}{}, "looking for a int64 in job.Arg[k] but value wasn't right type: map[string]interface {}(map[])"},
		{uintptr(1), "looking for a int64 in job.Arg[k] but value wasn't right type: uintptr(1)"},
	} {
		j := &Job{Args: map[string]interface{}{"k": tc.v}}
		if got := j.ArgInt64("k"); got != 0 {
			t.Errorf("ArgInt64(%T(%v)) = %d, want 0", tc.v, tc.v, got)
		}
		assertArgError(t, j, tc.text)
	}
	j := &Job{}
	j.ArgInt64("missing")
	assertArgError(t, j, "looking for a int64 in job.Arg[missing] but key wasn't found")
}

func TestArgFloat64ConvertsEveryNumberKind(t *testing.T) {
	for _, tc := range []struct {
		v    interface{}
		want float64
	}{
		{1.5, 1.5},
		{float32(0.25), 0.25},
		{math.Inf(-1), math.Inf(-1)},
		{int(-3), -3},
		{int8(-8), -8},
		{int16(16), 16},
		{int32(32), 32},
		{int64(math.MaxInt64), math.MaxInt64},
		{uint(3), 3},
		{uint8(8), 8},
		{uint16(16), 16},
		{uint32(32), 32},
		{uint64(math.MaxUint64), math.MaxUint64},
		{json.Number("2.5"), 2.5},
		{json.Number("12345678901234567890"), 12345678901234567890},
		{json.Number("-9223372036854775808"), math.MinInt64},
	} {
		j := &Job{Args: map[string]interface{}{"k": tc.v}}
		if got := j.ArgFloat64("k"); got != tc.want || j.ArgError() != nil {
			t.Errorf("ArgFloat64(%T(%v)) = %v, %v; want %v, nil", tc.v, tc.v, got, j.ArgError(), tc.want)
		}
	}
	j := &Job{Args: map[string]interface{}{"k": math.NaN()}}
	if got := j.ArgFloat64("k"); !math.IsNaN(got) || j.ArgError() != nil {
		t.Errorf("ArgFloat64(NaN) = %v, %v", got, j.ArgError())
	}
}

func TestArgFloat64RejectsNonNumbers(t *testing.T) {
	for _, tc := range []struct {
		v    interface{}
		text string
	}{
		{"1.5", "looking for a float64 in job.Arg[k] but value wasn't right type: string(1.5)"},
		{false, "looking for a float64 in job.Arg[k] but value wasn't right type: bool(false)"},
		{nil, "looking for a float64 in job.Arg[k] but value wasn't right type: <nil>(<nil>)"},
		{json.Number("1e400"), "looking for a float64 in job.Arg[k] but value wasn't right type: json.Number(1e400)"},
		{json.Number("abc"), "looking for a float64 in job.Arg[k] but value wasn't right type: json.Number(abc)"},
		{[]interface{}{}, "looking for a float64 in job.Arg[k] but value wasn't right type: []interface {}([])"},
	} {
		j := &Job{Args: map[string]interface{}{"k": tc.v}}
		if got := j.ArgFloat64("k"); got != 0 {
			t.Errorf("ArgFloat64(%T(%v)) = %v, want 0", tc.v, tc.v, got)
		}
		assertArgError(t, j, tc.text)
	}
	j := &Job{Args: nil}
	j.ArgFloat64("missing")
	assertArgError(t, j, "looking for a float64 in job.Arg[missing] but key wasn't found")
}

func TestArgHelpersReadDecodedPayloadsLikeGocraft(t *testing.T) {
	j := mustDecodeJob(t, `{"name":"x","id":"a","t":1,"args":{"s":"str","i":42,"f":2.5,"b":true,"big":12345678901234567890,"exact":9223372036854775807}}`)
	if j.ArgString("s") != "str" || j.ArgInt64("i") != 42 || j.ArgFloat64("f") != 2.5 || !j.ArgBool("b") {
		t.Fatalf("typed reads of a decoded payload failed: %v", j.ArgError())
	}
	if j.ArgFloat64("i") != 42 {
		t.Fatalf("ArgFloat64 of an integer = %v", j.ArgFloat64("i"))
	}
	if n := j.ArgInt64("exact"); n != math.MaxInt64 {
		t.Fatalf("ArgInt64(exact) = %d, want %d", n, int64(math.MaxInt64))
	}
	if f := j.ArgFloat64("big"); f != 12345678901234567890 {
		t.Fatalf("ArgFloat64(big) = %v", f)
	}
	if err := j.ArgError(); err != nil {
		t.Fatalf("ArgError = %v", err)
	}
	if j.ArgInt64("big") != 0 {
		t.Fatal("ArgInt64 of an integer beyond int64 should be 0")
	}
	assertArgError(t, j, "looking for a int64 in job.Arg[big] but value wasn't right type: json.Number(12345678901234567890)")
}

func TestArgInt64ReadsDecodedIntegersBeyondFloatPrecisionExactly(t *testing.T) {
	for _, want := range []int64{1<<53 + 1, -(1<<53 + 1), 1<<53 + 2, 1<<62 + 1, math.MaxInt64, math.MinInt64} {
		j := mustDecodeJob(t, fmt.Sprintf(`{"name":"x","args":{"n":%d}}`, want))
		if got := j.ArgInt64("n"); got != want || j.ArgError() != nil {
			t.Errorf("ArgInt64 of the decoded %d = %d, %v", want, got, j.ArgError())
		}
	}
}

func TestArgErrorKeepsTheLastErrorUntilAnotherFails(t *testing.T) {
	j := &Job{Args: map[string]interface{}{"s": "x", "n": float64(1)}}
	if j.ArgError() != nil {
		t.Fatal("a fresh job has an arg error")
	}
	j.ArgString("n")
	first := j.ArgError()
	if first == nil {
		t.Fatal("no error after a failed read")
	}
	// A successful read does not clear it (gocraft/work behaves the same).
	j.ArgString("s")
	j.ArgInt64("n")
	if j.ArgError() != first {
		t.Fatalf("ArgError changed after successful reads: %v", j.ArgError())
	}
	j.ArgBool("missing")
	assertArgError(t, j, "looking for a bool in job.Arg[missing] but key wasn't found")
}

func TestArgHelpersQuoteNothingInTheKey(t *testing.T) {
	j := &Job{Args: map[string]interface{}{}}
	j.ArgString("a]b[%s\n")
	assertArgError(t, j, "looking for a string in job.Arg[a]b[%s\n] but key wasn't found")
}

func assertArgError(t *testing.T, j *Job, text string) {
	t.Helper()
	err := j.ArgError()
	if err == nil {
		t.Errorf("ArgError() = nil, want %q", text)
		return
	}
	if err.Error() != text {
		t.Errorf("ArgError()\n got %q\nwant %q", err, text)
	}
}
