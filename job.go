package work

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/workqueue/work/internal/rdb"
)

// Q is a shortcut to easily specify arguments for jobs when enqueueing them.
// Example: e.Enqueue("send_email", work.Q{"addr": "test@example.com", "track": true})
type Q map[string]interface{}

// Job represents a job. Its JSON form is the documented wire format: a job pushed onto
// "<namespace>:jobs:<name>" by any program in any language in this form is processed.
type Job struct {
	// Inputs when making a new job
	Name       string                 `json:"name,omitempty"`
	ID         string                 `json:"id"`
	EnqueuedAt int64                  `json:"t"`
	Args       map[string]interface{} `json:"args"`
	Unique     bool                   `json:"unique,omitempty"`
	UniqueKey  string                 `json:"unique_key,omitempty"`

	// Inputs when retrying
	Fails    int64  `json:"fails,omitempty"` // number of times this job has failed
	LastErr  string `json:"err,omitempty"`
	FailedAt int64  `json:"failed_at,omitempty"`

	// Batch is the ID of the batch the job is a member of (see Enqueuer.NewBatch); empty for most jobs.
	Batch string `json:"batch,omitempty"`
	// Tracked is set for a job that has a record from its enqueue on (see EnqueueOptions.Track):
	// the pool that finishes it updates the record and starts the jobs waiting for it.
	Tracked bool `json:"tracked,omitempty"`
	// KeyHold is set on a keyed job waiting in the retry set that keeps its key's concurrency slot
	// (JobOptions.KeyRetryInOrder): the pools free the slot when they move the job back to the front
	// of its key's queue, or when the Client deletes it.
	KeyHold bool `json:"key_hold,omitempty"`
	// Key is the job's key (EnqueueOptions.Key): the tenant, account or other party it works for,
	// whose jobs of its name are dispatched fairly against other keys' and within the limits set per
	// key (JobOptions.KeyConcurrency, KeyRateLimit). Empty for a job without one.
	Key string `json:"key,omitempty"`
	// ScheduleID and Tick are set on a job enqueued by a schedule (Client.SetSchedule): the
	// schedule's ID and the tick the job stands for, in epoch seconds (the time the spec named, before
	// any jitter). Each tick is enqueued once, so (ScheduleID, Tick) can serve as a handler's
	// idempotency key; a job of Client.RunScheduleNow has the time it was asked for as its Tick.
	ScheduleID string `json:"schedule_id,omitempty"`
	Tick       int64  `json:"tick,omitempty"`
	// Debounce is set on the pending job of a burst of debounced enqueues (EnqueueOptions.Debounce):
	// the burst's debounce ID, so that the Client can replace or reschedule the job and keep it the
	// burst's. Empty for other jobs.
	Debounce string `json:"debounce,omitempty"`
	// Group is set on a job enqueued into a group (EnqueueOptions.Group), and on the call job that
	// carries a group's jobs to its handler (WorkerPool.GroupJob): the group key. Empty for other
	// jobs.
	Group string `json:"group,omitempty"`

	// Raw holds, for a record in the dead set that stands for a payload that could not be decoded,
	// the original payload bytes, verbatim. It is empty for every decodable job.
	//
	// In the records the library writes, and in the JSON of ScheduledJob, RetryJob, DeadJob and
	// JobLocation, it is the string raw_text when it is valid UTF-8, so that the payload reads as
	// itself, and base64 in raw_base64 otherwise. json.Marshal of a bare Job writes raw_base64. Records
	// of earlier versions hold it in base64 as raw_payload. Decoding reads all three.
	Raw []byte `json:"raw_base64,omitempty"`

	raw    []byte      // the bytes as fetched from Redis (the in-progress member)
	rawArg interface{} // raw as the fetch reply held it, ready to pass back as a script argument
	q      *queue      // the queue it was fetched from
	epoch  uint64      // the pool's lease epoch when it was fetched (see lease)
	handed bool        // it came by hand-off: its outcome may be written quietly (see quietWriter)
	// A keyed job's in-progress entry (rawArg) is the key whose queue it was fetched from, a line
	// feed, then raw: see fetchedKey.
	argError error
	observer *workerState // set while a worker runs the job, for Checkin
	result   []byte       // set by SetResult
}

