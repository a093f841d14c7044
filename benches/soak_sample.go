package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	redigo "github.com/gomodule/redigo/redis"
)

// soakSampler reads, on a connection of its own, what Redis holds for a namespace.
type soakSampler struct {
	conn   redigo.Conn
	prefix string
}

func newSoakSampler(addr, namespace string) (*soakSampler, error) {
	c, err := redigo.Dial("tcp", addr, redigo.DialConnectTimeout(5*time.Second), redigo.DialReadTimeout(30*time.Second))
	if err != nil {
		return nil, err
	}
	prefix := namespace
	if prefix != "" && !strings.HasSuffix(prefix, ":") {
		prefix += ":"
	}
	return &soakSampler{conn: c, prefix: prefix}, nil
}

func (s *soakSampler) close() { s.conn.Close() }

// info returns the fields of an INFO section.
func (s *soakSampler) info(section string) (map[string]string, error) {
	txt, err := redigo.String(s.conn.Do("INFO", section))
	if err != nil {
		return nil, err
	}
	m := make(map[string]string)
	for _, line := range strings.Split(txt, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = v
		}
	}
	return m, nil
}

// redisCPU is the server's used_cpu_sys + used_cpu_user, seconds (0 when INFO fails).
func (s *soakSampler) redisCPU() float64 {
	m, err := s.info("cpu")
	if err != nil {
		return 0
	}
	a, _ := strconv.ParseFloat(m["used_cpu_sys"], 64)
	b, _ := strconv.ParseFloat(m["used_cpu_user"], 64)
	return a + b
}

// scanPrefix returns every key that starts with prefix, once each, found by SCAN (which may return a
// key twice, and never misses one that exists throughout). The prefix is matched here rather than by
// a MATCH pattern, which would need its glob characters escaped; the harness's Redis holds nothing
// else, the test's little else.
func scanPrefix(do redisDo, prefix string) ([]string, error) {
	keys := make(map[string]struct{})
	cursor := "0"
	for {
		r, err := redigo.Values(do("SCAN", cursor, "COUNT", 1000))
		if err != nil {
			return nil, err
		}
		if len(r) != 2 {
			return nil, fmt.Errorf("SCAN: a reply of %d elements", len(r))
		}
		cursor, _ = redigo.String(r[0], nil)
		ks, _ := redigo.Strings(r[1], nil)
		for _, k := range ks {
			if strings.HasPrefix(k, prefix) {
				keys[k] = struct{}{}
			}
		}
		if cursor == "0" {
			break
		}
	}
	list := make([]string, 0, len(keys))
	for k := range keys {
		list = append(list, k)
	}
	return list, nil
}

