package work

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/workqueue/work/internal/rdb"
)

// Keyed jobs: one job name shared by many parties (tenants, accounts, domains). A job enqueued with
// a key (EnqueueOptions.Key, BatchJob.Key, ChainStep.Key) waits in a queue of its key rather than in
// its name's queue, and the pools serve the keys of a name that have jobs waiting in turn, so that a
// key with a hundred thousand jobs waiting delays another key's next job by one turn at most, however
// many pools there are. Per job name, JobOptions.KeyConcurrency bounds how many jobs of one key run at
// once (1: one after another, in the order they were enqueued), KeyRateLimit how many start per
// period, and KeyMaxWaiting how many may wait; Client.SetKeyLimits overrides them for one key and
// gives it a weight (more turns), and Client.PauseKey stops one key. MaxConcurrency and RateLimit of
// the name still hold over all its jobs, keyed or not. Jobs without a key are served as ever.
//
// A key with no job waiting or running keeps no state in Redis (only its overrides, until they are
// cleared), so a name may have millions of keys; picking the next key costs O(log n) in the number
// of keys with jobs ready. The layout is in docs/redis-layout.md.
//
// Ordering: a key's jobs start in the order they were enqueued. A job that fails goes to the retry
// set and, when due, to the back of its key's queue, as a failed job without a key goes to the back
// of its name's queue; the key's next jobs run meanwhile. With JobOptions.KeyRetryInOrder the key
// keeps the failed job's place instead: the job holds its concurrency slot while it waits for its
// retry (with KeyConcurrency 1 nothing else of the key runs) and goes back to the front of the key's
// queue when due.

// MaxKeyLen is the longest key, in bytes.
const MaxKeyLen = 200

// checkKey returns an error for a key that cannot be used.
func checkKey(key string) error {
	bad := ""
	switch {
	case key == "":
		bad = "empty"
	case len(key) > MaxKeyLen:
		bad = fmt.Sprintf("%d bytes, more than %d", len(key), MaxKeyLen)
	case !utf8.ValidString(key):
		bad = "not valid UTF-8"
	case strings.ContainsAny(key, "{}"):
		bad = "it holds a brace"
	default:
		for _, r := range key {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
				bad = "it holds a control character"
				break
			}
		}
	}
	if bad != "" {
		return fmt.Errorf("%w %q: %s", ErrMalformedKey, rdb.TruncateKey(key), bad)
	}
	return nil
}

// KeyNoLimit in a field of KeyLimits lifts the job name's limit for the key.
const KeyNoLimit = -1

// KeyLimits are one key's overrides of its job name's per-key settings (Client.SetKeyLimits); a zero
// field keeps the job name's setting.
type KeyLimits struct {
	// Concurrency overrides JobOptions.KeyConcurrency: at most this many jobs of the key run at once
	// (KeyNoLimit: no limit).
	Concurrency int `json:"concurrency,omitempty"`
	// RateLimit overrides JobOptions.KeyRateLimit when its Jobs is positive.
	RateLimit RateLimit `json:"rate_limit,omitempty"`
	// Weight is how many turns the key gets for another key's one while both have jobs waiting
	// (0: 1).
	Weight int `json:"weight,omitempty"`
	// MaxWaiting overrides JobOptions.KeyMaxWaiting (KeyNoLimit: no limit).
	MaxWaiting int `json:"max_waiting,omitempty"`
}

func (l KeyLimits) check() error {
	for _, c := range [...]struct {
		what string
		n    int
	}{{"concurrency", l.Concurrency}, {"max waiting", l.MaxWaiting}} {
		if c.n < KeyNoLimit || c.n > MaxKeyLimit {
			return fmt.Errorf("%w: key %s %d: a count up to %d, 0 (the job name's) or KeyNoLimit", ErrMalformedLimit, c.what, c.n, MaxKeyLimit)
		}
	}
	if l.Weight < 0 || l.Weight > MaxKeyWeight {
		return fmt.Errorf("%w: key weight %d: 1 to %d, or 0 for the default, 1", ErrMalformedLimit, l.Weight, MaxKeyWeight)
	}
	if (l.RateLimit.Jobs > 0) != (l.RateLimit.Period > 0) {
		return fmt.Errorf("%w: key rate limit %d per %v: give both jobs and a period, or neither", ErrMalformedRate, l.RateLimit.Jobs, l.RateLimit.Period)
	}
	return nil
}

// MaxKeyWeight bounds a key's weight: a turn of the key takes up to weight jobs at once.
const MaxKeyWeight = 1000

// KeyInfo is what Client.Keys and Client.Key report about one key of a job name.
type KeyInfo struct {
	Key     string `json:"key"`
	Waiting int64  `json:"waiting"` // jobs in the key's queue
	Running int64  `json:"running"` // jobs of the key fetched by a pool and not finished
	Paused  bool   `json:"paused"`
	// Limits are the key's overrides (Client.SetKeyLimits); zero fields: the job name's settings.
	Limits KeyLimits `json:"limits"`
}

// KeyStat sums up the keyed jobs of one job name (Client.KeyStats); metrics export it without a
// label per key.
type KeyStat struct {
	JobName     string `json:"job_name"`
	Waiting     int64  `json:"waiting"`      // keyed jobs waiting, over all keys
	WaitingKeys int64  `json:"waiting_keys"` // keys with jobs waiting
	RunningKeys int64  `json:"running_keys"` // keys with jobs running
	Running     int64  `json:"running"`      // keyed jobs running
	// LargestBacklog is the most jobs one key has waiting, and LargestBacklogKey that key.
	LargestBacklog    int64  `json:"largest_backlog"`
	LargestBacklogKey string `json:"largest_backlog_key,omitempty"`
	PausedKeys        int64  `json:"paused_keys"`
	OverriddenKeys    int64  `json:"overridden_keys"` // keys with limits of their own
}
