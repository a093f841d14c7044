package work

import (
	"errors"

	"github.com/workqueue/work/internal/rdb"
)

// The library's sentinel errors. Check them with errors.Is: most are returned wrapped, with what
// was wrong and what is wanted. Those that Redis or a script answers are made by the store
// (internal/rdb) and are the same values here. Each text starts with "work: ", except those of ErrNotDeleted and
// ErrNotRetried, which keep gocraft/work's text.

// Errors of the Client's job commands, gocraft/work's first.
var (
	// ErrNotDeleted is returned by the Client's Delete methods when no job matched.
	ErrNotDeleted = errors.New("nothing deleted")

	// ErrNotRetried is returned by Client.RetryDeadJob when no job matched or the matching job
	// cannot be retried (check with errors.Is: the error may carry the reason).
	ErrNotRetried = errors.New("nothing retried")

	// ErrJobNotFound is returned by Client.FindJob when no job has the given ID.
	ErrJobNotFound = errors.New("work: job not found")

	// ErrNoRecord is returned by JobRecord for a job without a record: not tracked, and its pool
	// keeps no records of its name (JobOptions.KeepFinished), or the record expired.
	ErrNoRecord = errors.New("work: no record of the job")

	// ErrWrongType is returned, wrapped with Redis's own reply, by a Client read that met a key of
	// the namespace holding another Redis type than the library gives it: another program wrote
	// it. What that key holds (a record, a batch, the schedules, a queue) cannot be read through
	// the library until the key is deleted, or repaired by the call that writes it (setting a
	// schedule again, say).
	ErrWrongType = rdb.ErrWrongType
)

// Errors for input the library refuses. Each is returned wrapped, with what was wrong and what is
// wanted; the same input is refused by every call that takes it.
var (
	// ErrMalformedJobName: a job name no job may have (empty, or ending in a suffix the Redis layout
	// uses for a queue's other keys).
	ErrMalformedJobName = errors.New("work: malformed job name")
	// ErrMalformedID: a batch ID, or the ID of a job with a record, that no batch or job can have:
	// IDs are 1 to 64 letters, digits, '_', '.' or '-'.
	ErrMalformedID = errors.New("work: malformed ID")
	// ErrMalformedRate: a rate that is not jobs per period (ParseRate, KeyLimits.RateLimit).
	ErrMalformedRate = errors.New("work: malformed rate")
	// ErrMalformedLimit: a per-key limit or weight out of its range (ParseKeyLimit, ParseKeyWeight,
	// KeyLimits).
	ErrMalformedLimit = errors.New("work: malformed limit")
	// ErrMalformedArgs: job args that are not a JSON object (ParseArgs), or that cannot be encoded
	// as JSON.
	ErrMalformedArgs = errors.New("work: malformed args")
	// ErrMalformedKey is returned (wrapped) for a key that no job can have: empty, longer than
	// MaxKeyLen bytes, not valid UTF-8, or holding a control character or a brace ('{' and '}'
	// delimit the key in its Redis keys).
	ErrMalformedKey = errors.New("work: malformed key")
	// ErrMalformedSpec: a schedule spec that cannot be read (ParseCron, PeriodicallyEnqueue's
	// syntax), or that never fires.
	ErrMalformedSpec = errors.New("work: malformed spec")
	// ErrMalformedDebounce: a debounce whose window or maximum wait is out of its bounds, whose ID
	// no key could be, or that is asked for with options it cannot go with (At, unique,
	// dependencies, a record, an ID).
	ErrMalformedDebounce = errors.New("work: malformed debounce")
	// ErrMalformedGroup: a group key (EnqueueOptions.Group) that no key could be, or a grouped job
	// asked for with options it cannot go with (At, unique, dependencies, a record, an ID, a key,
	// a debounce).
	ErrMalformedGroup = errors.New("work: malformed group")
	// ErrUnknownLocation: a time zone that is not an IANA zone name the zone database knows
	// (ParseLocation).
	ErrUnknownLocation = errors.New("work: unknown time zone")
)