// sample counts the namespace's keys by family (classifyKey) and the sizes of the sets, lists and
// hashes that can grow, and reads the server's memory and clients.
func (s *soakSampler) sample() (map[string]float64, error) {
	out := make(map[string]float64)
	mem, err := s.info("memory")
	if err != nil {
		return nil, err
	}
	used, err := strconv.ParseFloat(mem["used_memory"], 64)
	if err != nil {
		return nil, fmt.Errorf("INFO memory: used_memory %q", mem["used_memory"])
	}
	out["mem"] = used / (1 << 20)
	if v, err := strconv.ParseFloat(mem["number_of_cached_scripts"], 64); err == nil { // Redis 7
		out["scripts"] = v
	}
	if cl, err := s.info("clients"); err == nil {
		if v, err := strconv.ParseFloat(cl["connected_clients"], 64); err == nil {
			out["clients"] = v
		}
	}

	list, err := scanPrefix(s.conn.Do, s.prefix)
	if err != nil {
		return nil, err
	}
	// Each key's TTL, and the size of each key that holds many elements, in one pipeline.
	type sizeOf struct {
		series string
		cmd    string
		key    string
	}
	var sizes []sizeOf
	for _, f := range soakFamilies {
		out[f.key] = 0
	}
	for _, k := range []string{"no_ttl", "records_live", "records_day", "queued", "in_progress", "stats_fields", "lock_info_fields",
		"keyed_queued", "keyed_in_progress", "keyed_ready", "keyed_waiting_keys", "keyed_delayed", "keyed_running_keys", "keyed_conf_fields"} {
		out[k] = 0
	}
	for _, k := range list {
		fam := classifyKey(s.prefix, k)
		out[fam]++
		switch fam {
		case famQueue:
			sizes = append(sizes, sizeOf{"queued", "LLEN", k})
		case famInProgress:
			sizes = append(sizes, sizeOf{"in_progress", "LLEN", k})
		case famStats:
			sizes = append(sizes, sizeOf{"stats_fields", "HLEN", k})
		case famQueueState:
			if strings.HasSuffix(k, ":lock_info") {
				sizes = append(sizes, sizeOf{"lock_info_fields", "HLEN", k})
			}
		case famKeyedQueue:
			sizes = append(sizes, sizeOf{"keyed_queued", "LLEN", k})
		case famKeyedInProgress:
			sizes = append(sizes, sizeOf{"keyed_in_progress", "LLEN", k})
		case famKeyedState:
			if sz, ok := keyedStateSizes[k[strings.LastIndexByte(k, ':')+1:]]; ok {
				sizes = append(sizes, sizeOf{sz.series, sz.cmd, k})
			}
		}
	}
	for _, z := range []struct{ series, key string }{{"scheduled", "scheduled"}, {"retry", "retry"}, {"dead", "dead"},
		{"batch_index", "batches"}, {"batch_expiry", "batches_expiry"}} {
		sizes = append(sizes, sizeOf{z.series, "ZCARD", s.prefix + z.key})
	}
	sizes = append(sizes, sizeOf{"known_jobs", "SCARD", s.prefix + "known_jobs"}, sizeOf{"pool_ids", "SCARD", s.prefix + "worker_pools"})
	for _, k := range list {
		if err := s.conn.Send("PTTL", k); err != nil {
			return nil, err
		}
	}
	for _, sz := range sizes {
		if err := s.conn.Send(sz.cmd, sz.key); err != nil {
			return nil, err
		}
	}
	if err := s.conn.Flush(); err != nil {
		return nil, err
	}
	var gone float64
	for _, k := range list {
		ttl, err := redigo.Int64(s.conn.Receive())
		if err != nil {
			return nil, err
		}
		switch {
		case ttl == -2: // expired or deleted since the SCAN
			gone++
			out[classifyKey(s.prefix, k)]--
		case ttl == -1:
			out["no_ttl"]++
			if classifyKey(s.prefix, k) == famRecord {
				out["records_live"]++
			}
		case classifyKey(s.prefix, k) == famRecord && ttl > time.Hour.Milliseconds():
			out["records_day"]++
		}
	}
	for _, sz := range sizes {
		n, err := redigo.Int64(s.conn.Receive())
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", sz.cmd, sz.key, err)
		}
		out[sz.series] += float64(n)
	}
	out["keys"] = float64(len(list)) - gone
	// Records split by what keeps them: kept a short while (Keep, KeepFinished), kept a day
	// (EnqueueChain), or not ended yet (no TTL).
	out["records_short"] = out[famRecord] - out["records_day"] - out["records_live"]
	return out, nil
}

// Key families of a namespace (docs/redis-layout.md), as classifyKey names them.
const (
	famQueue           = "queues"              // <ns>:jobs:<name>
	famInProgress      = "in_progress_l"       // <ns>:jobs:<name>:<poolID>:inprogress
	famQueueState      = "queue_state"         // <ns>:jobs:<name>:paused|lock|lock_info|max_concurrency|rate
	famSingleton       = "singletons"          // scheduled, retry, dead, batches, batches_expiry, known_jobs, worker_pools, last_periodic_enqueue, dead_trimmed
	famHeartbeat       = "heartbeats"          // <ns>:worker_pools:<poolID>
	famWorker          = "workers"             // <ns>:worker:<workerID>
	famUnique          = "unique_locks"        // <ns>:unique:<name>:<args>
	famStats           = "stats"               // <ns>:stats:<name>:<day>
	famRecord          = "records"             // <ns>:job:<id>
	famRecordNext      = "record_next"         // <ns>:job:<id>:next
	famBatch           = "batch_hashes"        // <ns>:batch:<id>
	famBatchNext       = "batch_next"          // <ns>:batch:<id>:next
	famKeyedState      = "keyed_state"         // <ns>:keyed:<name>:ready|waiting|running|delayed|conf|meta|lane
	famKeyedQueue      = "keyed_queues"        // <ns>:keyed:<name>:{<key>}
	famKeyedRate       = "keyed_rate"          // <ns>:keyed:<name>:{<key>}:rate
	famKeyedInProgress = "keyed_in_progress_l" // <ns>:keyed:<name>:<poolID>:inprogress
	famHandOff         = "hand_off"            // <ns>:idle_pools:<name>, <ns>:handoffs:<poolID>, <ns>:quiet:<poolID>
	famOther           = "other"               // anything else under the namespace
	statsKeyPrefix     = "stats:"
)

