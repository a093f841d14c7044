package work

// Connecting to a secured Redis: a password (requirepass), an ACL user with only the permissions the
// library needs, and TLS (with client certificates). A worker pool, an enqueuer and a Client each
// must work through such connections, including the wake-up subscription, the Lua scripts, crash
// recovery and periodic jobs, against a real redis-server started by the test.
//
// The ACL rule set that suffices for a namespace "app" (every key under "app:", the namespace's
// pub/sub channels app:wake, app:cancel and app:ended):
//
//	ACL SETUSER worker on >password resetkeys ~app:* resetchannels &app:* -@all
//	    +time +evalsha +eval +publish +subscribe +unsubscribe +punsubscribe +echo +ping +wait
//	    +get +set +del +unlink +exists +expire +type +incrby +decr +decrby
//	    +lpush +rpush +lpop +rpop +rpoplpush +lrem +llen +lindex +lrange +lpos +ttl
//	    +sadd +srem +smembers +sismember +spop +mget
//	    +hset +hget +hmget +hdel +hgetall +hincrby +hkeys +hvals +hlen +hscan
//	    +zadd +zrem +zrange +zrevrange +zrangebyscore +zcard +zcount +zscan +zremrangebyrank
//	    +zpopmin +zscore +zmscore +client|reply +script|load
//
// (connsecCommands below; the commands inside the Lua scripts need the permission too, TIME among
// them; unsubscribe, punsubscribe and echo are what redigo's pool sends when it takes back a
// connection that was subscribed; ping only serves a pool's TestOnBorrow; wait only the enqueuer's
// replica wait; client|reply and script|load a pool's quiet connection, without which it writes
// every outcome with a reply). Less tight: "~app:* &app:* +@all -@dangerous". A namespace written
// with a trailing colon ("app:") needs the same patterns.

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work/internal/rdb"
	"github.com/workqueue/work/internal/redistest"
)

// connsecCommands is the tightest command set the library needs (see the file comment).
var connsecCommands = []string{
	"time", "evalsha", "eval", "publish", "subscribe", "unsubscribe", "punsubscribe", "echo", "ping", "wait",
	"get", "set", "del", "unlink", "exists", "expire", "type", "incrby", "decr", "decrby",
	"lpush", "rpush", "lpop", "rpop", "rpoplpush", "lrem", "llen", "lindex", "lrange", "lpos", "ttl",
	"sadd", "srem", "smembers", "sismember", "spop", "mget",
	"hset", "hget", "hmget", "hdel", "hgetall", "hincrby", "hkeys", "hvals", "hlen", "hscan",
	"zadd", "zrem", "zrange", "zrevrange", "zrangebyscore", "zcard", "zcount", "zscan", "zremrangebyrank",
	"zpopmin", "zscore", "zmscore", "client|reply", "script|load",
}