// Errors of enqueues.
var (
	// ErrNotReplicated is returned by an enqueue made with Enqueuer.WaitReplicas when fewer replicas
	// than asked acknowledged the write within Enqueuer.WaitTimeout. The job is on the primary, and
	// it may or may not survive a failover that happens before it reaches a replica.
	ErrNotReplicated = rdb.ErrNotReplicated
	// ErrDuplicateJobID is returned by an enqueue with EnqueueOptions.ID when a job was enqueued
	// under that ID within its IDKeep; nothing was written. For a program that sends the same job
	// again after a failure, it means the job is in already.
	ErrDuplicateJobID = rdb.ErrJobIDTaken
)

// Errors of keyed jobs.
var (
	// ErrKeyFull is returned (wrapped, with the key and the limit) by an enqueue of a keyed job when
	// its key already has as many jobs waiting as KeyMaxWaiting allows; nothing is written.
	ErrKeyFull = rdb.ErrKeyFull
)

// Errors of dependencies and batches.
var (
	// ErrUnknownDependency is returned when a job or batch named as a dependency has no record: it
	// was never tracked, never existed, or its record expired.
	ErrUnknownDependency = rdb.ErrUnknownDependency
	// ErrBatchNotFound: no batch has the ID (never created, or its status expired after Keep).
	ErrBatchNotFound = rdb.ErrBatchNotFound
	// ErrBatchComplete: the batch has completed; it takes no more members.
	ErrBatchComplete = rdb.ErrBatchComplete
	// ErrBatchEmpty: a batch without members cannot be closed (it would complete at once, with
	// nothing done).
	ErrBatchEmpty = rdb.ErrBatchEmpty
	// ErrBatchExists: a batch with the ID exists already.
	ErrBatchExists = rdb.ErrBatchExists
)

// Errors of schedules.
var (
	// ErrMalformedSchedule: a schedule's ID, jitter or missed policy out of its bounds. Its spec,
	// zone, job name, key and args are refused with ErrMalformedSpec, ErrUnknownLocation,
	// ErrMalformedJobName, ErrMalformedKey and ErrMalformedArgs.
	ErrMalformedSchedule = errors.New("work: malformed schedule")
	// ErrScheduleNotFound: no schedule has the ID.
	ErrScheduleNotFound = errors.New("work: schedule not found")
	// ErrDamagedSchedule: the schedule's record in Redis cannot be read (another program wrote it);
	// setting the schedule again repairs it.
	ErrDamagedSchedule = rdb.ErrDamagedSchedule
)

// Errors of a running job.
var (
	// ErrJobCancelled is the cause of a job's context when Client.CancelJob cancelled it. A
	// cancelled job whose handler returns an error goes to the dead set with err "cancelled" (or is
	// dropped with SkipDead); it is not retried. A handler that finishes anyway counts as done.
	ErrJobCancelled = errors.New("work: job cancelled")
	// ErrPoolReaped is the cause of a job's context when its pool missed its heartbeats past
	// DeadPoolTimeout (the process was frozen, or Redis out of reach) and another pool put the job
	// back in its queue meanwhile: the job will run there, and this run's outcome is not written.
	ErrPoolReaped = errors.New("work: the pool missed its heartbeats past DeadPoolTimeout; its jobs were put back")
	// ErrResultTooLarge is returned by SetResult for a result whose JSON exceeds MaxResultSize.
	ErrResultTooLarge = errors.New("work: job result larger than MaxResultSize")
	// ErrBadProgress is returned, wrapped, by Job.SetProgress for a fraction that is not a number,
	// or that is outside 0..1 (then clamped: the job's progress is set all the same).
	ErrBadProgress = errors.New("work: bad progress")
	// ErrNotInPool is returned by Job.DependencyResults for a job that no worker pool runs (a
	// handler called by a test, say).
	ErrNotInPool = errors.New("work: the job is not run by a worker pool")
)
