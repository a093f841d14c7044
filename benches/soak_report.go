package main

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// soakSeries is one series the soak samples.
type soakSeries struct {
	key   string
	label string
	kind  kind
	// floor is the least rise over the judged window that can count as growth, in the series' unit;
	// floorOf, when set, computes it from the run's configuration instead.
	floor   float64
	floorOf func(soakConfig) float64
	// unjudged, when set, says why the series is shown but not judged.
	unjudged string
}

// soakSeriesDefs are the soak's series, in the order of its tables. Counts are of keys unless the
// label says otherwise.
var soakSeriesDefs = []soakSeries{
	{key: "mem", label: "Redis used_memory, MiB", kind: kindSig, floor: 1},
	{key: "scripts", label: "Redis cached scripts", kind: kindRate, floor: 2},
	{key: "clients", label: "Redis connected clients", kind: kindRate, floor: 10},
	{key: "keys", label: "namespace keys", kind: kindRate, unjudged: "the families below together"},
	{key: "no_ttl", label: "  of which without a TTL", kind: kindRate, floor: 50},
	{key: famSingleton, label: "singletons (scheduled, retry, dead, batches, ...)", kind: kindRate, floor: 2},
	{key: famQueue, label: "queues <ns>:jobs:<name>", kind: kindRate, floorOf: func(soakConfig) float64 { return float64(len(soakNames)) }},
	{key: "queued", label: "  jobs in them (LLEN)", kind: kindRate, floorOf: func(c soakConfig) float64 { return float64(c.rate) }},
	{key: famInProgress, label: "in-progress lists", kind: kindRate, floor: 10},
	{key: "in_progress", label: "  jobs in them (LLEN)", kind: kindRate, floor: 50},
	{key: famQueueState, label: "queue state (lock, lock_info, max_concurrency, rate, paused)", kind: kindRate, floor: 5},
	{key: "lock_info_fields", label: "  lock_info fields (pools holding jobs)", kind: kindRate, floor: 2},
	{key: "scheduled", label: "scheduled (ZCARD)", kind: kindRate, floor: 100},
	{key: "retry", label: "retry (ZCARD)", kind: kindRate, floor: 100},
	{key: "dead", label: "dead (ZCARD)", kind: kindRate, floor: 100},
	{key: famUnique, label: "unique locks", kind: kindRate, floor: 20},
	{key: famRecord, label: "job records <ns>:job:<id>", kind: kindRate, unjudged: "the three lines below together"},
	{key: "records_short", label: "  kept a short while (Keep, KeepFinished)", kind: kindRate, floor: 50},
	{key: "records_live", label: "  without a TTL (jobs not ended)", kind: kindRate, floor: 50},
	{key: "records_day", label: "  kept a day (EnqueueChain)", kind: kindRate, unjudged: "bounded by their 24 h TTL (EnqueueChain has no Keep)"},
	{key: famRecordNext, label: "jobs waiting for a job <ns>:job:<id>:next", kind: kindRate, floor: 20},
	{key: famBatch, label: "batch hashes <ns>:batch:<id>", kind: kindRate, floor: 20},
	{key: famBatchNext, label: "jobs waiting for a batch <ns>:batch:<id>:next", kind: kindRate, floor: 20},
	{key: "batch_index", label: "batches index <ns>:batches (ZCARD)", kind: kindRate, floor: 20},
	{key: "batch_expiry", label: "batches due to leave it <ns>:batches_expiry (ZCARD)", kind: kindRate, floor: 20},
	{key: famKeyedQueue, label: "keys' queues <ns>:keyed:<name>:{<key>}", kind: kindRate, floor: 20},
	{key: "keyed_queued", label: "  jobs in them (LLEN)", kind: kindRate, floorOf: func(c soakConfig) float64 { return float64(c.rate) }},
	{key: famKeyedInProgress, label: "keyed in-progress lists <ns>:keyed:<name>:<poolID>:inprogress", kind: kindRate, floor: 10},
	{key: "keyed_in_progress", label: "  jobs in them (LLEN)", kind: kindRate, floor: 50},
	{key: famKeyedRate, label: "keys' rate limiter state <ns>:keyed:<name>:{<key>}:rate", kind: kindRate, floor: 10},
	{key: famKeyedState, label: "keyed jobs' per-name keys <ns>:keyed:<name>:ready|waiting|running|delayed|conf|meta|lane", kind: kindRate, floor: 2},
	{key: "keyed_ready", label: "  keys ready (ZCARD ready)", kind: kindRate, floor: 20},
	{key: "keyed_waiting_keys", label: "  keys with jobs waiting (ZCARD waiting)", kind: kindRate, floor: 20},
	{key: "keyed_running_keys", label: "  keys with jobs running (HLEN running)", kind: kindRate, floor: 20},
	{key: "keyed_delayed", label: "  keys past their rate (ZCARD delayed)", kind: kindRate, floor: 20},
	{key: "keyed_conf_fields", label: "  keys' overrides and pauses (HLEN conf)", kind: kindRate, floor: 5},
	{key: famHeartbeat, label: "pool heartbeats <ns>:worker_pools:<id>", kind: kindRate, floor: 2},
	{key: "pool_ids", label: "pool IDs (SCARD <ns>:worker_pools)", kind: kindRate, floor: 2},
	{key: famWorker, label: "busy workers <ns>:worker:<id>", kind: kindRate, floorOf: func(c soakConfig) float64 { return float64(c.workers) }},
	{key: "known_jobs", label: "known job names (SCARD)", kind: kindRate, floor: 2},
	// A new UTC day adds one hash per job name.
	{key: famStats, label: "stats hashes", kind: kindRate, floorOf: func(soakConfig) float64 { return float64(len(soakNames)) }},
	{key: "stats_fields", label: "  their fields", kind: kindRate, unjudged: "2 per name and minute until the UTC day ends, kept 8 days"},
	// An idle set per job name that takes hand-offs, a count per pool that was handed jobs.
	{key: famHandOff, label: "hand-off state <ns>:idle_pools:<name>, <ns>:handoffs:<poolID>, <ns>:quiet:<poolID>", kind: kindRate,
		floorOf: func(soakConfig) float64 { return float64(len(soakNames)) }},
	{key: famOther, label: "other keys", kind: kindRate, floor: 2},
	{key: "heap", label: "Go heap in use after a GC, MiB", kind: kindSig, floor: 1},
	{key: "goroutines", label: "goroutines", kind: kindRate, floor: 10},
	{key: "waiters", label: "  of which WaitJob calls under way", kind: kindRate, floor: 20},
	{key: "sent_s", label: "jobs offered/s since the previous sample", kind: kindRate, unjudged: "load"},
	{key: "runs_s", label: "job runs ended/s since the previous sample", kind: kindRate, unjudged: "load"},
}