// fetchedKey returns the key whose queue a keyed job was fetched from (nil for a job of a name's own
// queue): the start of its in-progress entry, up to the line feed.
func (j *Job) fetchedKey() []byte {
	if j.q == nil || !j.q.keyed {
		return nil
	}
	return rdb.KeyedEntryKey(j.rawArg)
}

// setWire sets j's exported fields, those of the wire format, to w's, leaving the others (how the
// job was fetched, which the pool's sweeper reads) untouched.
func (j *Job) setWire(w *jobWire) {
	j.Name, j.ID, j.EnqueuedAt, j.Args, j.Unique, j.UniqueKey = w.Name, w.ID, w.EnqueuedAt, w.Args, w.Unique, w.UniqueKey
	j.Fails, j.LastErr, j.FailedAt = w.Fails, w.LastErr, w.FailedAt
	j.Batch, j.Tracked, j.KeyHold, j.Key, j.Raw = w.Batch, w.Tracked, w.KeyHold, w.Key, w.Raw
	j.ScheduleID, j.Tick, j.Debounce, j.Group = w.ScheduleID, w.Tick, w.Debounce, w.Group
}

// ScheduledJob represents a job in the scheduled queue.
type ScheduledJob struct {
	RunAt int64 `json:"run_at"`
	*Job
}

// RetryJob represents a job in the retry queue.
type RetryJob struct {
	RetryAt int64 `json:"retry_at"`
	*Job
}

// DeadJob represents a job in the dead queue.
type DeadJob struct {
	DiedAt int64 `json:"died_at"`
	*Job
}

// makeIdentifier returns 24 lowercase hex characters from 12 random bytes.
func makeIdentifier() string {
	var b [12]byte
	if _, err := io.ReadFull(rand.Reader, b[:]); err != nil {
		// crypto/rand does not fail on supported platforms; fall back to the clock rather than panic.
		binaryPutTime(b[:])
	}
	return hex.EncodeToString(b[:])
}

var idFallback atomic.Uint64

func binaryPutTime(b []byte) {
	v := uint64(time.Now().UnixNano()) ^ idFallback.Add(0x9E3779B97F4A7C15)
	for i := range b {
		b[i] = byte(v >> (8 * (i % 8)))
	}
}

func nowEpochSeconds() int64 { return time.Now().Unix() }

// serialize encodes the job in its wire format. A job that carries Raw (a dead record) is encoded as
// jobJSON; every other job as json.Marshal writes it, without reflection for the usual shapes
// (encodeFast).
func (j *Job) serialize() ([]byte, error) {
	if len(j.Raw) == 0 {
		if b, ok := encodeFast(make([]byte, 0, 96+len(j.Name)+16*len(j.Args)), j); ok {
			return b, nil
		}
		return json.Marshal(j)
	}
	return marshalReadable(newJobJSON(j))
}

// jobWire is Job without its methods, to decode into without recursion.
type jobWire Job

// jobJSON is the JSON form of a job with Raw as records keep it: text in raw_text when the bytes are
// valid UTF-8 (JSON-escaped only where JSON requires), else base64 in raw_base64. Its RawBase64, by
// the same name at a shallower depth, hides the Raw of jobWire. raw_payload, base64, is the form of
// earlier versions: it is read, never written.
type jobJSON struct {
	jobWire
	RawText    string `json:"raw_text,omitempty"`
	RawBase64  []byte `json:"raw_base64,omitempty"`
	RawPayload []byte `json:"raw_payload,omitempty"`
}

// newJobJSON returns j in the form records keep it; nil for nil.
func newJobJSON(j *Job) *jobJSON {
	if j == nil {
		return nil
	}
	out := &jobJSON{jobWire: jobWire(*j)}
	if utf8.Valid(j.Raw) {
		out.RawText = string(j.Raw)
	} else {
		out.RawBase64 = j.Raw
	}
	return out
}

// raw returns the original bytes a decoded record holds, in whichever form, or nil.
func (in *jobJSON) raw() []byte {
	switch {
	case in.RawText != "":
		return []byte(in.RawText)
	case len(in.RawBase64) > 0:
		return in.RawBase64
	case len(in.RawPayload) > 0:
		return in.RawPayload
	}
	return nil
}

