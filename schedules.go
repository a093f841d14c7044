package work

// Schedules: jobs enqueued on a cron spec, set at run time and kept in Redis under an ID the caller
// chooses (one per customer, say), as many as millions of them. Client.SetSchedule creates or
// replaces one atomically; any live worker pool of the namespace fires those that are due, each tick
// once however many pools run, whatever crashes, and never before its time.
//
// How a tick is enqueued once: a schedule's record holds its next tick, and a due index holds when
// that tick is due. A pool claims due schedules (leasing their bucket of the index, so pools share
// the work, with a lease score that is the claim's token), computes in Go which tick to enqueue and
// the next one (cron.go), then commits: a script that enqueues the jobs and writes the new records
// only if the bucket still holds the token, which every other write of the bucket's schedules
// removes. A second commit of the same tick, from a pool whose lease ran out or whose reply was
// lost, finds the token gone and does nothing; a claim that is never committed (its pool died)
// leaves the records as they were, for another pool to claim once the lease ends.
//
// What it costs Redis: with nothing due, nothing (the pools learn when the earliest schedule is due
// from the looks they make anyway); a tick costs a few commands in the claim and in the commit,
// whatever the number of schedules stored. The layout, its bounds and how another program may read
// it are in docs/redis-layout.md ("Schedules").
//
// Code-declared periodic jobs (WorkerPool.PeriodicallyEnqueue) are another mechanism, kept as
// gocraft/work had it; Client.Schedules lists both kinds.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/workqueue/work/internal/rdb"
)

// Schedule is a job enqueued on a cron spec: see Client.SetSchedule.
type Schedule struct {
	// ID names the schedule: 1 to MaxScheduleIDLen bytes of UTF-8 without control characters.
	ID string `json:"id"`
	// Spec says when the ticks fall, in the syntax of WorkerPool.PeriodicallyEnqueue: "second
	// minute hour day-of-month month [day-of-week]" ("0 0 9 * * MON": Mondays at 9:00), or a
	// descriptor ("@daily", "@every 1h"). See Cron for daylight saving time.
	Spec string `json:"spec"`
	// Location is the IANA time zone the spec is read in, such as "Europe/Berlin"; "" is UTC.
	Location string `json:"location,omitempty"`
	// JobName, Args and Key are those of the job each tick enqueues (Key: a keyed job, see
	// EnqueueOptions.Key). Args must encode as a JSON object of at most MaxScheduleArgs bytes.
	JobName string                 `json:"job_name"`
	Args    map[string]interface{} `json:"args,omitempty"`
	Key     string                 `json:"key,omitempty"`
	// Jitter, when at least a second, delays each tick's job by up to Jitter (less a second), so
	// that schedules with the same spec do not all land at once. The delay of a tick is derived
	// from the ID and the tick, the same in every pool; it is at most MaxScheduleJitter.
	Jitter time.Duration `json:"jitter,omitempty"`
	// Missed says what becomes of a tick missed while no pool could enqueue it.
	Missed MissedPolicy `json:"missed,omitempty"`
}

// MissedPolicy says what becomes of a schedule's ticks that no pool enqueued in time (every pool was
// stopped, say). At most one job is enqueued per schedule at a time, for the latest tick due: a tick
// is skipped when a later one is due by the time a pool fires the schedule. The latest tick itself is
// enqueued when it is at most MissedTickAfter late (its jitter included); later than that, it is a
// missed tick, enqueued or not as the policy says.
type MissedPolicy int

const (
	// MissedSkip drops missed ticks: the schedule goes on from its next tick.
	MissedSkip MissedPolicy = iota
	// MissedRunLatest enqueues the latest missed tick, once, however late.
	MissedRunLatest
)

// MissedTickAfter is how late a tick may be enqueued before it counts as missed (MissedPolicy).
const MissedTickAfter = time.Minute

// String returns "skip" or "run-latest".
func (p MissedPolicy) String() string {
	switch p {
	case MissedSkip:
		return "skip"
	case MissedRunLatest:
		return "run-latest"
	}
	return "MissedPolicy(" + strconv.Itoa(int(p)) + ")"
}