func (s soakSeries) floorFor(cfg soakConfig) float64 {
	if s.floorOf != nil {
		return s.floorOf(cfg)
	}
	return s.floor
}

// growth is the verdict on one series over the samples after the warm-up.
type growth struct {
	n         int     // samples judged
	slope     float64 // least-squares slope, per hour
	rise      float64 // the slope times the judged window: what the fit says it grew by
	level     float64 // median of the absolute values
	threshold float64 // max(rel × level, floor)
	early     float64 // the highest of the first k samples (k = max(2, n/4))
	late      float64 // the lowest of the last k samples
	grows     bool    // rise > threshold and late > early
	noisy     bool    // rise > threshold, but the last samples do not all sit above the first ones
}

// judgeGrowth applies the soak's growth criterion to samples xs taken at ts (seconds): a series
// grows when its least-squares rise over the window (the slope times the window) exceeds both rel
// times its level (the median of its absolute values) and floor, and every one of its last k
// samples exceeds every one of its first k (k = max(2, n/4)). The thresholds say how much growth
// matters; the second part keeps a flat series with a sawtooth or spikes (queues, a set trimmed
// once a minute, the heap) from passing for growth on the luck of where its teeth or a spike fall.
// Fewer than 4 samples cannot be judged: nothing grows then.
func judgeGrowth(ts, xs []float64, rel, floor float64) growth {
	g := growth{n: len(xs)}
	if len(xs) < 4 || len(ts) != len(xs) {
		return g
	}
	var mt, mx float64
	for i := range xs {
		mt += ts[i]
		mx += xs[i]
	}
	mt /= float64(len(xs))
	mx /= float64(len(xs))
	var sxy, sxx float64
	for i := range xs {
		sxy += (ts[i] - mt) * (xs[i] - mx)
		sxx += (ts[i] - mt) * (ts[i] - mt)
	}
	if sxx == 0 {
		return g
	}
	b := sxy / sxx // per second
	g.slope = b * 3600
	g.rise = b * (ts[len(ts)-1] - ts[0])
	abs := make([]float64, len(xs))
	for i, x := range xs {
		abs[i] = math.Abs(x)
	}
	g.level, _, _ = summarize(abs)
	g.threshold = math.Max(rel*g.level, floor)
	k := max(2, len(xs)/4)
	g.early = xs[0]
	for _, x := range xs[1:k] {
		g.early = math.Max(g.early, x)
	}
	g.late = xs[len(xs)-k]
	for _, x := range xs[len(xs)-k:] {
		g.late = math.Min(g.late, x)
	}
	if g.rise > g.threshold {
		g.grows = g.late > g.early
		g.noisy = !g.grows
	}
	return g
}

