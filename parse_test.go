package work

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want RateLimit
		ok   bool
	}{
		{"", RateLimit{}, true},
		{"0", RateLimit{}, true},
		{"10/1m", RateLimit{Jobs: 10, Period: time.Minute}, true},
		{" 10 / 1m ", RateLimit{Jobs: 10, Period: time.Minute}, true},
		{"5/s", RateLimit{Jobs: 5, Period: time.Second}, true},
		{"100/h", RateLimit{Jobs: 100, Period: time.Hour}, true},
		{"1/1h30m", RateLimit{Jobs: 1, Period: 90 * time.Minute}, true},
		{"3/500ms", RateLimit{Jobs: 3, Period: 500 * time.Millisecond}, true},
		{"3/.5s", RateLimit{Jobs: 3, Period: 500 * time.Millisecond}, true},
		{"10", RateLimit{}, false},
		{"10/", RateLimit{}, false},
		{"/1m", RateLimit{}, false},
		{"0/1m", RateLimit{}, false},
		{"-1/1m", RateLimit{}, false},
		{"10/1us", RateLimit{}, false},
		{"10/-1m", RateLimit{}, false},
		{"10/0s", RateLimit{}, false},
		{"10/soon", RateLimit{}, false},
		{"99999999999/1m", RateLimit{}, false},
	} {
		got, err := ParseRate(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseRate(%q) = %+v, %v", tc.in, got, err)
		}
		if err != nil && !errors.Is(err, ErrMalformedRate) {
			t.Errorf("ParseRate(%q): %v, want ErrMalformedRate", tc.in, err)
		}
	}
}

func TestParseKeyLimitAndWeight(t *testing.T) {
	for in, want := range map[string]int{"": 0, "0": 0, "7": 7, " 7 ": 7, "none": KeyNoLimit, "-1": KeyNoLimit, "1073741824": MaxKeyLimit} {
		if got, err := ParseKeyLimit(in); err != nil || got != want {
			t.Errorf("ParseKeyLimit(%q) = %d, %v", in, got, err)
		}
	}
	for _, in := range []string{"-2", "x", "1.5", "1e3", "None", "99999999999", "1073741825"} {
		if _, err := ParseKeyLimit(in); !errors.Is(err, ErrMalformedLimit) {
			t.Errorf("ParseKeyLimit(%q): %v, want ErrMalformedLimit", in, err)
		}
	}
	for in, want := range map[string]int{"": 0, "0": 0, "1": 1, " 3 ": 3, "1000": MaxKeyWeight} {
		if got, err := ParseKeyWeight(in); err != nil || got != want {
			t.Errorf("ParseKeyWeight(%q) = %d, %v", in, got, err)
		}
	}
	for _, in := range []string{"-1", "1001", "x", "none"} {
		if _, err := ParseKeyWeight(in); !errors.Is(err, ErrMalformedLimit) {
			t.Errorf("ParseKeyWeight(%q): %v, want ErrMalformedLimit", in, err)
		}
	}
	// What the parsers accept, the library accepts; what KeyLimits refuses carries the sentinels.
	for _, l := range []KeyLimits{{Concurrency: MaxKeyLimit + 1}, {MaxWaiting: -2}, {Weight: MaxKeyWeight + 1}, {Weight: -1}} {
		if err := l.check(); !errors.Is(err, ErrMalformedLimit) {
			t.Errorf("%+v: %v, want ErrMalformedLimit", l, err)
		}
	}
	if err := (KeyLimits{RateLimit: RateLimit{Jobs: 3}}).check(); !errors.Is(err, ErrMalformedRate) {
		t.Errorf("a rate without a period: %v, want ErrMalformedRate", err)
	}
	if err := (KeyLimits{Concurrency: MaxKeyLimit, MaxWaiting: KeyNoLimit, Weight: MaxKeyWeight}).check(); err != nil {
		t.Errorf("the largest limits: %v", err)
	}
}

func TestParseArgs(t *testing.T) {
	for in, want := range map[string]string{
		"":                                       "null",
		"null":                                   "null",
		" {} ":                                   "{}",
		`{"id": 12345678901234567890, "s": "x"}`: `{"id":12345678901234567890,"s":"x"}`,
	} {
		args, err := ParseArgs(in)
		if err != nil {
			t.Errorf("ParseArgs(%q): %v", in, err)
			continue
		}
		if b, _ := json.Marshal(args); string(b) != want {
			t.Errorf("ParseArgs(%q) = %s, want %s", in, b, want)
		}
	}
	for _, in := range []string{"[1]", "{", `{"a":1} {}`, "7", `"x"`, "{'a':1}"} {
		if _, err := ParseArgs(in); !errors.Is(err, ErrMalformedArgs) {
			t.Errorf("ParseArgs(%q): %v, want ErrMalformedArgs", in, err)
		}
	}
}

func TestChecksRefuseWithSentinels(t *testing.T) {
	for _, name := range []string{"", "x:lock", "x:lock_info", "x:max_concurrency", "x:paused", "x:rate"} {
		if err := CheckJobName(name); !errors.Is(err, ErrMalformedJobName) {
			t.Errorf("CheckJobName(%q): %v, want ErrMalformedJobName", name, err)
		}
	}
	for _, name := range []string{"a", "x:lockx", "lock", "x:rate:y", "é"} {
		if err := CheckJobName(name); err != nil {
			t.Errorf("CheckJobName(%q): %v", name, err)
		}
	}
	for _, id := range []string{"", "a b", "a/b", strings.Repeat("z", 65), "é"} {
		if err := CheckID(id); !errors.Is(err, ErrMalformedID) {
			t.Errorf("CheckID(%q): %v, want ErrMalformedID", id, err)
		}
	}
	if err := CheckKey("a{b"); !errors.Is(err, ErrMalformedKey) {
		t.Errorf("CheckKey: %v, want ErrMalformedKey", err)
	}
	// Every enqueue refuses a bad name with the sentinel.
	e := &Enqueuer{}
	if _, err := e.EnqueueWith("x:lock", nil, EnqueueOptions{}); !errors.Is(err, ErrMalformedJobName) {
		t.Errorf("EnqueueWith: %v, want ErrMalformedJobName", err)
	}
	if _, err := e.EnqueueBatch([]BatchJob{{Name: ""}}); !errors.Is(err, ErrMalformedJobName) {
		t.Errorf("EnqueueBatch: %v, want ErrMalformedJobName", err)
	}
	if _, err := e.EnqueueChain(ChainStep{Name: "ok"}, ChainStep{Name: "y:paused"}); !errors.Is(err, ErrMalformedJobName) {
		t.Errorf("EnqueueChain: %v, want ErrMalformedJobName", err)
	}
	if _, err := e.EnqueueWith("ok", nil, EnqueueOptions{After: []string{"a b"}}); !errors.Is(err, ErrMalformedID) {
		t.Errorf("EnqueueWith After: %v, want ErrMalformedID", err)
	}
}
