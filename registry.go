package work

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/workqueue/work/internal/rdb"
)

// What a started pool serves: its job names with their queues and options, the middleware chain
// and the periodic jobs. gocraft/work lets Job, JobWithOptions, Middleware and PeriodicallyEnqueue
// be called on a started pool (some frameworks register handlers that way), so the registry of a
// started pool can grow while it runs; the pool's goroutines read it as an immutable jobSet that a
// registration replaces whole.
//
// A new job name is served only once the pool's heartbeat names it: a pool's heartbeat is how other
// pools know which in-progress lists to put back if it dies, so a job fetched before then could be
// stranded by a crash. The registration hands the name to the heartbeater, which announces it with
// a heartbeat of its own at once (registerPool writes its MaxConcurrency and KeyMaxWaiting first),
// and then publishes the set that serves it.

// poolRegistry is what a WorkerPool's registration methods build, and the run while started.
type poolRegistry struct {
	mu           sync.Mutex
	jobTypes     map[string]*jobType
	middleware   []boundMiddleware
	needsCtx     bool // some handler or middleware takes the custom context
	mwContext    bool // some middleware receives a context.Context
	periodicJobs []*periodicJob
	run          *poolRun // non-nil while started
}

// jobSet is a snapshot of a registry, for a started pool: never changed once built.
type jobSet struct {
	names    []string // registered job names, sorted
	queueIDs []string // the ids of queues: each name's, then its keyed jobs', in names' order
	jobTypes map[string]*jobType
	queues   map[string]*queue
	priority map[string]uint // by queue id

	middleware []boundMiddleware
	needsCtx   bool
	mwContext  bool
	periodic   []*periodicJob
}

// queue is one of a started pool's job names, or the keyed jobs of one (keyed): its options and its
// script arguments.
type queue struct {
	id    string // its key in jobSet.queues: the job name, or keyedQueueID of it
	name  string
	keyed bool
	jt    *jobType
	args  *rdb.QueueArgs
}

// contextual reports whether a job of jt gets a context of its own: some function of its chain
// receives one, or it has a Timeout. Otherwise nothing could see it, and a cancel is recorded in the
// worker's state instead.
func (s *jobSet) contextual(jt *jobType) bool {
	return jt.receivesCtx || s.mwContext || jt.Timeout > 0
}

// newJobSet snapshots the registry for r, serving only the job names in serve (all when nil). Queues
// of prev whose job type is unchanged are kept: jobs fetched through them hold them.
func (reg *poolRegistry) newJobSet(r *poolRun, serve []string, prev *jobSet) *jobSet {
	s := &jobSet{
		jobTypes:   make(map[string]*jobType, len(reg.jobTypes)),
		queues:     make(map[string]*queue, 2*len(reg.jobTypes)),
		priority:   make(map[string]uint, 2*len(reg.jobTypes)),
		middleware: slices.Clip(reg.middleware),
		needsCtx:   reg.needsCtx,
		mwContext:  reg.mwContext,
		periodic:   slices.Clip(reg.periodicJobs),
	}
	for name, jt := range reg.jobTypes {
		if serve != nil && !slices.Contains(serve, name) {
			continue
		}
		s.names = append(s.names, name)
		s.jobTypes[name] = jt
		var old, oldKeyed *queue
		if prev != nil && prev.jobTypes[name] == jt {
			old, oldKeyed = prev.queues[name], prev.queues[rdb.KeyedQueueID(name)]
		}
		if old == nil {
			rl, krl := newRateLimit(jt.RateLimit), newRateLimit(jt.KeyRateLimit)
			st := r.wp.store
			old = &queue{id: name, name: name, jt: jt,
				args: st.NewQueueArgs(name, r.poolID, jt.MaxConcurrency > 0, rl)}
			id := rdb.KeyedQueueID(name)
			oldKeyed = &queue{id: id, name: name, keyed: true, jt: jt,
				args: st.NewKeyedQueueArgs(name, r.poolID, jt.MaxConcurrency > 0, rl,
					rdb.KeyDefaults{Limit: jt.KeyConcurrency, Rate: krl, HoldOnRetry: jt.KeyRetryInOrder})}
		}
		s.queues[old.id], s.queues[oldKeyed.id] = old, oldKeyed
		s.priority[old.id], s.priority[oldKeyed.id] = jt.Priority, jt.Priority
	}
	sort.Strings(s.names)
	for _, name := range s.names {
		s.queueIDs = append(s.queueIDs, name, rdb.KeyedQueueID(name))
	}
	return s
}