// soakVerdict is a series with its verdict.
type soakVerdict struct {
	s soakSeries
	g growth
}

// verdicts judges every series present in all samples, over the samples taken at or after the
// warm-up.
func (r *soakRun) verdicts() []soakVerdict {
	var out []soakVerdict
	for _, s := range soakSeriesDefs {
		ts, xs, ok := r.series(s.key, true)
		if !ok {
			continue
		}
		v := soakVerdict{s: s}
		if s.unjudged == "" {
			v.g = judgeGrowth(ts, xs, r.cfg.growth, s.floorFor(r.cfg))
		} else {
			v.g = growth{n: len(xs)}
		}
		out = append(out, v)
	}
	return out
}

// series returns a series' samples (all of them, or those after the warm-up) and whether every
// sample has it.
func (r *soakRun) series(key string, judged bool) (ts, xs []float64, ok bool) {
	for i, s := range r.samples {
		v, has := s[key]
		if !has {
			return nil, nil, false
		}
		if judged && r.at[i] < r.cfg.warmup {
			continue
		}
		ts = append(ts, r.at[i].Seconds())
		xs = append(xs, v)
	}
	return ts, xs, len(r.samples) > 0
}

// growing lists the series that grow.
func (r *soakRun) growing() []soakVerdict {
	var out []soakVerdict
	for _, v := range r.verdicts() {
		if v.g.grows {
			out = append(out, v)
		}
	}
	return out
}

