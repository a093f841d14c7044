package work

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/workqueue/work/internal/rdb"
)

// keysPerPage is the page size of Client.Keys.
const keysPerPage = 20

// Keys returns a page (1-based, 20 per page) of the keys of a job name that have jobs waiting or
// running, and how many there are: first the keys with jobs waiting, the largest backlog first, then
// those with jobs running only. Each key's counts and overrides are read in the same round trip, so
// a page costs three round trips whatever the number of keys, unless keys have jobs in the lane (keys
// that got one job at a time, without limits; docs/redis-layout.md): then every key with jobs
// waiting is read and ranked, in steps of 1,000.
func (c *Client) Keys(jobName string, page uint) ([]*KeyInfo, int64, error) {
	if err := checkJobName(jobName); err != nil {
		return nil, 0, err
	}
	if page == 0 {
		page = 1
	}
	ctx := context.Background()
	start := int64(page-1) * keysPerPage
	keys, waitingKeys, runningOnly, err := c.store.KeysByBacklog(ctx, jobName, start, start+keysPerPage-1)
	if err != nil {
		return nil, 0, err
	}
	total := waitingKeys + int64(len(runningOnly))
	// The page's remainder, once past the keys with jobs waiting, comes from those running only.
	if len(keys) < keysPerPage && start+int64(len(keys)) >= waitingKeys {
		from := max(start-waitingKeys, 0)
		for i := from; i < int64(len(runningOnly)) && len(keys) < keysPerPage; i++ {
			keys = append(keys, runningOnly[i])
		}
	}
	if len(keys) == 0 {
		return nil, total, nil
	}
	states, err := c.store.KeyStates(ctx, jobName, keys)
	if err != nil {
		return nil, 0, err
	}
	out := make([]*KeyInfo, len(states))
	for i := range states {
		out[i] = keyInfo(&states[i])
	}
	return out, total, nil
}

// Key returns one key of a job name: its jobs waiting and running, whether it is paused and its
// overrides (all zero for a key that has none of them).
func (c *Client) Key(jobName, key string) (*KeyInfo, error) {
	if err := checkJobName(jobName); err != nil {
		return nil, err
	}
	if err := checkKey(key); err != nil {
		return nil, err
	}
	states, err := c.store.KeyStates(context.Background(), jobName, []string{key})
	if err != nil {
		return nil, err
	}
	return keyInfo(&states[0]), nil
}

// info turns what Redis holds of a key into a KeyInfo.
func keyInfo(st *rdb.KeyState) *KeyInfo {
	k := &KeyInfo{Key: st.Key, Waiting: st.Waiting, Running: st.Running, Paused: st.Conf[0] != ""}
	k.Limits.Concurrency, _ = strconv.Atoi(st.Conf[1])
	k.Limits.RateLimit = parseKeyRate(st.Conf[2])
	k.Limits.Weight, _ = strconv.Atoi(st.Conf[3])
	k.Limits.MaxWaiting, _ = strconv.Atoi(st.Conf[4])
	return k
}

// parseKeyRate reads a rate override, "<jobs>/<period ms>"; the zero RateLimit for anything else.
func parseKeyRate(s string) RateLimit {
	jobs, period, ok := strings.Cut(s, "/")
	if !ok {
		return RateLimit{}
	}
	j, err1 := strconv.ParseUint(jobs, 10, 32)
	p, err2 := strconv.ParseInt(period, 10, 64)
	if err1 != nil || err2 != nil || j == 0 || p <= 0 {
		return RateLimit{}
	}
	return RateLimit{Jobs: uint(j), Period: time.Duration(p) * time.Millisecond}
}

// PauseKey stops the pools from starting jobs of one key of a job name until UnpauseKey; its jobs
// keep waiting, and more may be enqueued. Jobs of the key already running finish.
func (c *Client) PauseKey(jobName, key string) error {
	return c.keyControl(jobName, key, "pause", [4]string{})
}

// UnpauseKey resumes a key paused with PauseKey: its jobs are served again at once.
func (c *Client) UnpauseKey(jobName, key string) error {
	return c.keyControl(jobName, key, "unpause", [4]string{})
}

// SetKeyLimits overrides the per-key settings of a job name for one key (a customer on a larger
// plan runs more jobs at once, say), across all pools, until ClearKeyLimits; a zero field keeps the
// job name's setting. It replaces the key's earlier overrides.
func (c *Client) SetKeyLimits(jobName, key string, l KeyLimits) error {
	if err := l.check(); err != nil {
		return err
	}
	var vals [4]string
	if l.Concurrency != 0 {
		vals[0] = strconv.Itoa(l.Concurrency)
	}
	if l.RateLimit.Jobs > 0 {
		vals[1] = strconv.FormatUint(uint64(l.RateLimit.Jobs), 10) + "/" + strconv.FormatInt(max(l.RateLimit.Period.Milliseconds(), 1), 10)
	}
	if l.Weight > 0 {
		vals[2] = strconv.Itoa(l.Weight)
	}
	if l.MaxWaiting != 0 {
		vals[3] = strconv.Itoa(l.MaxWaiting)
	}
	return c.keyControl(jobName, key, "set", vals)
}

// ClearKeyLimits removes a key's overrides: the job name's settings apply to it again.
func (c *Client) ClearKeyLimits(jobName, key string) error {
	return c.keyControl(jobName, key, "clear", [4]string{})
}

func (c *Client) keyControl(jobName, key, op string, vals [4]string) error {
	if err := checkJobName(jobName); err != nil {
		return err
	}
	if err := checkKey(key); err != nil {
		return err
	}
	return c.store.KeyControl(context.Background(), jobName, key, op, vals)
}

// KeyStats sums up the keyed jobs of every job name that has had some: jobs and keys waiting and
// running, the largest backlog of one key, and the keys paused or with overrides: three round trips,
// whatever the number of keys.
func (c *Client) KeyStats() ([]*KeyStat, error) {
	ctx := context.Background()
	names, err := c.store.KeyedNames(ctx)
	if err != nil || len(names) == 0 {
		return nil, err
	}
	sums, err := c.store.KeyedSummaries(ctx, names)
	if err != nil {
		return nil, err
	}
	out := make([]*KeyStat, len(names))
	for i, name := range names {
		s := &sums[i]
		out[i] = &KeyStat{JobName: name, Waiting: s.Waiting, WaitingKeys: s.WaitingKeys, Running: s.Running,
			RunningKeys: s.RunningKeys, LargestBacklog: s.Largest, LargestBacklogKey: s.LargestKey,
			PausedKeys: s.PausedKeys, OverriddenKeys: s.OverriddenKeys}
	}
	return out, nil
}
