package work

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/workqueue/work/internal/rdb"
)

// The fuzz targets below run as ordinary tests on their seeds (f.Add and testdata/fuzz/<Name>/), and
// explore further with go test -fuzz.

// maxFuzzInput keeps each fuzz input fast; payloads in Redis are rarely larger.
const maxFuzzInput = 64 << 10

// FuzzDecodeJob: decodeJob never panics; an error comes without a job; a decoded job serializes, and
// serialize→decode→serialize is a fixed point that keeps every field and every number's value.
func FuzzDecodeJob(f *testing.F) {
	f.Add([]byte(gocraftPayload))
	f.Add([]byte(`{"name":"x","id":"a","t":1,"args":null}`))
	f.Add([]byte(`{"name":"x","args":{"n":12345678901234567890,"f":1e20,"l":[1.5,{"m":-1}]}}`))
	f.Add([]byte(`{"id":"a"}`))
	f.Add([]byte(``))
	// Records of payloads that could not be decoded, in each form.
	f.Add([]byte(`{"name":"x","id":"a","t":1,"args":null,"err":"e","raw_text":"{\"name\":\"x\", é <b>"}`))
	f.Add([]byte(`{"name":"x","raw_base64":"//4=","raw_payload":"e2Jyb2tlbg=="}`))
	f.Add([]byte(`{"name":"x","raw_payload":"e2Jyb2tlbg==","RAW_TEXT":"\ud800"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			t.Skip("input too large")
		}
		orig := append([]byte(nil), data...)
		j, err := decodeJob(data)
		if !bytes.Equal(data, orig) {
			t.Fatalf("decodeJob modified its input")
		}
		if err != nil {
			if j != nil {
				t.Fatalf("decodeJob returned a job with its error %v", err)
			}
			if !strings.HasPrefix(err.Error(), "malformed job payload") {
				t.Fatalf("error %q does not say the payload is malformed", err)
			}
			return
		}
		if j.Name == "" {
			t.Fatalf("decodeJob accepted a job without a name: %q", data)
		}
		if !bytes.Equal(j.raw, data) {
			t.Fatalf("raw = %q, want the input", j.raw)
		}
		checkNumbersKeptTheirValue(t, data, j.Args)

		s1, err := j.serialize()
		if err != nil {
			t.Fatalf("serialize of a decoded job: %v\ninput %q", err, data)
		}
		j2, err := decodeJob(s1)
		if err != nil {
			t.Fatalf("decode(serialize(job)) failed: %v\ninput %q\nserialized %s", err, data, s1)
		}
		a, b := exported(j), exported(j2)
		a.Args, b.Args = nil, nil
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("a round trip changed the job\nbefore %#v\n after %#v", a, b)
		}
		if err := equivalentArgs(j.Args, j2.Args); err != nil {
			t.Fatalf("a round trip changed the args: %v\ninput %q\nserialized %s", err, data, s1)
		}
		s2, err := j2.serialize()
		if err != nil {
			t.Fatalf("second serialize: %v", err)
		}
		if !bytes.Equal(s1, s2) {
			t.Fatalf("serialize is not stable across a round trip\nfirst  %s\nsecond %s", s1, s2)
		}
		j3, err := decodeJob(s2)
		if err != nil {
			t.Fatalf("third decode: %v", err)
		}
		if !reflect.DeepEqual(exported(j2), exported(j3)) {
			t.Fatalf("decode(serialize) is not a fixed point\nbefore %#v\n after %#v", exported(j2), exported(j3))
		}
	})
}

// checkNumbersKeptTheirValue compares every number in the payload's args, decoded as json.Number, with
// what decodeJob made of it: the same literal, or a float64 of exactly the same value (the nearest
// float64 for a literal that is not an integer).
func checkNumbersKeptTheirValue(t *testing.T, data []byte, args map[string]interface{}) {
	t.Helper()
	var plain struct {
		Args map[string]interface{} `json:"args"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&plain); err != nil {
		t.Fatalf("decodeJob accepted what encoding/json rejects: %v", err)
	}
	var walk func(path string, lit, got interface{})
	walk = func(path string, lit, got interface{}) {
		switch l := lit.(type) {
		case json.Number:
			switch g := got.(type) {
			case json.Number:
				if g != l {
					t.Fatalf("args%s: literal %s became json.Number(%s)", path, l, g)
				}
			case float64:
				if isIntegerLiteral(string(l)) {
					want, _ := new(big.Int).SetString(string(l), 10)
					if have, acc := big.NewFloat(g).Int(nil); acc != big.Exact || have.Cmp(want) != 0 || math.Signbit(g) != strings.HasPrefix(string(l), "-") {
						t.Fatalf("args%s: integer %s became float64 %v, which is not the same signed integer", path, l, g)
					}
					return
				}
				want, err := strconv.ParseFloat(string(l), 64)
				if err != nil || want != g || math.Signbit(want) != math.Signbit(g) {
					t.Fatalf("args%s: number %s became float64 %v, want %v (%v)", path, l, g, want, err)
				}
			default:
				t.Fatalf("args%s: number %s became %T(%v)", path, l, got, got)
			}
		case map[string]interface{}:
			g, ok := got.(map[string]interface{})
			if !ok || len(g) != len(l) {
				t.Fatalf("args%s: object became %T(%v)", path, got, got)
			}
			for k, v := range l {
				walk(path+"["+strconv.Quote(k)+"]", v, g[k])
			}
		case []interface{}:
			g, ok := got.([]interface{})
			if !ok || len(g) != len(l) {
				t.Fatalf("args%s: array became %T(%v)", path, got, got)
			}
			for i, v := range l {
				walk(path+"["+strconv.Itoa(i)+"]", v, g[i])
			}
		default:
			if !reflect.DeepEqual(lit, got) {
				t.Fatalf("args%s: %T(%v) became %T(%v)", path, lit, lit, got, got)
			}
		}
	}
	if (plain.Args == nil) != (args == nil) {
		t.Fatalf("args nil-ness changed: %#v vs %#v", plain.Args, args)
	}
	walk("", map[string]interface{}(plain.Args), map[string]interface{}(args))
}

// equivalentArgs reports whether two decoded args hold the same values. The one change a round trip
// may make is a float64 that is an integer beyond ±2^53 coming back as the exact json.Number of the
// same value: json.Marshal writes such a float as an integer literal.
func equivalentArgs(a, b interface{}) error {
	switch x := a.(type) {
	case map[string]interface{}:
		y, ok := b.(map[string]interface{})
		if !ok || len(x) != len(y) || (x == nil) != (y == nil) {
			return fmt.Errorf("%T(%v) vs %T(%v)", a, a, b, b)
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok {
				return fmt.Errorf("key %q lost", k)
			}
			if err := equivalentArgs(v, w); err != nil {
				return fmt.Errorf("[%q]: %v", k, err)
			}
		}
		return nil
	case []interface{}:
		y, ok := b.([]interface{})
		if !ok || len(x) != len(y) {
			return fmt.Errorf("%T(%v) vs %T(%v)", a, a, b, b)
		}
		for i := range x {
			if err := equivalentArgs(x[i], y[i]); err != nil {
				return fmt.Errorf("[%d]: %v", i, err)
			}
		}
		return nil
	case float64:
		if n, ok := b.(json.Number); ok && x == math.Trunc(x) && math.Abs(x) > 1<<53 {
			if bf, err := n.Float64(); err == nil && bf == x {
				return nil
			}
		}
	}
	if !reflect.DeepEqual(a, b) {
		return fmt.Errorf("%T(%v) vs %T(%v)", a, a, b, b)
	}
	return nil
}

// fuzzArgs decodes data as a JSON object twice: with numbers as decodeJob leaves them, and with every
// number a json.Number. ok is false when data is not a JSON object (null gives nil maps).
func fuzzArgs(data []byte) (normalized, numbers map[string]interface{}, ok bool) {
	decode := func() (map[string]interface{}, bool) {
		var m map[string]interface{}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			return nil, false
		}
		return m, true
	}
	numbers, ok = decode()
	if !ok {
		return nil, nil, false
	}
	normalized, _ = decode()
	for k, v := range normalized {
		normalized[k] = normalizeNumber(v)
	}
	return normalized, numbers, true
}

