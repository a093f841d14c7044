package work

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/workqueue/work/internal/rdb"
)

func TestKeyNamespacePrefix(t *testing.T) {
	for ns, want := range map[string]string{
		"work":      "work:",
		"work:":     "work:",
		"work::":    "work::",
		"":          "",
		":":         ":",
		"{app}":     "{app}:",
		"a:b":       "a:b:",
		"my-app.v2": "my-app.v2:",
	} {
		if got := rdb.RedisNamespacePrefix(ns); got != want {
			t.Errorf("redisNamespacePrefix(%q) = %q, want %q", ns, got, want)
		}
		if got := rdb.NewKeyspace(ns).P; got != want {
			t.Errorf("newKeyspace(%q).p = %q, want %q", ns, got, want)
		}
	}
}

func TestKeyLayoutMatchesCompatTable(t *testing.T) {
	for _, tc := range []struct{ ns, p string }{
		{"work", "work:"},
		{"work:", "work:"}, // no double colon
		{"", ""},           // no prefix at all
		{"{app}", "{app}:"},
	} {
		k := rdb.NewKeyspace(tc.ns)
		p := tc.p
		for _, key := range []struct{ got, want string }{
			{k.JobsPrefix(), p + "jobs:"},
			{k.Jobs("send_email"), p + "jobs:send_email"},
			{k.InProgress("send_email", "a1b2c3"), p + "jobs:send_email:a1b2c3:inprogress"},
			{k.Paused("send_email"), p + "jobs:send_email:paused"},
			{k.Lock("send_email"), p + "jobs:send_email:lock"},
			{k.LockInfo("send_email"), p + "jobs:send_email:lock_info"},
			{k.MaxConcurrency("send_email"), p + "jobs:send_email:max_concurrency"},
			{k.Scheduled(), p + "scheduled"},
			{k.Retry(), p + "retry"},
			{k.Dead(), p + "dead"},
			{k.KnownJobs(), p + "known_jobs"},
			{k.UniquePrefix("send_email"), p + "unique:send_email:"},
			{k.WorkerPools(), p + "worker_pools"},
			{k.Heartbeat("a1b2c3"), p + "worker_pools:a1b2c3"},
			{k.Worker("d4e5f6"), p + "worker:d4e5f6"},
			{k.LastPeriodicEnqueue(), p + "last_periodic_enqueue"},
			{k.WakeChannel(), p + "wake"},
		} {
			if key.got != key.want {
				t.Errorf("namespace %q: got key %q, want %q", tc.ns, key.got, key.want)
			}
		}
	}
}

func TestKeyLayoutKeepsOddJobNamesVerbatim(t *testing.T) {
	k := rdb.NewKeyspace("work")
	for _, name := range []string{"a:b", "with space", "ünïcødé", "{tag}", "*?[", "x\x00y"} {
		if got, want := k.Jobs(name), "work:jobs:"+name; got != want {
			t.Errorf("jobs(%q) = %q, want %q", name, got, want)
		}
		if got, want := k.Lock(name), "work:jobs:"+name+":lock"; got != want {
			t.Errorf("lock(%q) = %q, want %q", name, got, want)
		}
	}
}

// A namespace with a hash tag puts every key on the slot of the tag, so multi-key scripts work on a
// Redis Cluster.
func TestKeyLayoutHashTagNamespaceSharesOneSlot(t *testing.T) {
	k := rdb.NewKeyspace("{app}")
	keys := []string{
		k.Jobs("a"), k.InProgress("a", "p"), k.Paused("a"), k.Lock("a"), k.LockInfo("a"), k.MaxConcurrency("a"),
		k.Scheduled(), k.Retry(), k.Dead(), k.KnownJobs(), k.WorkerPools(), k.Heartbeat("p"), k.Worker("w"),
		k.LastPeriodicEnqueue(),
	}
	u, err := k.Unique("a", map[string]interface{}{"{x}": "}"})
	if err != nil {
		t.Fatal(err)
	}
	keys = append(keys, u)
	for _, key := range keys {
		if !strings.HasPrefix(key, "{app}:") {
			t.Errorf("key %q does not start with the hash tag", key)
		}
	}
}

