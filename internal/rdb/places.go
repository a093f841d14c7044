package rdb

// Place names one of the layout's collections of jobs (a sorted set, a queue, an in-progress list)
// without its key: the root package says where a job is or goes, and only the store turns that into
// a key of the namespace. Places are comparable values.
type Place struct {
	kind  placeKind
	name  string // the job name of a queue, an in-progress list or a key's queue
	other string // the pool ID of an in-progress list, or a key
}

type placeKind uint8

const (
	placeNone placeKind = iota
	placeScheduled
	placeRetry
	placeDead
	placeBatchesExpiry
	placeSchedulesDue
	placeQueue
	placeInProgress
	placeKeyedQueue
	placeKeyedInProgress
	placeKeyedWaiting
	placeKeyedReady
	placeGroupsDue
	placeDebounces
)

// The sorted sets of the layout.
var (
	Scheduled = Place{kind: placeScheduled} // <ns>:scheduled, jobs by run time
	Retry     = Place{kind: placeRetry}     // <ns>:retry, jobs by retry time
	Dead      = Place{kind: placeDead}      // <ns>:dead, jobs by time of death
	// BatchesExpiry is <ns>:batches_expiry, batch IDs by the time their index entry expires.
	BatchesExpiry = Place{kind: placeBatchesExpiry}
	// SchedulesDue stands for the due buckets of run-time schedules (<ns>:schedules:due and its
	// buckets): a due-work source, not one key.
	SchedulesDue = Place{kind: placeSchedulesDue}
	// GroupsDue is <ns>:groups_due, groups of grouped jobs by the time they are due.
	GroupsDue = Place{kind: placeGroupsDue}
	// Debounces is <ns>:debounces, the bursts of debounced enqueues whose job waits in the burst's
	// hash, by the time it is due.
	Debounces = Place{kind: placeDebounces}
)

// Queue is the queue of a job name: <ns>:jobs:<name>.
func Queue(name string) Place { return Place{kind: placeQueue, name: name} }

// InProgress is a pool's in-progress list of a job name.
func InProgress(name, poolID string) Place {
	return Place{kind: placeInProgress, name: name, other: poolID}
}

// KeyedQueue is the queue of one key of a job name's keyed jobs.
func KeyedQueue(name, key string) Place { return Place{kind: placeKeyedQueue, name: name, other: key} }

// KeyedInProgress is a pool's in-progress list of a job name's keyed jobs, whose entries carry the
// key they were fetched for (see KeyedEntryKey).
func KeyedInProgress(name, poolID string) Place {
	return Place{kind: placeKeyedInProgress, name: name, other: poolID}
}

// KeyedWaiting is the sorted set of a job name's keys that have jobs waiting.
func KeyedWaiting(name string) Place { return Place{kind: placeKeyedWaiting, name: name} }

// KeyedReady is the sorted set of a job name's keys whose turn may come and of its lane jobs
// (members "<key>\n<payload>": see SplitKeyedEntry).
func KeyedReady(name string) Place { return Place{kind: placeKeyedReady, name: name} }

// key returns the key of p in s's namespace.
func (s *Store) key(p Place) string { return s.Ks.place(p) }

// place returns the key of p.
func (k Keyspace) place(p Place) string {
	switch p.kind {
	case placeScheduled:
		return k.Scheduled()
	case placeRetry:
		return k.Retry()
	case placeDead:
		return k.Dead()
	case placeBatchesExpiry:
		return k.BatchesExpiry()
	case placeSchedulesDue:
		return k.SchedulesDue()
	case placeQueue:
		return k.Jobs(p.name)
	case placeInProgress:
		return k.InProgress(p.name, p.other)
	case placeKeyedQueue:
		return k.KeyedQueue(p.name, p.other)
	case placeKeyedInProgress:
		return k.KeyedInProgress(p.name, p.other)
	case placeKeyedWaiting:
		return k.KeyedWaiting(p.name)
	case placeKeyedReady:
		return k.KeyedReady(p.name)
	case placeGroupsDue:
		return k.GroupsDue()
	case placeDebounces:
		return k.Debounces()
	}
	panic("rdb: the zero Place has no key")
}

// String is p's key in the empty namespace: its name in the documented layout, for messages.
func (p Place) String() string {
	if p.kind == placeNone {
		return "none"
	}
	return Keyspace{}.place(p)
}