// FuzzArgHelpers: with any decoded args and any key, the Arg helpers never panic, return the zero
// value exactly when they record an error, and record gocraft's error texts.
func FuzzArgHelpers(f *testing.F) {
	f.Add([]byte(`{"s":"str","i":42,"f":2.5,"b":true,"n":null}`), "i")
	f.Add([]byte(`{"big":12345678901234567890,"neg":-9223372036854775808,"e":1e400}`), "big")
	f.Add([]byte(`{"l":[1,2],"m":{"a":1}}`), "missing")
	f.Add([]byte(`null`), "")
	f.Fuzz(func(t *testing.T, data []byte, key string) {
		if len(data) > maxFuzzInput {
			t.Skip("input too large")
		}
		normalized, numbers, ok := fuzzArgs(data)
		if !ok {
			return
		}
		for _, args := range []map[string]interface{}{normalized, numbers} {
			keys := []string{key}
			for k := range args {
				keys = append(keys, k)
			}
			for _, k := range keys {
				checkArgHelpers(t, args, k)
			}
		}
	})
}

func checkArgHelpers(t *testing.T, args map[string]interface{}, key string) {
	t.Helper()
	v, present := args[key]
	check := func(helper, jsonType string, j *Job, got interface{}, zero interface{}, want interface{}, wantOK bool) {
		t.Helper()
		err := j.ArgError()
		switch {
		case !present:
			if err == nil || err.Error() != fmt.Sprintf("looking for a %s in job.Arg[%s] but key wasn't found", jsonType, key) {
				t.Fatalf("%s(%q) on a missing key: error %v", helper, key, err)
			}
			if got != zero {
				t.Fatalf("%s(%q) on a missing key = %v", helper, key, got)
			}
		case wantOK:
			if err != nil {
				t.Fatalf("%s(%q) on %T(%v): unexpected error %v", helper, key, v, v, err)
			}
			if got != want {
				t.Fatalf("%s(%q) on %T(%v) = %v, want %v", helper, key, v, v, got, want)
			}
		default:
			if err == nil || err.Error() != fmt.Sprintf("looking for a %s in job.Arg[%s] but value wasn't right type: %T(%v)", jsonType, key, v, v) {
				t.Fatalf("%s(%q) on %T(%v): error %v", helper, key, v, v, err)
			}
			if got != zero {
				t.Fatalf("%s(%q) on %T(%v) = %v with an error", helper, key, v, v, got)
			}
		}
	}

	j := &Job{Args: args}
	s, isString := v.(string)
	check("ArgString", "string", j, j.ArgString(key), "", s, isString)

	j = &Job{Args: args}
	b, isBool := v.(bool)
	check("ArgBool", "bool", j, j.ArgBool(key), false, b, isBool)

	var wantF float64
	var okF bool
	switch x := v.(type) {
	case float64:
		wantF, okF = x, true
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		wantF, okF = f, err == nil
	}
	j = &Job{Args: args}
	check("ArgFloat64", "float64", j, j.ArgFloat64(key), 0.0, wantF, okF)

	var wantI int64
	var okI bool
	switch x := v.(type) {
	case float64:
		if x == math.Trunc(x) && math.Abs(x) <= 1<<53 {
			wantI, okI = int64(x), true
		}
	case json.Number:
		i, err := strconv.ParseInt(string(x), 10, 64)
		wantI, okI = i, err == nil
	}
	j = &Job{Args: args}
	check("ArgInt64", "int64", j, j.ArgInt64(key), int64(0), wantI, okI)
}