// marshalReadable encodes v without escaping <, > and &, which JSON does not require: a record then
// shows such a payload as it was pushed. An encoder that escapes them still does so around it.
func marshalReadable(v interface{}) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// UnmarshalJSON decodes the wire format as workers do: numbers in Args decode as float64, as with
// encoding/json, except integers that a float64 cannot hold exactly (beyond 2^53), which stay
// json.Number so that they survive a retry unchanged and ArgInt64 reads them exactly.
func (j *Job) UnmarshalJSON(data []byte) error {
	w, err := decodeWire(data)
	if err != nil {
		return err
	}
	*j = Job(*w)
	return nil
}

// The listed-job types embed *Job, so they need decoders of their own: Job's would be promoted and
// drop their score.

// UnmarshalJSON decodes a scheduled job: run_at and the job's fields.
func (j *ScheduledJob) UnmarshalJSON(data []byte) error {
	var head struct {
		RunAt int64 `json:"run_at"`
	}
	job, err := decodeListed(data, &head)
	j.RunAt, j.Job = head.RunAt, job
	return err
}

// UnmarshalJSON decodes a retry job: retry_at and the job's fields.
func (j *RetryJob) UnmarshalJSON(data []byte) error {
	var head struct {
		RetryAt int64 `json:"retry_at"`
	}
	job, err := decodeListed(data, &head)
	j.RetryAt, j.Job = head.RetryAt, job
	return err
}

// UnmarshalJSON decodes a dead job: died_at and the job's fields.
func (j *DeadJob) UnmarshalJSON(data []byte) error {
	var head struct {
		DiedAt int64 `json:"died_at"`
	}
	job, err := decodeListed(data, &head)
	j.DiedAt, j.Job = head.DiedAt, job
	return err
}

// The listed-job types encode their job as records keep it (see Job.Raw), so that a dead record of a
// payload that could not be decoded shows that payload as text.

// MarshalJSON encodes a scheduled job: run_at and the job's fields.
func (j ScheduledJob) MarshalJSON() ([]byte, error) {
	return marshalReadable(struct {
		RunAt int64 `json:"run_at"`
		*jobJSON
	}{j.RunAt, newJobJSON(j.Job)})
}

// MarshalJSON encodes a retry job: retry_at and the job's fields.
func (j RetryJob) MarshalJSON() ([]byte, error) {
	return marshalReadable(struct {
		RetryAt int64 `json:"retry_at"`
		*jobJSON
	}{j.RetryAt, newJobJSON(j.Job)})
}

// MarshalJSON encodes a dead job: died_at and the job's fields.
func (j DeadJob) MarshalJSON() ([]byte, error) {
	return marshalReadable(struct {
		DiedAt int64 `json:"died_at"`
		*jobJSON
	}{j.DiedAt, newJobJSON(j.Job)})
}

func decodeListed(data []byte, head interface{}) (*Job, error) {
	if err := json.Unmarshal(data, head); err != nil {
		return nil, err
	}
	w, err := decodeWire(data)
	if err != nil {
		return nil, err
	}
	return (*Job)(w), nil
}

func decodeWire(data []byte) (*jobWire, error) {
	in := new(jobJSON)
	w := &in.jobWire
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(in); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON object")
	}
	w.Raw = in.raw()
	for k, v := range w.Args {
		w.Args[k] = normalizeNumber(v)
	}
	return w, nil
}

// decodeJob decodes a fetched payload (see UnmarshalJSON) and checks it can run: it needs a name.
func decodeJob(raw []byte) (*Job, error) {
	w, err := decodeWire(raw)
	if err != nil {
		return nil, fmt.Errorf("malformed job payload: %w", err)
	}
	if w.Name == "" {
		return nil, errors.New("malformed job payload: no job name")
	}
	j := (*Job)(w)
	j.raw = raw
	return j, nil
}

func normalizeNumber(v interface{}) interface{} {
	switch x := v.(type) {
	case json.Number:
		s := string(x)
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			if i >= -(1<<53) && i <= 1<<53 {
				f, _ := strconv.ParseFloat(s, 64) // exact here, and keeps the sign of -0
				return f
			}
			return x
		}
		if isIntegerLiteral(s) {
			return x // beyond int64: keep it exact
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return f
		}
		return x
	case map[string]interface{}:
		for k, e := range x {
			x[k] = normalizeNumber(e)
		}
	case []interface{}:
		for i, e := range x {
			x[i] = normalizeNumber(e)
		}
	}
	return v
}

func isIntegerLiteral(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && !(i == 0 && c == '-') {
			return false
		}
	}
	return true
}