// checkKeyedSuffix panics when a job name and that name with the keyed queues' suffix would both be
// served by one pool: their queue ids would collide.
func (reg *poolRegistry) checkKeyedSuffix(name string) {
	base, isSuffixed := strings.CutSuffix(name, rdb.KeyedQueueSuffix)
	if isSuffixed && reg.jobTypes[base] != nil || reg.jobTypes[rdb.KeyedQueueID(name)] != nil {
		if !isSuffixed {
			base, name = name, rdb.KeyedQueueID(name)
		}
		panic(fmt.Sprintf("work: job names %q and %q cannot be served by one pool", base, name))
	}
}

// registered takes in a registration made while r runs (the caller holds the registry's lock): the
// names r already serves get the new options and middleware at once, and the heartbeater is asked
// to announce any new one.
func (r *poolRun) registered(reg *poolRegistry) {
	served := r.jobs()
	full := reg.newJobSet(r, nil, served)
	r.full.Store(full)
	r.served.Store(reg.newJobSet(r, served.names, served))
	r.periodic.changed()
	if len(full.names) > len(served.names) {
		r.heartbeater.announceNow()
	}
}

// announced takes in a heartbeat that named every job name in names: from now on the pool serves
// them (with the registry's latest options), and looks at their queues at once.
func (r *poolRun) announced(names []string) {
	reg := r.wp.reg
	reg.mu.Lock()
	served := r.jobs()
	if reg.run != r || covers(served.names, names) {
		reg.mu.Unlock()
		return
	}
	next := reg.newJobSet(r, names, served)
	r.served.Store(next)
	reg.mu.Unlock()
	var added []string
	for _, id := range next.queueIDs {
		if served.queues[id] == nil {
			added = append(added, id)
		}
	}
	r.fetcher.ready.markReady(added)
}

// covers reports whether every name of names is in have (both sorted).
func covers(have, names []string) bool {
	for _, n := range names {
		if _, ok := slices.BinarySearch(have, n); !ok {
			return false
		}
	}
	return true
}

// changed passes a registration on to the run, if the pool is started (the caller holds mu).
func (reg *poolRegistry) changed() {
	if reg.run != nil {
		reg.run.registered(reg)
	}
}

// jobs returns the job set the pool serves now.
func (r *poolRun) jobs() *jobSet { return r.served.Load() }

// registerTimeout bounds the writes a registration on a started pool needs before its heartbeat.
const registerTimeout = 10 * time.Second

// registration is what registerNames writes of a job name: its MaxConcurrency, KeyMaxWaiting,
// whether it limits its keys (KeyConcurrency, KeyRateLimit or KeyRetryInOrder: their jobs then
// queue per key rather than in the lane) and group settings (rdb.GroupConf; "" for a name without
// GroupJob).
type registration struct {
	maxConcurrency, keyMaxWaiting uint
	keyLimited                    bool
	groupConf                     string
}

// registerNames writes to Redis what enqueuers and other pools need to know of the job names of s
// that differ from what this pool wrote last (written): that the name is known, and its limits.
func (r *poolRun) registerNames(ctx context.Context, s *jobSet, written map[string]registration) error {
	var names, confs []string
	var maxc, keyMax []uint
	var limited []bool
	for _, name := range s.names {
		jt := s.jobTypes[name]
		v := registration{jt.MaxConcurrency, jt.KeyMaxWaiting,
			jt.KeyConcurrency > 0 || jt.KeyRateLimit.Jobs > 0 || jt.KeyRetryInOrder, jt.groupConf}
		if w, ok := written[name]; ok && w == v {
			continue
		}
		names, maxc, keyMax, confs = append(names, name), append(maxc, v.maxConcurrency), append(keyMax, v.keyMaxWaiting), append(confs, v.groupConf)
		limited = append(limited, v.keyLimited)
	}
	if len(names) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, registerTimeout)
	defer cancel()
	if err := r.wp.store.RegisterPool(ctx, names, maxc, keyMax, limited, confs); err != nil {
		return err
	}
	for i, name := range names {
		written[name] = registration{maxc[i], keyMax[i], limited[i], confs[i]}
	}
	return nil
}