// FuzzUniqueKey: for any namespace, name and JSON args, keyspace.unique never panics, never fails,
// is deterministic, matches gocraft's key, and is canonical (the JSON in the key, decoded and encoded
// again, gives the same key).
func FuzzUniqueKey(f *testing.F) {
	f.Add("work", "send_email", []byte(`{"b":2,"a":"<x>&"}`))
	f.Add("work:", "x", []byte(`null`))
	f.Add("", "x", []byte(`{}`))
	f.Add("{app}", "a:b", []byte(`{"n":12345678901234567890,"f":1e20,"s":"\u2028"}`))
	f.Fuzz(func(t *testing.T, ns, name string, data []byte) {
		if len(data) > maxFuzzInput {
			t.Skip("input too large")
		}
		normalized, numbers, ok := fuzzArgs(data)
		if !ok {
			return
		}
		k := rdb.NewKeyspace(ns)
		prefix := rdb.RedisNamespacePrefix(ns) + "unique:" + name + ":"
		for variant, args := range []map[string]interface{}{normalized, numbers} {
			u1, err := k.Unique(name, args)
			if err != nil {
				t.Fatalf("unique(%q, %v): %v", name, args, err)
			}
			u2, err := k.Unique(name, args)
			if err != nil || u1 != u2 {
				t.Fatalf("unique is not deterministic: %q then %q (%v)", u1, u2, err)
			}
			if ref := gocraftUniqueKey(t, ns, name, args); u1 != ref {
				t.Fatalf("unique = %q, gocraft/work gives %q", u1, ref)
			}
			if !strings.HasPrefix(u1, prefix) {
				t.Fatalf("unique = %q, want the prefix %q", u1, prefix)
			}
			rest := u1[len(prefix):]
			if args == nil {
				if rest != "" {
					t.Fatalf("unique of nil args = %q, want it to end at the name", u1)
				}
				continue
			}
			if !strings.HasSuffix(rest, "\n") || strings.Count(rest, "\n") != 1 {
				t.Fatalf("unique = %q, want one trailing newline", u1)
			}
			if strings.ContainsAny(rest, "<>&") {
				t.Fatalf("unique = %q is not HTML-escaped", u1)
			}
			againNormalized, againNumbers, ok := fuzzArgs([]byte(rest))
			if !ok {
				t.Fatalf("the JSON in unique key %q does not decode", u1)
			}
			again := [2]map[string]interface{}{againNormalized, againNumbers}[variant]
			if u3, err := k.Unique(name, again); err != nil || u3 != u1 {
				t.Fatalf("unique key is not canonical: %q, then %q (%v)", u1, u3, err)
			}
		}
		// The key computed from the args a worker decodes equals the key of the args enqueued.
		if normalized != nil {
			raw, err := (&Job{Name: "x", Args: normalized}).serialize()
			if err != nil {
				t.Fatalf("serialize: %v", err)
			}
			j, err := decodeJob(raw)
			if err != nil {
				t.Fatalf("decodeJob(%s): %v", raw, err)
			}
			u1, _ := k.Unique(name, normalized)
			u2, err := k.Unique(name, j.Args)
			if err != nil || u1 != u2 {
				t.Fatalf("unique key changed across the wire: %q then %q (%v)", u1, u2, err)
			}
		}
	})
}

