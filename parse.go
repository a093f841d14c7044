package work

// What the library refuses, in one place: the rules of job names, keys, IDs and schedule IDs, and
// the one parser of the text forms of its settings (a rate "10/1m", a per-key limit or weight, job
// args as JSON, a missed-tick policy; a cron spec and its time zone in cron.go). They are exported so that the command line and the web UI
// check their input as the library does, before any round trip, rather than repeat its rules; each
// refusal wraps one of the sentinel errors below, which errors.Is tells apart from other failures.

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/workqueue/work/internal/rdb"
)

// CheckJobName returns an error wrapping ErrMalformedJobName for a name no job may have, and nil for
// every name the library accepts.
func CheckJobName(name string) error { return checkJobName(name) }

// CheckKey returns an error wrapping ErrMalformedKey for a key no keyed job may have (see
// EnqueueOptions.Key), and nil for every key the library accepts.
func CheckKey(key string) error { return checkKey(key) }

// CheckID returns an error wrapping ErrMalformedID for an ID that no batch, and no job with a record,
// can have.
func CheckID(id string) error { return checkBatchID(id) }

// errEmptyJobName is returned for an empty job name: such a job could never be processed.
var errEmptyJobName = fmt.Errorf("%w: it is empty", ErrMalformedJobName)

// checkJobName returns an error for a job name that cannot be used.
func checkJobName(name string) error {
	if name == "" {
		return errEmptyJobName
	}
	if suf := rdb.ReservedNameSuffix(name); suf != "" {
		return fmt.Errorf("%w %q: it ends in %q, which names another job's key in the Redis layout", ErrMalformedJobName, name, suf)
	}
	return nil
}

// idPattern is what a batch ID, or the ID of a job with a record, may be: it names Redis keys and is
// written into payloads.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// checkBatchID returns an error for a batch (or job) ID that cannot be used.
func checkBatchID(id string) error {
	if !idPattern.MatchString(id) {
		return fmt.Errorf("%w %q: 1 to 64 letters, digits, '_', '.' or '-'", ErrMalformedID, id)
	}
	return nil
}

// ParseRate reads a rate as jobs per period: "10/1m", "5/s" or "3/500ms" (a unit alone is one of it;
// the period is a time.ParseDuration of at least a millisecond); spaces around the parts are
// ignored. "" and "0" are the zero RateLimit: no rate of its own (for a key's override, the job
// name's). Anything else returns an error wrapping ErrMalformedRate.
func ParseRate(s string) (RateLimit, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "0" {
		return RateLimit{}, nil
	}
	jobs, per, ok := strings.Cut(s, "/")
	n, err := strconv.ParseUint(strings.TrimSpace(jobs), 10, 32)
	per = strings.TrimSpace(per)
	if per != "" && !strings.ContainsAny(per[:1], "0123456789.") {
		per = "1" + per
	}
	d, derr := time.ParseDuration(per)
	if !ok || err != nil || derr != nil || n == 0 || d < time.Millisecond {
		return RateLimit{}, fmt.Errorf("%w %q: want jobs per period, as 10/1m or 5/s, of at least 1 job per 1ms", ErrMalformedRate, s)
	}
	return RateLimit{Jobs: uint(n), Period: d}, nil
}

// MaxKeyLimit is the largest count a key's override may hold (KeyLimits.Concurrency, MaxWaiting).
const MaxKeyLimit = 1 << 30

// ParseKeyLimit reads a key's concurrency or max-waiting override (KeyLimits): a count up to
// MaxKeyLimit; "" or "0" for the job name's setting; "none" or "-1" for no limit (KeyNoLimit).
// Anything else returns an error wrapping ErrMalformedLimit.
func ParseKeyLimit(s string) (int, error) {
	switch s = strings.TrimSpace(s); s {
	case "":
		return 0, nil
	case "none":
		return KeyNoLimit, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < KeyNoLimit || n > MaxKeyLimit {
		return 0, fmt.Errorf("%w %q: want a number of jobs up to %d, 0 for the job name's setting, or none (-1) for no limit",
			ErrMalformedLimit, s, MaxKeyLimit)
	}
	return n, nil
}

// ParseKeyWeight reads a key's weight (KeyLimits.Weight): 1 to MaxKeyWeight, or "" or "0" for the
// default, 1. Anything else returns an error wrapping ErrMalformedLimit.
func ParseKeyWeight(s string) (int, error) {
	if s = strings.TrimSpace(s); s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > MaxKeyWeight {
		return 0, fmt.Errorf("%w %q: a weight is 1 to %d, or 0 for the default, 1", ErrMalformedLimit, s, MaxKeyWeight)
	}
	return n, nil
}

// ParseArgs reads job args from JSON text: an object, or null (or nothing) for no args. Numbers are
// kept as json.Number, so that an integer of any size reaches the job as written. Anything else
// returns an error wrapping ErrMalformedArgs.
func ParseArgs(s string) (map[string]interface{}, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var args map[string]interface{}
	err := d.Decode(&args)
	if err == nil && d.More() {
		err = errors.New("text after the object")
	}
	if err != nil {
		return nil, fmt.Errorf("%w: want a JSON object, as {\"id\": 7}: %v", ErrMalformedArgs, err)
	}
	return args, nil
}

// CheckScheduleID returns an error wrapping ErrMalformedSchedule for an ID no schedule can have.
func CheckScheduleID(id string) error {
	bad := ""
	switch {
	case id == "":
		bad = "empty"
	case len(id) > MaxScheduleIDLen:
		bad = fmt.Sprintf("%d bytes, more than %d", len(id), MaxScheduleIDLen)
	case !utf8.ValidString(id):
		bad = "not valid UTF-8"
	default:
		for _, r := range id {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
				bad = "it holds a control character"
				break
			}
		}
	}
	if bad != "" {
		return fmt.Errorf("%w: ID %q: %s", ErrMalformedSchedule, rdb.TruncateKey(id), bad)
	}
	return nil
}

// ParseMissedPolicy reads "skip" (or "") and "run-latest"; anything else returns an error wrapping
// ErrMalformedSchedule.
func ParseMissedPolicy(s string) (MissedPolicy, error) {
	switch strings.TrimSpace(s) {
	case "", "skip":
		return MissedSkip, nil
	case "run-latest":
		return MissedRunLatest, nil
	}
	return 0, fmt.Errorf("%w: missed policy %q: want skip or run-latest", ErrMalformedSchedule, s)
}