// connsecServer starts a private redis-server with the given extra arguments and returns its
// address. It skips the test when redis-server is missing; startErr gets the server's output when
// it does not come up (nil: fail the test).
func connsecServer(t *testing.T, ready func(addr string) error, startErr func(out string), args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed")
	}
	port := connsecFreePort(t)
	dir := t.TempDir()
	full := append([]string{"--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir}, args...)
	for i, a := range full {
		full[i] = strings.ReplaceAll(a, "PORT", strconv.Itoa(port))
	}
	cmd := exec.Command(bin, full...)
	var out bytes.Buffer
	var outMu sync.Mutex
	cmd.Stdout = &connsecWriter{&out, &outMu}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGKILL); <-exited })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-exited:
			outMu.Lock()
			s := out.String()
			outMu.Unlock()
			if startErr != nil {
				startErr(s)
			}
			t.Fatalf("redis-server exited at start:\n%s", s)
		default:
		}
		if err = ready(addr); err == nil {
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server did not come up: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type connsecWriter struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (w *connsecWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func connsecFreePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func connsecPool(dial func() (redis.Conn, error)) *redis.Pool {
	return &redis.Pool{MaxIdle: 10, MaxActive: 50, Wait: true, IdleTimeout: time.Minute, Dial: dial}
}

// wakeWatch is the Backend of a worker pool under test: commands go to conn, the subscription to
// sub, and it counts what the subscription brings.
type wakeWatch struct {
	conn, sub Backend
	channel   string // the namespace's wake-up channel

	mu      sync.Mutex
	wakeups map[string]int // wake-up messages received, by job name (a hand-off counts as one)
	handOff string         // the prefix of the pools' hand-off channels
	subs    int            // subscriptions established (each makes the pool look at every queue)
	ended   int            // subscriptions ended (the pool looks while it subscribes again)
	up      bool           // subscribed: a wake-up published now reaches the pool
}

// wakeCounts are a wakeWatch's counts at one moment, for one job name.
type wakeCounts struct {
	wakeups, subs, ended int
	up                   bool
}

func newWakeWatch(ns string, conn, sub Backend) *wakeWatch {
	ks := rdb.NewKeyspace(ns)
	return &wakeWatch{conn: conn, sub: sub, channel: ks.WakeChannel(), handOff: ks.HandOffChannel(""), wakeups: map[string]int{}}
}

func (w *wakeWatch) Conn(ctx context.Context) (redis.Conn, error) { return w.conn.Conn(ctx) }

func (w *wakeWatch) Subscribe(ctx context.Context, channels []string, subscribed func(), message func(string, []byte)) error {
	err := w.sub.Subscribe(ctx, channels, func() {
		// Counted before the pool learns of it, so before the look it makes in reply.
		w.mu.Lock()
		w.subs++
		w.up = true
		w.mu.Unlock()
		subscribed()
	}, func(channel string, data []byte) {
		if channel == w.channel {
			w.mu.Lock()
			w.wakeups[string(data)]++
			w.mu.Unlock()
		} else if name := handOffName(data); strings.HasPrefix(channel, w.handOff) && name != "" {
			// The job itself, handed to the pool: its wake-up and its fetch in one.
			w.mu.Lock()
			w.wakeups[name]++
			w.mu.Unlock()
		}
		message(channel, data)
	})
	// Counted before the pool learns of it, so before any look it makes in reply.
	w.mu.Lock()
	w.ended++
	w.up = false
	w.mu.Unlock()
	return err
}

// handOffName returns the job name of a hand-off message, "" for a marker or a message of another
// form.
func handOffName(data []byte) string {
	h, _ := rdb.ParseHandOff(data)
	return h.Name
}

func (w *wakeWatch) counts(name string) wakeCounts {
	w.mu.Lock()
	defer w.mu.Unlock()
	return wakeCounts{wakeups: w.wakeups[name], subs: w.subs, ended: w.ended, up: w.up}
}

// connsecIdlePickups checks, need times, that a job enqueued to a pool idle for idle is found through
// its wake-up. The pool (job "idle") sends its commands through conn and subscribes through sub; its
// own looks are an hour apart (each heartbeat is a look too), so while its subscription stays up
// nothing but the wake-up can find the job. A round in which the subscription ended or was made
// again (the pool then looks at once, as it should, maybe only after the enqueue on a busy machine),
// or was down at the enqueue, tells nothing and is played again. Counted, not timed: a busy machine
// makes a pickup slow, not wrong.
func connsecIdlePickups(t *testing.T, ns string, conn, sub Backend, logs io.Writer, idle time.Duration, need int) {
	t.Helper()
	watch := newWakeWatch(ns, conn, sub)
	type run struct {
		at time.Time
		wakeCounts
	}
	var mu sync.Mutex
	runs := map[string]run{}
	wp := NewWorkerPoolWithBackend(hstCtx{}, 1, ns, watch, WorkerPoolOptions{
		Logger:            slog.New(slog.NewTextHandler(logs, nil)),
		HeartbeatInterval: time.Hour,
		SleepBackoffs:     []int64{int64(time.Hour / time.Millisecond)},
	})
	wp.Job("idle", func(j *Job) error {
		c := watch.counts("idle")
		mu.Lock()
		runs[j.ID] = run{time.Now(), c}
		mu.Unlock()
		return nil
	})
	wp.Start()
	defer wp.Stop()
	deadline := time.Now().Add(30 * time.Second)
	for watch.counts("idle").subs == 0 {
		if time.Now().After(deadline) {
			t.Errorf("the idle pool did not subscribe")
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	e := NewEnqueuerWithBackend(ns, conn)
	found, rounds := 0, 0
	var slowest time.Duration
	for ; found < need && rounds < 10*need; rounds++ {
		// Drain waits out the looks of the subscription's changes so far, the start-up's and the last
		// job's: no queue is ready after it, the pool waits.
		settled := watch.counts("idle")
		wp.Drain()
		time.Sleep(idle)
		before := watch.counts("idle")
		start := time.Now()
		j, err := e.Enqueue("idle", Q{"round": rounds})
		if err != nil {
			t.Errorf("Enqueue: %v", err)
			return
		}
		var r run
		for ok := false; !ok; {
			mu.Lock()
			r, ok = runs[j.ID]
			mu.Unlock()
			if !ok && time.Since(start) > 30*time.Second {
				t.Errorf("a job enqueued to an idle pool did not run: its wake-up was missed (the pool's looks are an hour apart)")
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
		if !before.up || r.subs != settled.subs || r.ended != settled.ended {
			continue
		}
		if r.wakeups == before.wakeups {
			t.Errorf("a job enqueued to an idle pool ran before its wake-up came, though no look was due")
		}
		found++
		slowest = max(slowest, r.at.Sub(start))
	}
	c := watch.counts("idle")
	t.Logf("idle pickup: %d of %d jobs found through their wake-up, the slowest in %v; the subscription ended %d times",
		found, rounds, slowest, c.ended)
	if found < need {
		t.Errorf("only %d of %d jobs enqueued to an idle pool were found through their wake-up: the subscription ended around the others",
			found, rounds)
	}
}

func connsecPing(dial func() (redis.Conn, error)) error {
	c, err := dial()
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Do("PING")
	return err
}

// connsecExercise uses a worker pool, an enqueuer and a Client through pool, in namespace ns. admin
// is a connection pool with every right, used to set the scene and read the ACL log.
func connsecExercise(t *testing.T, pool, admin *redis.Pool, ns string) {
	t.Helper()
	logs := &hstBuffer{}
	var mu sync.Mutex
	ran := map[string]int{}
	var ticks atomic.Int64
	handler := func(fail bool) func(*Job) error {
		return func(j *Job) error {
			mu.Lock()
			ran[j.ID]++
			mu.Unlock()
			if fail {
				return errors.New("fails on purpose")
			}
			return nil
		}
	}
	waitRan := func(id string, within time.Duration) bool {
		deadline := time.Now().Add(within)
		for time.Now().Before(deadline) {
			mu.Lock()
			n := ran[id]
			mu.Unlock()
			if n > 0 {
				return true
			}
			time.Sleep(5 * time.Millisecond)
		}
		return false
	}
	adminDo := func(cmd string, args ...interface{}) interface{} {
		t.Helper()
		c := admin.Get()
		defer c.Close()
		v, err := c.Do(cmd, args...)
		if err != nil {
			t.Fatalf("admin %s: %v", cmd, err)
		}
		return v
	}
	ks := rdb.NewKeyspace(ns)
	// A crashed pool holding a job: the pool under test must reap it through its restricted connection.
	adminDo("SADD", ks.WorkerPools(), "crashed")
	adminDo("HSET", ks.Heartbeat("crashed"), "heartbeat_at", time.Now().Unix()-60, "job_names", "work")
	adminDo("LPUSH", ks.InProgress("work", "crashed"), `{"name":"work","id":"held-by-crashed","t":1,"args":{}}`)
	adminDo("HSET", ks.LockInfo("work"), "crashed", 1)

	wp := NewWorkerPoolWithOptions(hstCtx{}, 3, ns, pool, WorkerPoolOptions{
		Logger:            slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
		HeartbeatInterval: time.Second,
		DeadPoolTimeout:   3 * time.Second,
	})
	wp.JobWithOptions("work", JobOptions{MaxConcurrency: 2}, handler(false))
	wp.JobWithOptions("fail", JobOptions{MaxFails: 1}, handler(true))
	wp.Job("tick", func(*Job) error { ticks.Add(1); return nil })
	// A long job reporting progress, and the step after it, which reads its result.
	wp.Job("long", func(j *Job) error {
		for start := time.Now(); time.Since(start) < 1500*time.Millisecond; time.Sleep(20 * time.Millisecond) {
			if err := j.SetProgress(float64(time.Since(start))/float64(1500*time.Millisecond), "crunching"); err != nil {
				return err
			}
		}
		return j.SetResult("long done")
	})
	depResults := make(chan []*JobRecord, 1)
	wp.Job("after_long", func(j *Job) error {
		recs, err := j.DependencyResults(context.Background())
		if err != nil {
			return err
		}
		depResults <- recs
		return nil
	})
	wp.PeriodicallyEnqueue("@every 1s", "tick")
	wp.Start()
	stopped := false
	defer func() {
		if !stopped {
			wp.Stop()
		}
	}()

	e := NewEnqueuer(ns, pool)
	var ids []string
	add := func(what string, id string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", what, err)
			return
		}
		ids = append(ids, id)
	}
	j, err := e.Enqueue("work", Q{"a": 1})
	if err == nil {
		add("Enqueue", j.ID, nil)
	} else {
		add("Enqueue", "", err)
	}
	if sj, err := e.EnqueueIn("work", 0, Q{"a": 2}); err == nil {
		add("EnqueueIn", sj.ID, nil)
	} else {
		add("EnqueueIn", "", err)
	}
	if j, err := e.EnqueueUnique("work", Q{"a": 3}); err == nil && j != nil {
		add("EnqueueUnique", j.ID, nil)
	} else {
		add("EnqueueUnique", "", fmt.Errorf("job %v, err %v", j, err))
	}
	if j, err := e.EnqueueUniqueByKey("work", Q{"a": 4}, Q{"k": 4}); err == nil && j != nil {
		add("EnqueueUniqueByKey", j.ID, nil)
	} else {
		add("EnqueueUniqueByKey", "", fmt.Errorf("job %v, err %v", j, err))
	}
	if js, err := e.EnqueueBatch([]BatchJob{{Name: "work", Args: Q{"a": 5}}, {Name: "work", Args: Q{"a": 6}}}); err == nil {
		for _, j := range js {
			add("EnqueueBatch", j.ID, nil)
		}
	} else {
		add("EnqueueBatch", "", err)
	}
	failing, err := e.Enqueue("fail", nil)
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	ids = append(ids, failing.ID, "held-by-crashed")
	for _, id := range ids {
		if !waitRan(id, 10*time.Second) {
			t.Errorf("job %s did not run", id)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for ticks.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if ticks.Load() == 0 {
		t.Errorf("the periodic job did not run")
	}
	// Idle pickup goes through the wake-up subscription, through this connection.
	b := PoolBackend(pool)
	connsecIdlePickups(t, ns, b, b, logs, 1500*time.Millisecond, 1)

	// A long job's running state and progress reach its record, a waiter hears its end, and the step
	// after it reads its result: the record script, the end channel and the dependency script.
	c := NewClient(ns, pool)
	if steps, err := e.EnqueueChain(ChainStep{Name: "long"}, ChainStep{Name: "after_long"}); err != nil {
		t.Errorf("EnqueueChain: %v", err)
	} else {
		eventually(t, 10*time.Second, "the long job's progress in its record", func() bool {
			rec, err := c.JobRecord(steps[0].ID)
			return err == nil && rec.State == "running" && rec.Progress != nil
		})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		rec, err := c.WaitJob(ctx, steps[0].ID)
		cancel()
		if err != nil || rec.State != "done" || string(rec.Result) != `"long done"` {
			t.Errorf("WaitJob: %+v, %v", rec, err)
		}
		select {
		case recs := <-depResults:
			if len(recs) != 1 || recs[0].ID != steps[0].ID || string(recs[0].Result) != `"long done"` {
				t.Errorf("DependencyResults: %+v", recs)
			}
		case <-time.After(20 * time.Second):
			t.Errorf("the chain's second step did not run")
		}
	}

	// The Client: the gocraft methods with real arguments, then every method once.
	if qs, err := c.Queues(); err != nil || len(qs) == 0 {
		t.Errorf("Queues: %v, %v", qs, err)
	}
	if hbs, err := c.WorkerPoolHeartbeats(); err != nil || len(hbs) != 1 {
		t.Errorf("WorkerPoolHeartbeats: %d pools, %v", len(hbs), err)
	}
	if _, err := c.WorkerObservations(); err != nil {
		t.Errorf("WorkerObservations: %v", err)
	}
	if _, _, err := c.ScheduledJobs(1); err != nil {
		t.Errorf("ScheduledJobs: %v", err)
	}
	if _, _, err := c.RetryJobs(1); err != nil {
		t.Errorf("RetryJobs: %v", err)
	}
	dead, _, err := c.DeadJobs(1)
	if err != nil || len(dead) != 1 {
		t.Errorf("DeadJobs: %d jobs, %v", len(dead), err)
	} else if err := c.RetryDeadJob(dead[0].DiedAt, dead[0].ID); err != nil {
		t.Errorf("RetryDeadJob: %v", err)
	}
	if err := c.PauseQueue("work"); err != nil {
		t.Errorf("PauseQueue: %v", err)
	}
	if err := c.UnpauseQueue("work"); err != nil {
		t.Errorf("UnpauseQueue: %v", err)
	}
	connsecEveryClientMethod(t, c)
	drained := make(chan struct{})
	go func() { defer close(drained); wp.Drain() }()
	select {
	case <-drained:
	case <-time.After(2 * time.Minute): // ends a Drain that would never return, however slow the machine
		t.Errorf("Drain did not return within 2 minutes")
		wp.Stop() // ends the Drain
		stopped = true
		<-drained
	}
	if err := c.DeleteAllDeadJobs(); err != nil {
		t.Errorf("DeleteAllDeadJobs: %v", err)
	}
	if !stopped {
		wp.Stop()
		stopped = true
	}
	var bad []string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "level=ERROR") || strings.Contains(line, "subscription lost") ||
			(strings.Contains(line, "level=WARN") && !strings.Contains(line, "job failed") && !strings.Contains(line, "reaped dead pool")) {
			bad = append(bad, line)
		}
	}
	if len(bad) > 0 {
		if len(bad) > 8 {
			bad = append(bad[:8], fmt.Sprintf("... and %d more", len(bad)-8))
		}
		t.Errorf("the pool logged errors or warnings:\n%s", strings.Join(bad, "\n"))
	}
	// Whatever the ACL refused, by command and key.
	ac := admin.Get()
	defer ac.Close()
	if entries, err := redis.Values(ac.Do("ACL", "LOG")); err == nil {
		for _, en := range entries {
			fields, _ := redis.Values(en, nil)
			m := map[string]string{}
			for i := 0; i+1 < len(fields); i += 2 {
				k, _ := redis.String(fields[i], nil)
				m[k] = fmt.Sprint(fields[i+1])
				if b, ok := fields[i+1].([]byte); ok {
					m[k] = string(b)
				}
			}
			t.Errorf("ACL LOG: %s denied in %s: %q (user %q)", m["reason"], m["context"], m["object"], m["username"])
		}
	}
}

// connsecEveryClientMethod calls every exported Client method once with plain arguments and fails on a
// permission error: the ACL rule set must cover the whole Client.
func connsecEveryClientMethod(t *testing.T, c *Client) {
	t.Helper()
	cv := reflect.ValueOf(c)
	ct := cv.Type()
	for i := 0; i < ct.NumMethod(); i++ {
		m := ct.Method(i)
		if strings.HasPrefix(m.Name, "Pause") {
			continue
		}
		var args []reflect.Value
		for p := 1; p < m.Type.NumIn(); p++ {
			pt := m.Type.In(p)
			switch {
			case pt == reflect.TypeOf((*context.Context)(nil)).Elem():
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				defer cancel()
				args = append(args, reflect.ValueOf(ctx))
			case pt == reflect.TypeOf(time.Time{}):
				args = append(args, reflect.ValueOf(time.Now().Add(-time.Hour)))
			case pt.Kind() == reflect.String:
				args = append(args, reflect.ValueOf("work").Convert(pt))
			case pt.Kind() == reflect.Uint:
				args = append(args, reflect.ValueOf(uint(1)))
			default:
				args = append(args, reflect.Zero(pt))
			}
		}
		var outs []reflect.Value
		if p := hstRecover(func() { outs = cv.Method(i).Call(args) }); p != nil {
			t.Errorf("Client.%s panicked: %v", m.Name, p)
			continue
		}
		if len(outs) > 0 {
			if err, ok := outs[len(outs)-1].Interface().(error); ok && err != nil && strings.Contains(err.Error(), "NOPERM") {
				t.Errorf("Client.%s: %v", m.Name, err)
			}
		}
	}
}

func TestConnSecPassword(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a redis-server")
	}
	const password = "s3cret pass:word"
	dialWith := func(addr, pw string) func() (redis.Conn, error) {
		return func() (redis.Conn, error) {
			return redis.Dial("tcp", addr, redis.DialPassword(pw), redis.DialConnectTimeout(2*time.Second))
		}
	}
	addr := connsecServer(t, func(a string) error { return connsecPing(dialWith(a, password)) }, nil,
		"--port", "PORT", "--requirepass", password)
	pool := connsecPool(dialWith(addr, password))
	defer pool.Close()
	connsecExercise(t, pool, pool, "app")

	// The wrong password: every call returns an error; nothing panics or hangs.
	bad := connsecPool(dialWith(addr, "wrong"))
	defer bad.Close()
	connsecRefused(t, bad, "app", "WRONGPASS")
}

// connsecRefused checks that the enqueuer, the Client and a worker pool return or log errors through
// a connection that Redis refuses, and that Start and Stop return.
func connsecRefused(t *testing.T, pool *redis.Pool, ns, mention string) {
	t.Helper()
	if _, err := NewEnqueuer(ns, pool).Enqueue("work", nil); err == nil || !strings.Contains(err.Error(), mention) {
		t.Errorf("Enqueue through a refused connection: %v, want an error mentioning %s", err, mention)
	}
	if _, err := NewClient(ns, pool).Queues(); err == nil {
		t.Errorf("Client.Queues through a refused connection: no error")
	}
	logs := &hstBuffer{}
	wp := NewWorkerPoolWithOptions(hstCtx{}, 1, ns, pool, WorkerPoolOptions{
		Logger: slog.New(slog.NewTextHandler(logs, nil)), HeartbeatInterval: time.Second, DeadPoolTimeout: 3 * time.Second})
	wp.Job("work", func(*Job) error { return nil })
	done := make(chan struct{})
	go func() {
		defer close(done)
		wp.Start()
		time.Sleep(500 * time.Millisecond)
		wp.Stop()
	}()
	hstWait(t, "Start/Stop of a pool whose connections are refused", done)
	if !strings.Contains(logs.String(), mention) {
		t.Errorf("a pool whose connections are refused logged nothing mentioning %s:\n%s", mention, logs.String())
	}
}

func TestConnSecACLUser(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a redis-server")
	}
	const adminPW = "admin-pw"
	dialAs := func(addr, user, pw string) func() (redis.Conn, error) {
		return func() (redis.Conn, error) {
			return redis.Dial("tcp", addr, redis.DialUsername(user), redis.DialPassword(pw), redis.DialConnectTimeout(2*time.Second))
		}
	}
	addr := connsecServer(t, func(a string) error { return connsecPing(dialAs(a, "default", adminPW)) }, nil,
		"--port", "PORT", "--requirepass", adminPW)
	admin := connsecPool(dialAs(addr, "default", adminPW))
	defer admin.Close()
	setUser := func(user string, rules ...string) {
		t.Helper()
		c := admin.Get()
		defer c.Close()
		args := []interface{}{"SETUSER", user, "reset", "on", ">pw-" + user}
		for _, r := range rules {
			args = append(args, r)
		}
		if _, err := c.Do("ACL", args...); err != nil {
			t.Fatalf("ACL SETUSER %s %v: %v", user, rules, err)
		}
	}
	resetLog := func() {
		c := admin.Get()
		defer c.Close()
		c.Do("ACL", "LOG", "RESET")
	}

	t.Run("tight_rules", func(t *testing.T) {
		rules := []string{"resetkeys", "~tight:*", "resetchannels", "&tight:*", "-@all"}
		for _, cmd := range connsecCommands {
			rules = append(rules, "+"+cmd)
		}
		setUser("tight", rules...)
		resetLog()
		pool := connsecPool(dialAs(addr, "tight", "pw-tight"))
		defer pool.Close()
		connsecExercise(t, pool, admin, "tight")
	})
	t.Run("all_but_dangerous", func(t *testing.T) {
		setUser("broad", "~broad:*", "&broad:*", "+@all", "-@dangerous")
		resetLog()
		pool := connsecPool(dialAs(addr, "broad", "pw-broad"))
		defer pool.Close()
		connsecExercise(t, pool, admin, "broad")
	})
	t.Run("other_namespace_refused", func(t *testing.T) {
		// A user of another namespace gets the permission error back from every call.
		setUser("stranger", "~elsewhere:*", "&elsewhere:*", "+@all", "-@dangerous")
		pool := connsecPool(dialAs(addr, "stranger", "pw-stranger"))
		defer pool.Close()
		connsecRefused(t, pool, "app", "NOPERM")
		resetLog()
	})
}

func TestConnSecTLS(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a redis-server")
	}
	certs := redistest.NewCerts(t)
	caFile, certFile, keyFile := certs.CA, certs.ServerCert, certs.ServerKey
	good := certs.ClientTLS()
	roots, clientCert := good.RootCAs, good.Certificates[0]
	const adminPW = "admin-pw"
	dialTLS := func(addr string, cfg *tls.Config, user, pw string) func() (redis.Conn, error) {
		return func() (redis.Conn, error) {
			opts := []redis.DialOption{redis.DialUseTLS(true), redis.DialTLSConfig(cfg),
				redis.DialConnectTimeout(2 * time.Second), redis.DialReadTimeout(0)}
			if user != "" {
				opts = append(opts, redis.DialUsername(user))
			}
			if pw != "" {
				opts = append(opts, redis.DialPassword(pw))
			}
			return redis.Dial("tcp", addr, opts...)
		}
	}
	addr := connsecServer(t, func(a string) error { return connsecPing(dialTLS(a, good, "default", adminPW)) },
		func(out string) {
			if strings.Contains(strings.ToLower(out), "tls") {
				t.Skipf("redis-server lacks TLS support (it was built without it): %s", strings.TrimSpace(out))
			}
		},
		"--port", "0", "--tls-port", "PORT", "--tls-cert-file", certFile, "--tls-key-file", keyFile,
		"--tls-ca-cert-file", caFile, "--tls-auth-clients", "yes", "--requirepass", adminPW)
	admin := connsecPool(dialTLS(addr, good, "default", adminPW))
	defer admin.Close()

	t.Run("mutual_tls", func(t *testing.T) {
		connsecExercise(t, admin, admin, "tls")
	})
	t.Run("mutual_tls_with_acl_user", func(t *testing.T) {
		c := admin.Get()
		args := []interface{}{"SETUSER", "tlsworker", "reset", "on", ">pw", "resetkeys", "~tlsacl:*", "resetchannels", "&tlsacl:*", "-@all"}
		for _, cmd := range connsecCommands {
			args = append(args, "+"+cmd)
		}
		_, err := c.Do("ACL", args...)
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		pool := connsecPool(dialTLS(addr, good, "tlsworker", "pw"))
		defer pool.Close()
		connsecExercise(t, pool, admin, "tlsacl")
	})
	t.Run("refused", func(t *testing.T) {
		// No client certificate, or a server certificate that is not trusted: errors, no hang.
		for what, cfg := range map[string]*tls.Config{
			"without a client certificate": {RootCAs: roots, MinVersion: tls.VersionTLS12},
			"not trusting the server":      {Certificates: []tls.Certificate{clientCert}, MinVersion: tls.VersionTLS12},
		} {
			pool := connsecPool(dialTLS(addr, cfg, "default", adminPW))
			if _, err := NewEnqueuer("tls", pool).Enqueue("work", nil); err == nil {
				t.Errorf("Enqueue %s: no error", what)
			}
			if _, err := NewClient("tls", pool).Queues(); err == nil {
				t.Errorf("Client.Queues %s: no error", what)
			}
			pool.Close()
		}
		// Plain TCP against the TLS port.
		plain := connsecPool(func() (redis.Conn, error) {
			return redis.Dial("tcp", addr, redis.DialConnectTimeout(2*time.Second), redis.DialReadTimeout(2*time.Second))
		})
		defer plain.Close()
		if _, err := NewEnqueuer("tls", plain).Enqueue("work", nil); err == nil {
			t.Errorf("Enqueue over plain TCP to the TLS port: no error")
		}
	})
}

// TestConnSecDialReadTimeout: redigo pools are commonly configured with DialReadTimeout. The wake-up
// subscription sits on a connection that receives nothing while no job is enqueued; it must survive
// such a timeout (or be reconnected at once) so that idle pickup stays immediate and the pool does not
// log a warning every read timeout.
//
// Only the subscription dials with the read timeout here: a command whose reply timed out on a busy
// machine (a fetch's would leave its job to the pool's sweep) is not what this test is about.
func TestConnSecDialReadTimeout(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a redis-server")
	}
	// A server of its own: other tests' large payloads can hold up the shared one past the read
	// timeout, which ends the subscription more often than a busy machine does.
	addr := redistest.Start(t, redistest.Options{}).Addr
	pool := connsecPool(func() (redis.Conn, error) {
		return redis.Dial("tcp", addr, redis.DialReadTimeout(500*time.Millisecond), redis.DialConnectTimeout(2*time.Second))
	})
	defer pool.Close()
	plain := connsecPool(func() (redis.Conn, error) { return redis.Dial("tcp", addr, redis.DialConnectTimeout(2*time.Second)) })
	defer plain.Close()
	ns := "readtimeout"
	logs := &hstBuffer{}
	// Idle for more than two read timeouts before each job.
	connsecIdlePickups(t, ns, PoolBackend(plain), PoolBackend(pool), logs, 1100*time.Millisecond, 6)
	if lost := strings.Count(logs.String(), "subscription lost"); lost > 0 {
		t.Errorf("with DialReadTimeout(500ms) the wake-up subscription was lost %d times while idle (a warning each time)", lost)
	}
}