// FuzzDecodeFetchedAgreesWithDecodeJob holds the workers' decoder, with its path for payloads of the
// usual shape, to the full decoder: the same job, or an error, for every input.
func FuzzDecodeFetchedAgreesWithDecodeJob(f *testing.F) {
	for _, s := range []string{
		gocraftPayload,
		`{"name":"x","id":"a","t":1,"args":null}`,
		`{"name":"x","id":"5f0c","t":1700000000,"args":{"n":1,"s":"é\n","l":[1,{"a":null}]},"unique":true,"unique_key":"k","fails":2,"err":"boom","failed_at":9}`,
		` { "name" : "x" , "t" : -0 , "args" : { } } `,
		`{"name":"x","name":"y"}`,
		`{"Name":"x"}`,
		`{"name":"x","t":1.0}`,
		`{"name":"x","t":012}`,
		`{"name":"x","t":12345678901234567890}`,
		`{"name":"x","id":"\u0041"}`,
		`{"name":"x","args":[1]}`,
		`{"name":"x","args":{"a":1},"args":{"b":2}}`,
		`{"name":"x","args":{"a":1,"b":"s","c":true,"d":null,"e":-5,"f":false,"a":2}}`,
		`{"name":"x","args":{"n":-0}}`,
		`{"name":"x","args":{"m":9007199254740992,"k":-9007199254740992}}`,
		`{"name":"x","args":{"m":9007199254740993}}`,
		`{"name":"x","args":{"a":truex}}`,
		`{"name":"x","args":{"a":1,}}`,
		`{"name":"x","args":{"a":1.5,"b":"\u00e9"}}`,
		`{"name":"x","args":{"ids":[1,2,-3],"o":{"a":[],"b":{},"c":[{"d":null}]},"e":[true,"s"]}}`,
		`{"name":"x","args":{"a":[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]}}`,
		`{"name":"x","args":{"a":[1,]}}`,
		`{"name":"x","args":{"a":[-0]}}`,
		`{"name":"x","raw_payload":"e30="}`,
		`{"name":"x"} trailing`,
		`{"name":"x","unique":null}`,
		`{"name":"y","id":"a"}`,
		`{"name":"x","key":"acme"}`,
		`{"nAme":"x","keY":"0"}`,
		`{}`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			t.Skip("input too large")
		}
		want, wantErr := decodeJob(append([]byte(nil), data...))
		if wantErr == nil && want.Name != "x" {
			wantErr = errors.New("other queue")
		}
		// The queue of name x holds unkeyed jobs: a keyed one found there is refused.
		if wantErr == nil && want.Key != "" {
			wantErr = errors.New("keyed job in the queue of its name")
		}
		got := &Job{raw: data, q: &queue{name: "x"}}
		gotErr := decodeFetched(got, "x")
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("%q: decodeFetched error %v, decodeJob error %v", data, gotErr, wantErr)
		}
		if gotErr != nil {
			return
		}
		got.raw, got.rawArg, got.q, want.raw = nil, nil, nil, nil
		// Printed as well: DeepEqual takes -0 and 0 for equal.
		if !reflect.DeepEqual(got, want) || fmt.Sprint(got.Args) != fmt.Sprint(want.Args) {
			t.Fatalf("%q:\ndecodeFetched %#v\ndecodeJob     %#v", data, got, want)
		}
	})
}