// MarshalText writes the policy as String does.
func (p MissedPolicy) MarshalText() ([]byte, error) {
	if p != MissedSkip && p != MissedRunLatest {
		return nil, fmt.Errorf("%w: missed policy %d", ErrMalformedSchedule, int(p))
	}
	return []byte(p.String()), nil
}

// UnmarshalText reads a policy as ParseMissedPolicy does.
func (p *MissedPolicy) UnmarshalText(b []byte) error {
	v, err := ParseMissedPolicy(string(b))
	if err == nil {
		*p = v
	}
	return err
}

// ScheduleInfo is a schedule with its state, as Client.Schedule and Client.Schedules report it. Times
// are epoch seconds.
type ScheduleInfo struct {
	Schedule
	Paused bool `json:"paused,omitempty"`
	// NextTick is the schedule's next tick, and NextRun when its job is due (NextTick plus its
	// jitter); both 0 when it has none (paused, or a spec with no tick to come).
	NextTick int64 `json:"next_tick"`
	NextRun  int64 `json:"next_run"`
	// LastTick is the last tick it enqueued (0: none yet).
	LastTick int64 `json:"last_tick"`
	// Periodic is set for a periodic job declared in code (WorkerPool.PeriodicallyEnqueue) rather
	// than stored: its ID is "periodic:<job name>:<spec>", WorkerPoolIDs the live pools that declare
	// it, NextTick computed from the caller's clock; it cannot be changed through the Client.
	Periodic      bool     `json:"periodic,omitempty"`
	WorkerPoolIDs []string `json:"worker_pool_ids,omitempty"`
	// Damaged, when set, says why the schedule's record in Redis cannot be read (another program
	// wrote it): the schedule does not fire until it is set again, and its other fields may be
	// empty.
	Damaged string `json:"damaged,omitempty"`
}

// ScheduleStatus is a schedule's status, as ScheduleInfo.Status tells it.
type ScheduleStatus int

const (
	ScheduleActive   ScheduleStatus = iota // fires at its next tick
	SchedulePaused                         // paused: none of its ticks is enqueued until it is resumed
	ScheduleEnded                          // its spec has no tick to come
	ScheduleDamaged                        // its record cannot be read (Damaged says why): it does not fire
	SchedulePeriodic                       // a periodic job declared in code, which changes with the code only
)

// String returns the status in one word: active, paused, ended, damaged or periodic.
func (s ScheduleStatus) String() string {
	switch s {
	case ScheduleActive:
		return "active"
	case SchedulePaused:
		return "paused"
	case ScheduleEnded:
		return "ended"
	case ScheduleDamaged:
		return "damaged"
	case SchedulePeriodic:
		return "periodic"
	}
	return fmt.Sprintf("ScheduleStatus(%d)", int(s))
}

// Status tells whether the schedule fires: a periodic job declared in code and a damaged record
// first, then a paused schedule, then one with no tick to come.
func (in *ScheduleInfo) Status() ScheduleStatus {
	switch {
	case in.Periodic:
		return SchedulePeriodic
	case in.Damaged != "":
		return ScheduleDamaged
	case in.Paused:
		return SchedulePaused
	case in.NextTick == 0:
		return ScheduleEnded
	}
	return ScheduleActive
}

// NextTicks returns up to n ticks of the schedule (epoch seconds), from NextTick on, as its spec
// says in its zone; none (an empty slice) when it has no next tick: paused, damaged or ended. The
// jitter is not added: a tick's job is due up to Jitter later.
func (in *ScheduleInfo) NextTicks(n int) []int64 {
	ticks := []int64{}
	if n <= 0 || in.NextTick == 0 || in.Damaged != "" {
		return ticks
	}
	ticks = append(ticks, in.NextTick)
	c, err := crons.get(in.Spec, in.Location)
	if err != nil {
		return ticks
	}
	for t := time.Unix(in.NextTick, 0); len(ticks) < n; {
		if t = c.Next(t); t.IsZero() {
			break
		}
		ticks = append(ticks, t.Unix())
	}
	return ticks
}