// minSec formats a sample time as m:ss.
func minSec(d time.Duration) string {
	s := int(d.Round(time.Second).Seconds())
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// tables are the soak's report: its samples, then the verdicts.
func (r *soakRun) tables() []table {
	cfg := r.cfg
	el := r.elapsed.Seconds()
	var outcomes []string
	for _, k := range []string{"done", "retry", "dead", "dropped", "snoozed"} {
		outcomes = append(outcomes, fmt.Sprintf("%s %s", k, commas(float64(r.outcomes[k]))))
	}
	restart := "never"
	if cfg.restart > 0 {
		restart = fmt.Sprintf("every %v (%d times)", cfg.restart, r.restarts)
	}
	notes := []string{
		fmt.Sprintf("%s jobs/s offered for %v, achieved %s jobs/s (%s jobs in %.0f s, %d enqueue errors, %d ErrKeyFull refusals of the paused key's jobs); 2 pools of %d workers, the second replaced by a new pool %s",
			commas(float64(cfg.rate)), cfg.duration, commas(float64(r.offered)/el), commas(float64(r.offered)), el, r.enqErrs, r.refused, cfg.workers, restart),
		fmt.Sprintf("keep (batches, tracked jobs, KeepFinished) %v; DeadMaxJobs %d, DeadMaxAge %v; CancelJob reached a pool %s times", cfg.keep, cfg.deadMax, cfg.deadAge, commas(float64(r.cancels))),
		"job runs: " + strings.Join(outcomes, ", "),
		fmt.Sprintf("Client.WaitJob: %s waits got the job's result, %d did not, %d jobs not waited for (%d waits under way), %d cut short by the end of the run; %s chain steps read the step before them (DependencyResults), %d did not find it done",
			commas(float64(r.waitsOK)), r.waitsBad, r.waitsSkip, soakMaxWaiters, r.waitsCut, commas(float64(r.depResults)), r.depBad),
		fmt.Sprintf("CPU cores busy over the run: harness process (pools, producer, sampler) %.2f, Redis %.2f", r.goCPU/el, r.redisCPU/el),
	}
	if r.firstErr != nil {
		notes = append(notes, "first enqueue error: "+r.firstErr.Error())
	}
	if r.firstWait != nil {
		notes = append(notes, "first bad wait: "+r.firstWait.Error())
	}
	st := table{
		title:  fmt.Sprintf("soak: samples every %v (m:ss since the start; the columns before %s are the warm-up)", cfg.interval, minSec(cfg.warmup)),
		notes:  notes,
		header: []string{"series"},
	}
	for _, at := range r.at {
		h := minSec(at)
		if at < cfg.warmup {
			h += "w"
		}
		st.header = append(st.header, h)
	}
	for _, s := range soakSeriesDefs {
		if _, _, ok := r.series(s.key, false); !ok {
			continue
		}
		row := []string{s.label}
		for _, smp := range r.samples {
			row = append(row, formatValue(s.kind, smp[s.key]))
		}
		st.rows = append(st.rows, row)
	}

	vt := table{
		title: fmt.Sprintf("soak: growth after the warm-up (%s to %s, %d samples)", minSec(cfg.warmup), minSec(r.at[len(r.at)-1]), r.judgedSamples()),
		notes: []string{
			fmt.Sprintf("slope: least squares, per hour; rise: slope × the window; grows when rise > threshold = max(%.0f%% of the median level, floor) and each of the last k samples exceeds each of the first k (k = max(2, n/4)); noisy: rise > threshold without that", 100*cfg.growth),
		},
		left:   2,
		header: []string{"series", "verdict", "first", "last", "min", "max", "slope/h", "rise", "threshold"},
	}
	for _, v := range r.verdicts() {
		_, xs, _ := r.series(v.s.key, true)
		if len(xs) == 0 {
			continue
		}
		_, lo, hi := summarize(xs)
		f := func(x float64) string { return formatValue(v.s.kind, x) }
		values := []string{f(xs[0]), f(xs[len(xs)-1]), f(lo), f(hi)}
		var verdict string
		switch {
		case v.s.unjudged != "":
			verdict = "not judged: " + v.s.unjudged
			values = append(values, "", "", "")
		case v.g.n < 4:
			verdict = "too few samples"
			values = append(values, "", "", "")
		default:
			verdict = "flat"
			switch {
			case v.g.grows:
				verdict = "GROWS"
			case v.g.noisy:
				verdict = "noisy"
			}
			values = append(values, f(v.g.slope), f(v.g.rise), f(v.g.threshold))
		}
		vt.rows = append(vt.rows, append([]string{v.s.label, verdict}, values...))
	}
	return []table{st, vt}
}

func (r *soakRun) judgedSamples() int {
	n := 0
	for _, at := range r.at {
		if at >= r.cfg.warmup {
			n++
		}
	}
	return n
}

// soakProgress is the line printed as each sample is taken.
func soakProgress(at time.Duration, s map[string]float64) string {
	keys := []struct{ key, name string }{
		{"sent_s", "offered/s"}, {"runs_s", "runs/s"}, {"mem", "used_memory MiB"}, {"keys", "keys"},
		{"queued", "queued"}, {"retry", "retry"}, {"dead", "dead"}, {"records_short", "records"},
		{famBatch, "batch hashes"}, {"batch_index", "batches index"}, {famKeyedQueue, "keys' queues"}, {"keyed_queued", "keyed queued"},
		{"heap", "heap MiB"}, {"goroutines", "goroutines"},
	}
	var parts []string
	for _, k := range keys {
		if v, ok := s[k.key]; ok {
			parts = append(parts, k.name+" "+formatValue(metricByKeyKind(k.key), v))
		}
	}
	return fmt.Sprintf("[soak] %s %s", minSec(at), strings.Join(parts, ", "))
}

func metricByKeyKind(key string) kind {
	for _, s := range soakSeriesDefs {
		if s.key == key {
			return s.kind
		}
	}
	return kindSig
}

// growingNames lists the labels of growing series, sorted, for a message.
func growingNames(vs []soakVerdict) string {
	var names []string
	for _, v := range vs {
		names = append(names, strings.TrimSpace(v.s.label))
	}
	sort.Strings(names)
	return strings.Join(names, "; ")
}