// FuzzDeadRecord: for any payload a worker cannot run and any reason, the dead record it writes
// decodes to that payload exactly (Raw, and what a retry queues); the record holds it as text in
// raw_text when it is UTF-8, escaped only where JSON requires, and in base64 otherwise.
func FuzzDeadRecord(f *testing.F) {
	f.Add([]byte(`{"name":"x", broken é <b>&amp;`), "malformed job payload: unexpected EOF")
	f.Add([]byte("\xff\xfe{\"name\":\"x\"}"), "malformed job payload")
	f.Add([]byte("line\nbreak\x00\u2028\\\""), "\xff")
	f.Add([]byte(""), "")
	f.Fuzz(func(t *testing.T, raw []byte, reason string) {
		if len(raw) > maxFuzzInput {
			t.Skip("input too large")
		}
		op := rdb.FinishOp{Payload: deadLetterRecord("q", raw, errors.New(reason), nowEpochSeconds())}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(op.Payload, &fields); err != nil {
			t.Fatalf("record %q is not a JSON object: %v", op.Payload, err)
		}
		text, hasText := fields["raw_text"]
		_, hasBase64 := fields["raw_base64"]
		switch {
		case len(raw) == 0:
			if hasText || hasBase64 {
				t.Fatalf("record of an empty payload %s holds raw bytes", op.Payload)
			}
		case utf8.Valid(raw):
			if !hasText || hasBase64 {
				t.Fatalf("record of UTF-8 %q: %s, want raw_text alone", raw, op.Payload)
			}
			checkMinimalEscapes(t, string(text))
		default:
			if hasText || !hasBase64 {
				t.Fatalf("record of non-UTF-8 %q: %s, want raw_base64 alone", raw, op.Payload)
			}
		}
		if _, ok := fields["raw_payload"]; ok {
			t.Fatalf("record %s holds the form of earlier versions", op.Payload)
		}
		j, ok := decodeMember(op.Payload)
		if !bytes.Equal(j.Raw, raw) || j.Name != "q" {
			t.Fatalf("record %s decodes to name %q, Raw %q; want %q", op.Payload, j.Name, j.Raw, raw)
		}
		if utf8.ValidString(reason) && j.LastErr != reason {
			t.Fatalf("record %s decodes to err %q, want %q", op.Payload, j.LastErr, reason)
		}
		if len(raw) > 0 {
			req, err := retryOp(op.Payload, j, ok, 1)
			if err != nil || !bytes.Equal(req.Payload, raw) || req.Name != "q" {
				t.Fatalf("a retry of %s queues %q on %q (%v), want %q", op.Payload, req.Payload, req.Name, err, raw)
			}
		}
	})
}