// Zone returns the time zone the schedule's spec is read in: UTC when Location is empty, or names
// a zone this machine's zone database does not know.
func (in *ScheduleInfo) Zone() *time.Location {
	loc, err := ParseLocation(in.Location)
	if err != nil {
		return time.UTC
	}
	return loc
}

// Bounds of a schedule.
const (
	MaxScheduleIDLen  = 200
	MaxScheduleArgs   = 64 << 10
	MaxScheduleJitter = 24 * time.Hour
)

// scheduleDef is the definition of a schedule as its record holds it: all but its state.
type scheduleDef struct {
	spec, zone, job, key string
	jitter               int64 // seconds
	missed               MissedPolicy
	args                 []byte // a JSON object, or null
}

// check checks a schedule and returns its definition and its cron.
func (s *Schedule) check() (*scheduleDef, *Cron, error) {
	if err := CheckScheduleID(s.ID); err != nil {
		return nil, nil, err
	}
	c, err := crons.get(s.Spec, s.Location)
	if err != nil {
		return nil, nil, err
	}
	if err := checkJobName(s.JobName); err != nil {
		return nil, nil, err
	}
	if s.Key != "" {
		if err := checkKey(s.Key); err != nil {
			return nil, nil, err
		}
	}
	if s.Jitter < 0 || s.Jitter > MaxScheduleJitter {
		return nil, nil, fmt.Errorf("%w: jitter %v: 0 to %v", ErrMalformedSchedule, s.Jitter, MaxScheduleJitter)
	}
	if s.Missed != MissedSkip && s.Missed != MissedRunLatest {
		return nil, nil, fmt.Errorf("%w: missed policy %d", ErrMalformedSchedule, int(s.Missed))
	}
	args := []byte("null")
	if s.Args != nil {
		if args, err = json.Marshal(s.Args); err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrMalformedArgs, err)
		}
		if len(args) > MaxScheduleArgs {
			return nil, nil, fmt.Errorf("%w: %d bytes of JSON, more than %d", ErrMalformedArgs, len(args), MaxScheduleArgs)
		}
	}
	d := &scheduleDef{spec: s.Spec, zone: s.Location, job: s.JobName, key: s.Key,
		jitter: int64(s.Jitter / time.Second), missed: s.Missed, args: args}
	return d, c, nil
}

// appendTo appends the definition as records hold it: the record's fields from the spec on, and its
// closing bracket.
func (d *scheduleDef) appendTo(b []byte) []byte {
	for _, s := range [...]string{d.spec, d.zone, d.job, d.key} {
		b = appendJSONString(b, s)
		b = append(b, ',')
	}
	b = strconv.AppendInt(b, d.jitter, 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(d.missed), 10)
	b = append(b, ',')
	b = append(b, d.args...)
	return append(b, ']')
}

// scheduleRecord is a schedule's record, decoded: its next and last ticks, whether it is paused, and
// its definition.
type scheduleRecord struct {
	next, last int64
	paused     bool
	def        scheduleDef
}

// encode writes the record as lua/lib/schedules.lua reads it.
func (r *scheduleRecord) encode() []byte {
	b := make([]byte, 0, 64+len(r.def.spec)+len(r.def.zone)+len(r.def.job)+len(r.def.key)+len(r.def.args))
	b = append(b, "[1,"...)
	b = strconv.AppendInt(b, r.next, 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, r.last, 10)
	if r.paused {
		b = append(b, ",1,"...)
	} else {
		b = append(b, ",0,"...)
	}
	return r.def.appendTo(b)
}