func TestUniqueKeyLayout(t *testing.T) {
	for _, tc := range []struct {
		ns   string
		name string
		args map[string]interface{}
		want string
	}{
		{"work", "x", nil, "work:unique:x:"},
		{"work:", "x", nil, "work:unique:x:"},
		{"", "x", nil, "unique:x:"},
		{"{app}", "x", nil, "{app}:unique:x:"},
		{"work", "x", map[string]interface{}{}, "work:unique:x:{}\n"},
		{"", "x", map[string]interface{}{}, "unique:x:{}\n"},
		{"work", "x", map[string]interface{}{"a": 1}, "work:unique:x:{\"a\":1}\n"},
		{"work:", "x", map[string]interface{}{"a": 1}, "work:unique:x:{\"a\":1}\n"},
		{"{app}", "x", map[string]interface{}{"a": 1}, "{app}:unique:x:{\"a\":1}\n"},
		{
			// Keys sorted at every level.
			"work", "send_email",
			map[string]interface{}{"z": "last", "a": []interface{}{3, 2, 1}, "m": map[string]interface{}{"y": true, "b": nil}},
			"work:unique:send_email:{\"a\":[3,2,1],\"m\":{\"b\":null,\"y\":true},\"z\":\"last\"}\n",
		},
		{
			// HTML-escaped, as json.Encoder does by default.
			"work", "x",
			map[string]interface{}{"html": "<b>&</b>", "<k>": "v"},
			"work:unique:x:{\"\\u003ck\\u003e\":\"v\",\"html\":\"\\u003cb\\u003e\\u0026\\u003c/b\\u003e\"}\n",
		},
		{
			// Line and paragraph separators are escaped too; other non-ASCII text is kept.
			"work", "x",
			map[string]interface{}{"s": "é\u2028\u2029\n\t\x00"},
			"work:unique:x:{\"s\":\"é\\u2028\\u2029\\n\\t\\u0000\"}\n",
		},
		{
			// Numbers as Go gives them, and json.Number verbatim.
			"work", "x",
			map[string]interface{}{"f": 2.5, "i": int64(math.MaxInt64), "u": uint64(math.MaxUint64), "n": json.Number("12345678901234567890"), "e": 1e21, "small": 1e-7},
			"work:unique:x:{\"e\":1e+21,\"f\":2.5,\"i\":9223372036854775807,\"n\":12345678901234567890,\"small\":1e-7,\"u\":18446744073709551615}\n",
		},
		{
			// A nested nil map is null; the name is kept verbatim.
			"work", "a:b c",
			map[string]interface{}{"m": map[string]interface{}(nil)},
			"work:unique:a:b c:{\"m\":null}\n",
		},
	} {
		got, err := rdb.NewKeyspace(tc.ns).Unique(tc.name, tc.args)
		if err != nil {
			t.Errorf("unique(%q, %q, %v): %v", tc.ns, tc.name, tc.args, err)
			continue
		}
		if got != tc.want {
			t.Errorf("unique(%q, %q, %v)\n got %q\nwant %q", tc.ns, tc.name, tc.args, got, tc.want)
		}
		if ref := gocraftUniqueKey(t, tc.ns, tc.name, tc.args); got != ref {
			t.Errorf("unique(%q, %q, %v) = %q, gocraft/work gives %q", tc.ns, tc.name, tc.args, got, ref)
		}
	}
}

func TestUniqueKeyIsIndependentOfMapInsertionOrder(t *testing.T) {
	k := rdb.NewKeyspace("work")
	want, err := k.Unique("x", map[string]interface{}{"a": 1, "b": 2, "c": map[string]interface{}{"d": 3, "e": 4}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		args := map[string]interface{}{}
		args["c"] = map[string]interface{}{"e": 4, "d": 3}
		args["b"] = 2
		args["a"] = 1
		got, err := k.Unique("x", args)
		if err != nil || got != want {
			t.Fatalf("unique = %q, %v; want %q", got, err, want)
		}
	}
}

func TestUniqueKeyOfArgsSurvivesTheWire(t *testing.T) {
	// The key an enqueuer computes from the caller's args equals the key computed from the same args
	// after they went through Redis and were decoded by a worker.
	k := rdb.NewKeyspace("work")
	args := map[string]interface{}{"i": 42, "f": 0.5, "big": uint64(12345678901234567890), "s": "<x>", "l": []string{"a"}}
	before, err := k.Unique("x", args)
	if err != nil {
		t.Fatal(err)
	}
	raw := mustSerialize(t, &Job{Name: "x", ID: "i", Args: args})
	after, err := k.Unique("x", mustDecodeJob(t, string(raw)).Args)
	if err != nil {
		t.Fatal(err)
	}
	if before != after {
		t.Fatalf("unique key changed across the wire\nbefore %q\n after %q", before, after)
	}
}

func TestUniqueKeyRejectsUnencodableArgs(t *testing.T) {
	k := rdb.NewKeyspace("work")
	for name, args := range map[string]map[string]interface{}{
		"channel":        {"c": make(chan int)},
		"function":       {"f": func() {}},
		"NaN":            {"n": math.NaN()},
		"infinity":       {"n": math.Inf(1)},
		"invalid number": {"n": json.Number("abc")},
		"complex":        {"c": complex(1, 2)},
	} {
		got, err := k.Unique("x", args)
		if err == nil {
			t.Errorf("%s: unique = %q, want an error", name, got)
		}
		if got != "" {
			t.Errorf("%s: unique returned %q with its error", name, got)
		}
	}
}

// gocraftUniqueKey is gocraft/work's redisKeyUniqueJob, kept here as the reference.
func gocraftUniqueKey(t testing.TB, namespace, jobName string, args map[string]interface{}) string {
	t.Helper()
	var buf bytes.Buffer
	if l := len(namespace); l > 0 && namespace[l-1] != ':' {
		namespace += ":"
	}
	buf.WriteString(namespace)
	buf.WriteString("unique:")
	buf.WriteString(jobName)
	buf.WriteRune(':')
	if args != nil {
		if err := json.NewEncoder(&buf).Encode(args); err != nil {
			t.Fatalf("reference encoding of %v: %v", args, err)
		}
	}
	return buf.String()
}