// checkMinimalEscapes fails unless the JSON string literal s escapes only what JSON requires (the
// quote, the backslash, control characters) and the two line separators that encoding/json always
// escapes: anything else, < > & and non-ASCII text included, is written as itself.
func checkMinimalEscapes(t *testing.T, s string) {
	t.Helper()
	for i := 1; i < len(s)-1; i++ {
		if s[i] != '\\' {
			continue
		}
		i++
		switch c := s[i]; c {
		case '"', '\\', 'b', 'f', 'n', 'r', 't':
		case 'u':
			v, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil || (v >= 0x20 && v != 0x2028 && v != 0x2029) {
				t.Fatalf("string %s escapes %s, which JSON does not require", s, s[i-1:i+5])
			}
			i += 4
		default:
			t.Fatalf("string %s has escape \\%c", s, c)
		}
	}
}

// FuzzEncodeFast: the encoder of Enqueue writes exactly what json.Marshal writes for any job of the
// shapes it takes, and declines the others (serialize then falls back to json.Marshal).
func FuzzEncodeFast(f *testing.F) {
	f.Add("send_email", "5f0c", int64(1700000000), "addr", "a@b.c", int64(1), 1.5, true, "", "", uint8(0))
	f.Add("x<y>&z", "id\u2028", int64(-1), "k\"\\", "\x00\x1f\b\f\n\r\t\u2029é", int64(-9), 1e-7, false, "boom", "b1", uint8(0xff))
	f.Add("x", "", int64(0), "", "\xff", int64(0), math.Inf(1), false, "", "", uint8(3))
	f.Add("x", "a", int64(0), "f", "", int64(0), 1e21, false, "", "", uint8(4))
	f.Add("x", "a", int64(0), "f", "", int64(0), 123456789.125, false, "", "", uint8(4))
	f.Fuzz(func(t *testing.T, name, id string, n int64, key, s string, i int64, fl float64, flag bool, errText, batch string, shape uint8) {
		j := &Job{Name: name, ID: id, EnqueuedAt: n, Unique: flag, Tracked: !flag, LastErr: errText, Batch: batch}
		if shape&1 != 0 {
			j.UniqueKey, j.Fails, j.FailedAt = s, i, n
		}
		switch shape >> 1 & 7 {
		case 0:
			j.Args = map[string]interface{}{key: s, key + "n": i, key + "f": fl, key + "b": flag, key + "0": nil}
		case 1:
			j.Args = map[string]interface{}{}
		case 2:
			j.Args = map[string]interface{}{key: uint64(i), "u8": uint8(i), "i32": int32(i), "i": int(i)}
		case 3:
			j.Args = map[string]interface{}{key: fl}
		case 4:
			j.Args = map[string]interface{}{key: []interface{}{s}, "m": Q{"a": i}} // declined
		case 5:
			j.Args = map[string]interface{}{key: json.Number(strconv.FormatInt(i, 10)), "f32": float32(fl)} // declined
		}
		want, wantErr := json.Marshal(j)
		got, ok := encodeFast(nil, j)
		if !ok {
			if shape>>1&7 < 4 && wantErr == nil && allValidUTF8(name, id, key, s, errText, batch) && !math.IsNaN(fl) && !math.IsInf(fl, 0) {
				if a := math.Abs(fl); a == 0 || (a >= 1e-6 && a < 1e21) || shape>>1&7 == 1 || shape>>1&7 == 2 {
					t.Fatalf("declined a job of a shape it takes: %s", want)
				}
			}
			return
		}
		if wantErr != nil {
			t.Fatalf("encoded %s, json.Marshal fails: %v", got, wantErr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("encodeFast:   %s\njson.Marshal: %s", got, want)
		}
	})
}

func allValidUTF8(ss ...string) bool {
	for _, s := range ss {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}