// decodeScheduleRecord decodes a record, refusing anything that lua/lib/schedules.lua or the firing
// code could misread: it must be the array of eleven fields that encode writes, its head (format,
// ticks and flags) written as encode writes it, its ticks epoch seconds, its definition within a
// schedule's bounds. It does not check that the spec, zone, job name and key are usable (see
// scheduleRecord.cron).
func decodeScheduleRecord(rec []byte) (*scheduleRecord, error) {
	rest, ok := bytes.CutPrefix(rec, []byte("[1,"))
	if !ok {
		return nil, fmt.Errorf("starts %.12q, want [1,", rec)
	}
	var head [3]int64
	for i := range head {
		end := bytes.IndexByte(rest, ',')
		n, err := strconv.ParseInt(string(rest[:max(end, 0)]), 10, 64)
		if end <= 0 || err != nil || n < 0 || (end > 1 && rest[0] == '0') || rest[0] < '0' || rest[0] > '9' {
			return nil, fmt.Errorf("head field %d is not a count", i+2)
		}
		head[i], rest = n, rest[end+1:]
	}
	// The definition: four strings and two counts, then the args and the closing bracket.
	p := recordParser{b: rest}
	var strs [4]string
	for i := range strs {
		var ok bool
		if strs[i], ok = p.str(); !ok {
			return nil, fmt.Errorf("field %d is not a JSON string", 5+i)
		}
	}
	var tail [2]int64
	for i := range tail {
		var ok bool
		if tail[i], ok = p.count(); !ok {
			return nil, fmt.Errorf("field %d is not a count", 9+i)
		}
	}
	args, ok := bytes.CutSuffix(p.b[p.i:], []byte("]"))
	if !ok || !json.Valid(args) {
		return nil, errors.New("the args are not JSON, or the record does not end after them")
	}
	r := &scheduleRecord{next: head[0], last: head[1], paused: head[2] == 1,
		def: scheduleDef{spec: strs[0], zone: strs[1], job: strs[2], key: strs[3], jitter: tail[0],
			missed: MissedPolicy(tail[1]), args: args}}
	switch {
	case head[2] > 1:
		return nil, fmt.Errorf("flags %d, want 0 or 1", head[2])
	case r.def.jitter > int64(MaxScheduleJitter/time.Second):
		return nil, fmt.Errorf("jitter of %d seconds, more than %v", r.def.jitter, MaxScheduleJitter)
	case r.def.missed != MissedSkip && r.def.missed != MissedRunLatest:
		return nil, fmt.Errorf("missed policy %d", tail[1])
	case r.next > maxScheduleTime || r.last > maxScheduleTime:
		return nil, errors.New("a tick past the year 9999")
	}
	if a := r.def.args; string(a) != "null" && (len(a) == 0 || a[0] != '{') {
		return nil, fmt.Errorf("args %.40q, want a JSON object", a)
	}
	return r, nil
}

// recordParser reads the fields of a record's definition, each followed by a comma.
type recordParser struct {
	b []byte
	i int
}

// str reads a JSON string: as it is when it needs no unescaping, else through encoding/json.
func (p *recordParser) str() (string, bool) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return "", false
	}
	start, plain := p.i, true
	for j := p.i + 1; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '\\':
			plain = false
			j++
		case c < 0x20:
			return "", false
		case c == '"':
			if j+1 >= len(p.b) || p.b[j+1] != ',' {
				return "", false
			}
			tok := p.b[start : j+1]
			p.i = j + 2
			if plain && utf8.Valid(tok) {
				return string(tok[1 : len(tok)-1]), true
			}
			var s string
			if json.Unmarshal(tok, &s) != nil {
				return "", false
			}
			return s, true
		}
	}
	return "", false
}

// count reads a count as encoding/json writes one: digits, no leading zero.
func (p *recordParser) count() (int64, bool) {
	j := p.i
	for j < len(p.b) && p.b[j] >= '0' && p.b[j] <= '9' {
		j++
	}
	if j == p.i || j >= len(p.b) || p.b[j] != ',' || (j-p.i > 1 && p.b[p.i] == '0') || j-p.i > 18 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(p.b[p.i:j]), 10, 64)
	p.i = j + 1
	return n, err == nil
}