// keyedStateSizes are the series that add up the sizes of a keyed job name's state keys, by the
// key's last part, and the command that reads each size.
var keyedStateSizes = map[string]struct{ series, cmd string }{
	"ready":   {"keyed_ready", "ZCARD"},
	"waiting": {"keyed_waiting_keys", "ZCARD"},
	"delayed": {"keyed_delayed", "ZCARD"},
	"running": {"keyed_running_keys", "HLEN"},
	"conf":    {"keyed_conf_fields", "HLEN"},
}

// keyedStateKeys are the last parts of a keyed job name's state keys: its per-name keys.
var keyedStateKeys = map[string]bool{"ready": true, "waiting": true, "running": true, "delayed": true, "conf": true, "meta": true, "lane": true}

// soakFamilies are the key families, in the order of the tables.
var soakFamilies = []struct{ key string }{
	{famQueue}, {famInProgress}, {famQueueState}, {famSingleton}, {famHeartbeat}, {famWorker}, {famUnique},
	{famStats}, {famRecord}, {famRecordNext}, {famBatch}, {famBatchNext},
	{famKeyedState}, {famKeyedQueue}, {famKeyedRate}, {famKeyedInProgress}, {famHandOff}, {famOther},
}

var queueStateSuffixes = []string{":paused", ":lock", ":lock_info", ":max_concurrency", ":rate"}

var singletonKeys = map[string]bool{"scheduled": true, "retry": true, "dead": true, "batches": true, "batches_expiry": true,
	"known_jobs": true, "worker_pools": true, "last_periodic_enqueue": true, "dead_trimmed": true}

// classifyKey names the family of a key of the namespace whose prefix (with its colon) is prefix.
// Job names are taken to hold no colon, as the soak's do.
func classifyKey(prefix, key string) string {
	k, ok := strings.CutPrefix(key, prefix)
	if !ok {
		return famOther
	}
	switch {
	case singletonKeys[k]:
		return famSingleton
	case strings.HasPrefix(k, "jobs:"):
		rest := strings.TrimPrefix(k, "jobs:")
		if strings.HasSuffix(rest, ":inprogress") && strings.Count(rest, ":") == 2 {
			return famInProgress
		}
		for _, suf := range queueStateSuffixes {
			if strings.HasSuffix(rest, suf) && strings.Count(rest, ":") == 1 {
				return famQueueState
			}
		}
		if rest != "" && !strings.Contains(rest, ":") {
			return famQueue
		}
	case strings.HasPrefix(k, "worker_pools:"):
		return famHeartbeat
	case strings.HasPrefix(k, "worker:"):
		return famWorker
	case strings.HasPrefix(k, "idle_pools:"), strings.HasPrefix(k, "handoffs:"), strings.HasPrefix(k, "quiet:"):
		return famHandOff
	case strings.HasPrefix(k, "unique:"):
		return famUnique
	case strings.HasPrefix(k, statsKeyPrefix):
		return famStats
	case strings.HasPrefix(k, "job:"):
		if strings.HasSuffix(k, ":next") {
			return famRecordNext
		}
		return famRecord
	case strings.HasPrefix(k, "batch:"):
		if strings.HasSuffix(k, ":next") {
			return famBatchNext
		}
		return famBatch
	case strings.HasPrefix(k, "keyed:"):
		return classifyKeyed(strings.TrimPrefix(k, "keyed:"))
	}
	return famOther
}

// classifyKeyed names the family of a key of keyed jobs, given what follows <ns>:keyed:. A key of
// a job's key holds it between braces, which keys may not contain.
func classifyKeyed(rest string) string {
	name, tail, ok := strings.Cut(rest, ":")
	if !ok || name == "" {
		return famOther
	}
	if keyedStateKeys[tail] {
		return famKeyedState
	}
	if strings.HasPrefix(tail, "{") {
		end := strings.IndexByte(tail, '}')
		switch {
		case end < 2: // no closing brace, or an empty key
			return famOther
		case tail[end+1:] == "":
			return famKeyedQueue
		case tail[end+1:] == ":rate":
			return famKeyedRate
		}
		return famOther
	}
	if pool, suf, ok := strings.Cut(tail, ":"); ok && pool != "" && suf == "inprogress" {
		return famKeyedInProgress
	}
	return famOther
}