// MaxResultSize bounds the result a handler may record with SetResult.
const MaxResultSize = 64 << 10

// SetResult records v, encoded as JSON, as the job's result. It is stored with the job's record
// when the job succeeds, if the job has one (a tracked job, or a pool that keeps records of its
// name: JobOptions.KeepFinished), and read back with Client.JobRecord; otherwise it is dropped. A
// later call replaces the result.
func (j *Job) SetResult(v interface{}) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("work: job result: %w", err)
	}
	if len(b) > MaxResultSize {
		return ErrResultTooLarge
	}
	j.result = b
	return nil
}

// Checkin records a progress message for the running job. The web UI and Client.WorkerObservations
// show it. It is cheap: the message is written to Redis at most once a second per worker.
func (j *Job) Checkin(msg string) {
	if w := j.observer; w != nil {
		w.checkin(msg)
	}
}

// ArgString returns j.Args[key] typed to a string. If the key is missing or of the wrong type, it sets
// an argument error and returns "". Call ArgError after reading the args to check for such errors.
func (j *Job) ArgString(key string) string {
	v, ok := j.Args[key]
	if !ok {
		j.argError = missingKeyError("string", key)
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	j.argError = typecastError("string", key, v)
	return ""
}

// ArgInt64 returns j.Args[key] typed to an int64. It accepts integer kinds, integral floats within
// ±2^53 (as JSON numbers decode) and exact big integers. Otherwise it sets an argument error and
// returns 0; see ArgError.
func (j *Job) ArgInt64(key string) int64 {
	v, ok := j.Args[key]
	if !ok {
		j.argError = missingKeyError("int64", key)
		return 0
	}
	if n, ok := v.(json.Number); ok {
		if i, err := n.Int64(); err == nil {
			return i
		}
		j.argError = typecastError("int64", key, v)
		return 0
	}
	rv := reflect.ValueOf(v)
	switch {
	case isIntKind(rv):
		return rv.Int()
	case isUintKind(rv):
		if u := rv.Uint(); u <= math.MaxInt64 {
			return int64(u)
		}
	case isFloatKind(rv):
		f := rv.Float()
		if f == math.Trunc(f) && f >= -(1<<53) && f <= 1<<53 {
			return int64(f)
		}
	}
	j.argError = typecastError("int64", key, v)
	return 0
}

// ArgFloat64 returns j.Args[key] typed to a float64, converting any number kind. Otherwise it sets an
// argument error and returns 0.0; see ArgError.
func (j *Job) ArgFloat64(key string) float64 {
	v, ok := j.Args[key]
	if !ok {
		j.argError = missingKeyError("float64", key)
		return 0.0
	}
	if n, ok := v.(json.Number); ok {
		if f, err := n.Float64(); err == nil {
			return f
		}
		j.argError = typecastError("float64", key, v)
		return 0.0
	}
	rv := reflect.ValueOf(v)
	switch {
	case isFloatKind(rv):
		return rv.Float()
	case isIntKind(rv):
		return float64(rv.Int())
	case isUintKind(rv):
		return float64(rv.Uint())
	}
	j.argError = typecastError("float64", key, v)
	return 0.0
}

// ArgBool returns j.Args[key] typed to a bool. Otherwise it sets an argument error and returns false;
// see ArgError.
func (j *Job) ArgBool(key string) bool {
	v, ok := j.Args[key]
	if !ok {
		j.argError = missingKeyError("bool", key)
		return false
	}
	if b, ok := v.(bool); ok {
		return b
	}
	j.argError = typecastError("bool", key, v)
	return false
}

// ArgError returns the last error generated when extracting typed params. Returns nil if extracting
// the args went fine.
func (j *Job) ArgError() error { return j.argError }

func isIntKind(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return true
	}
	return false
}

func isUintKind(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

func isFloatKind(v reflect.Value) bool {
	k := v.Kind()
	return k == reflect.Float32 || k == reflect.Float64
}

func missingKeyError(jsonType, key string) error {
	return fmt.Errorf("looking for a %s in job.Arg[%s] but key wasn't found", jsonType, key)
}

func typecastError(jsonType, key string, v interface{}) error {
	return fmt.Errorf("looking for a %s in job.Arg[%s] but value wasn't right type: %T(%v)", jsonType, key, v, v)
}