// maxScheduleTime bounds the ticks a record may hold: the end of the year 9999, as Go formats times.
const maxScheduleTime = 253402300799

// cron returns the record's spec in its zone.
func (r *scheduleRecord) cron() (*Cron, error) { return crons.get(r.def.spec, r.def.zone) }

// info returns what the Client reports of the record of schedule id.
func (r *scheduleRecord) info(id string) *ScheduleInfo {
	in := &ScheduleInfo{Schedule: Schedule{ID: id, Spec: r.def.spec, Location: r.def.zone, JobName: r.def.job,
		Key: r.def.key, Jitter: time.Duration(r.def.jitter) * time.Second, Missed: r.def.missed}, Paused: r.paused,
		LastTick: r.last}
	if args, err := decodeArgs(r.def.args); err != nil {
		in.Damaged = "args: " + err.Error()
	} else {
		in.Args = args
	}
	if !r.paused && r.next > 0 {
		in.NextTick, in.NextRun = r.next, r.next+jitterOf(id, r.next, r.def.jitter)
	}
	return in
}

// decodeArgs decodes a record's args as a job's are decoded (numbers that are exact as float64
// become float64, larger integers stay json.Number), so that they encode back byte for byte.
func decodeArgs(raw []byte) (map[string]interface{}, error) {
	if string(raw) == "null" {
		return nil, nil
	}
	args, err := ParseArgs(string(raw))
	if err != nil {
		return nil, err
	}
	for k, v := range args {
		args[k] = normalizeNumber(v)
	}
	return args, nil
}

// jitterOf returns the delay of a schedule's tick: 0 to jitter-1 seconds, from a hash of the ID and
// the tick, so that every pool computes the same.
func jitterOf(id string, tick, jitter int64) int64 {
	if jitter <= 1 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	h.Write([]byte{0})
	h.Write(strconv.AppendInt(nil, tick, 10))
	return int64(h.Sum64() % uint64(jitter))
}

// cronCache keeps the parsed specs of schedules by spec and zone: most schedules share a few.
type cronCache struct {
	mu sync.Mutex
	m  map[[2]string]*Cron
}

var crons = &cronCache{m: map[[2]string]*Cron{}}

// cronCacheMax bounds the cache; past it, it starts again empty.
const cronCacheMax = 4096

func (cc *cronCache) get(spec, zone string) (*Cron, error) {
	k := [2]string{spec, zone}
	cc.mu.Lock()
	c := cc.m[k]
	cc.mu.Unlock()
	if c != nil {
		return c, nil
	}
	c, err := ParseCron(spec, zone)
	if err != nil {
		return nil, err
	}
	cc.mu.Lock()
	if len(cc.m) >= cronCacheMax {
		clear(cc.m)
	}
	cc.m[k] = c
	cc.mu.Unlock()
	return c, nil
}

// firstTick returns a schedule's next tick after t and when it is due (jitter included); 0, 0 when
// it has none.
func firstTick(id string, c *Cron, jitter int64, t time.Time) (int64, int64) {
	n := c.Next(t)
	if n.IsZero() {
		return 0, 0
	}
	return n.Unix(), n.Unix() + jitterOf(id, n.Unix(), jitter)
}

// planClaim decides, at now, what becomes of a claimed schedule, as a commit: the job of its latest
// tick due (when it is not a missed tick the policy skips), its next tick and due score, or, for a
// record that cannot fire, its removal from the due index. It logs what it cannot fire and why.
// It reports false when there is nothing to commit (a bucket whose key holds another type).
func planClaim(cl *rdb.ScheduleClaim, now int64, logger *slog.Logger) (rdb.ScheduleCommit, bool) {
	c := rdb.ScheduleCommit{Claim: cl, Due: -1}
	if cl.Id == "" {
		logger.Error("work: a bucket of the schedules' due index holds another Redis type; its schedules cannot fire",
			"bucket", cl.Bucket)
		return c, false
	}
	if cl.Rec == nil {
		logger.Warn("work: the schedules' due index names a schedule without a record; dropped from the index", "schedule_id", cl.Id)
		return c, true
	}
	r, err := decodeScheduleRecord(cl.Rec)
	if err == nil && r.paused {
		return c, true // paused meanwhile by hand: out of the index
	}
	var cr *Cron
	if err == nil {
		if cr, err = r.cron(); errors.Is(err, ErrUnknownLocation) {
			// This machine's zone database may lack the zone that another's has: try again later,
			// perhaps in another pool.
			logger.Error("work: a schedule's time zone is unknown here; it is tried again in a minute", "schedule_id", cl.Id, "err", err)
			c.Due = now + 60
			return c, true
		}
	}
	var job *Job
	if err == nil {
		job, err = newCheckedJob(r.def.job, nil, r.def.key)
	}
	if err != nil || r.next == 0 {
		if err != nil {
			logger.Error("work: a schedule's record cannot be read; it does not fire until it is set again",
				"schedule_id", cl.Id, "err", err)
		}
		return c, true
	}
	// The latest tick due: the next tick unless a later one is due too.
	id, jit := cl.Id, r.def.jitter
	due := func(t int64) int64 { return t + jitterOf(id, t, jit) }
	if due(r.next) > now {
		c.Due = due(r.next) // not due yet: the index said otherwise
		return c, true
	}
	latest := r.next
	if n := cr.Next(time.Unix(r.next, 0)); !n.IsZero() && due(n.Unix()) <= now {
		latest = cr.latest(time.Unix(r.next, 0), time.Unix(now, 0)).Unix()
		// With a jitter longer than the spec's interval, the latest tick may not be due yet: the one
		// before it may be.
		for i := 0; latest > r.next && due(latest) > now; i++ {
			if i == 100 {
				latest = -1 // too many: none fires, the schedule goes on after now
				break
			}
			latest = cr.latest(time.Unix(r.next, 0), time.Unix(latest-1, 0)).Unix()
		}
	}
	next := r.copyWith(0)
	if latest < 0 {
		if n := cr.Next(time.Unix(now, 0)); !n.IsZero() {
			next.next = n.Unix()
			c.Due = due(next.next)
		}
		c.Rec = next.encode()
		return c, true
	}
	if now-due(latest) <= int64(MissedTickAfter/time.Second) || r.def.missed == MissedRunLatest {
		job.ScheduleID, job.Tick, job.EnqueuedAt = id, latest, now
		payload, err := serializeWithArgs(job, r.def.args)
		if err != nil {
			logger.Error("work: a schedule's job cannot be encoded; it does not fire until it is set again",
				"schedule_id", cl.Id, "err", err)
			return c, true
		}
		c.Name, c.Key, c.Payload = job.Name, job.Key, payload
		next.last = latest
	}
	if n := cr.Next(time.Unix(latest, 0)); !n.IsZero() {
		next.next = n.Unix()
		c.Due = due(next.next)
	}
	c.Rec = next.encode()
	return c, true
}

// serializeWithArgs encodes a job (without args of its own) with raw, a JSON object or null, as its
// args: a schedule's args go into its jobs as they are stored, never decoded and encoded again.
func serializeWithArgs(job *Job, raw []byte) ([]byte, error) {
	b, err := job.serialize()
	if err != nil || string(raw) == "null" {
		return b, err
	}
	// No string of the payload holds this text unescaped: the first match is the args field.
	const field = `,"args":null`
	i := bytes.Index(b, []byte(field))
	if i < 0 {
		return nil, errors.New("work: a job encoded without its args field")
	}
	out := make([]byte, 0, len(b)+len(raw))
	out = append(out, b[:i+len(field)-4]...)
	out = append(out, raw...)
	return append(out, b[i+len(field):]...), nil
}

// copyWith returns a copy of r with next as its next tick.
func (r *scheduleRecord) copyWith(next int64) *scheduleRecord {
	cp := *r
	cp.next = next
	return &cp
}
