package pgwork

// Fault tests: relay processes, redis-server and PostgreSQL SIGKILLed under a load of transactions
// (TestRelayFaults), and worker processes SIGKILLed in the middle of RunOnce's transactions
// (TestRunOnceUnderHandlerKills). The processes are internal/relayproc, built by the tests.

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/workqueue/work"
	"github.com/workqueue/work/internal/pgserver"
	"github.com/workqueue/work/pgwork/internal/pgtest"
)

// missing skips the test for lack of a server program, or fails it under CI=true, where a missing
// program is a broken setup rather than a developer's machine without it.
func missing(t *testing.T, what string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s: CI must run the fault tests (scripts/test.sh installs the servers)", what)
	}
	t.Skipf("%s: skipping the fault test", what)
}

func faultsPrereqs(t *testing.T, postgres bool) string {
	t.Helper()
	if testing.Short() {
		t.Skip("fault tests take about a minute")
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		missing(t, "redis-server is not installed")
	}
	if postgres {
		if _, err := pgserver.Bin(); err != nil {
			missing(t, err.Error())
		}
	}
	return bin
}

// buildRelayProc builds internal/relayproc into the test's temporary directory.
func buildRelayProc(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command builds internal/relayproc: %v", err)
	}
	out := filepath.Join(t.TempDir(), "relayproc")
	cmd := exec.Command(goBin, "build", "-o", out, "./internal/relayproc")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("building internal/relayproc: %v: %s", err, stderr.String())
	}
	return out
}

// proc is a child process that the test SIGKILLs.
type proc struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

func startProc(bin, logFile string, args ...string) (*proc, error) {
	f, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	// A test binary that dies leaves no process behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	p := &proc{cmd: cmd, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		f.Close()
		close(p.exited)
	}()
	return p, nil
}

func (p *proc) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// redisProc is a redis-server of the test's own: with appendonly and appendfsync always it can be
// SIGKILLed and started again from its append-only file without losing an acknowledged write.
type redisProc struct {
	bin, dir, addr string
	args           []string
	p              *proc
}

func startRedisProc(t *testing.T, bin string, aof bool) *redisProc {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	r := &redisProc{bin: bin, dir: t.TempDir(), addr: "127.0.0.1:" + strconv.Itoa(port)}
	r.args = []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--dir", r.dir,
		"--daemonize", "no", "--loglevel", "warning"}
	if aof {
		r.args = append(r.args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		r.args = append(r.args, "--appendonly", "no")
	}
	if err := r.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.kill)
	return r
}

func (r *redisProc) start() error {
	p, err := startProc(r.bin, filepath.Join(r.dir, "redis.log"), r.args...)
	if err != nil {
		return err
	}
	r.p = p
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := redis.Dial("tcp", r.addr, redis.DialConnectTimeout(time.Second), redis.DialReadTimeout(time.Second))
		if err == nil {
			_, err = c.Do("PING") // LOADING while it replays its file
			c.Close()
			if err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(r.dir, "redis.log"))
			return fmt.Errorf("redis-server did not come up: %v\n%s", err, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (r *redisProc) kill() {
	if r.p != nil {
		r.p.kill()
		r.p = nil
	}
}

func (r *redisProc) pool() *redis.Pool {
	return &redis.Pool{
		MaxIdle:     16,
		IdleTimeout: time.Minute,
		Dial: func() (redis.Conn, error) {
			return redis.Dial("tcp", r.addr, redis.DialConnectTimeout(time.Second))
		},
	}
}

// hashCounts reads a hash of counters.
func hashCounts(t *testing.T, rp *redis.Pool, key string) map[string]int {
	t.Helper()
	c := rp.Get()
	defer c.Close()
	m, err := redis.IntMap(c.Do("HGETALL", key))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// queuedJobs is how many jobs of the name wait in Redis.
func queuedJobs(cl *work.Client, name string) (int64, error) {
	qs, err := cl.Queues()
	if err != nil {
		return 0, err
	}
	for _, q := range qs {
		if q.JobName == name {
			return q.Count, nil
		}
	}
	return 0, nil
}

// TestRelayFaults commits and rolls back transactions that enqueue jobs while relay processes,
// redis-server and PostgreSQL are SIGKILLed, and checks that exactly the committed jobs ran, once.
func TestRelayFaults(t *testing.T) {
	redisBin := faultsPrereqs(t, true)
	bin := buildRelayProc(t)
	// fsync on (PostgreSQL's default, which the shared test server turns off): a commit that returned
	// must survive the kill.
	pg, err := pgserver.Start(pgserver.Options{Settings: map[string]string{"fsync": "on", "synchronous_commit": "on"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Stop(true) })
	dsn := pg.DSN("postgres")
	ctx := context.Background()
	db, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	rs := startRedisProc(t, redisBin, true)
	rp := rs.pool()
	defer rp.Close()
	const ns = "pgfaults"
	logDir := t.TempDir()

	var runMu sync.Mutex
	runs := map[string]int{}
	wp := work.NewWorkerPool(struct{}{}, 8, ns, rp)
	wp.Job("fx", func(job *work.Job) error {
		runMu.Lock()
		runs[job.ID]++
		runMu.Unlock()
		return nil
	})
	wp.Start()
	poolStopped := false
	defer func() {
		if !poolStopped {
			wp.Stop()
		}
	}()

	// The pause before the delete widens the window between the jobs' enqueue in Redis and the rows'
	// delete, so that the kills land there often enough to matter.
	relayArgs := []string{"-mode", "relay", "-redis", rs.addr, "-ns", ns, "-pg", dsn, "-delete-delay", "20ms"}
	relays := make([]*proc, 3)
	for i := range relays {
		if relays[i], err = startProc(bin, filepath.Join(logDir, "relay.log"), relayArgs...); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, r := range relays {
			if r != nil {
				r.kill()
			}
		}
	}()

	const produceFor = 20 * time.Second
	start := time.Now()
	end := start.Add(produceFor)

	// The outcome of every transaction, by the IDs of its jobs.
	var mu sync.Mutex
	committed, rolledBack, uncertain := map[string]bool{}, map[string]bool{}, map[string]bool{}
	var txCommitted, txRolledBack, txUncertain int
	var wg sync.WaitGroup
	for p := 0; p < 4; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(time.Now().UnixNano() + int64(p)))
			for time.Now().Before(end) {
				jobs := make([]Job, 1+rng.Intn(20))
				for i := range jobs {
					jobs[i] = Job{Name: "fx", Args: work.Q{"producer": p, "i": i}}
				}
				rollback := rng.Intn(10) == 0
				outcome := func() (ids []string, set map[string]bool) {
					cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
					defer cancel()
					tx, err := db.Begin(cctx)
					if err != nil {
						return nil, nil
					}
					defer tx.Rollback(context.Background())
					ids, err = EnqueueMany(cctx, tx, jobs)
					if err != nil {
						return nil, nil
					}
					if rollback {
						tx.Rollback(cctx) // even if it fails, the transaction did not commit
						mu.Lock()
						txRolledBack++
						mu.Unlock()
						return ids, rolledBack
					}
					if err := tx.Commit(cctx); err != nil {
						// The server may have died before or after making the commit durable.
						mu.Lock()
						txUncertain++
						mu.Unlock()
						return ids, uncertain
					}
					mu.Lock()
					txCommitted++
					mu.Unlock()
					return ids, committed
				}
				ids, set := outcome()
				if set == nil {
					time.Sleep(50 * time.Millisecond) // PostgreSQL is down
					continue
				}
				mu.Lock()
				for _, id := range ids {
					set[id] = true
				}
				mu.Unlock()
				time.Sleep(time.Duration(10+rng.Intn(30)) * time.Millisecond)
			}
		}(p)
	}

	// The faults: a relay every 2-4 s; redis-server once, PostgreSQL once.
	var relayKills atomic.Int64
	faultErr := make(chan error, 2)
	wg.Add(2)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewSource(time.Now().UnixNano()))
		for {
			time.Sleep(time.Duration(2000+rng.Intn(2000)) * time.Millisecond)
			if time.Now().After(end) {
				return
			}
			i := rng.Intn(len(relays))
			relays[i].kill()
			relayKills.Add(1)
			p, err := startProc(bin, filepath.Join(logDir, "relay.log"), relayArgs...)
			if err != nil {
				relays[i] = nil
				faultErr <- err
				return
			}
			relays[i] = p
		}
	}()
	go func() {
		defer wg.Done()
		time.Sleep(produceFor * 3 / 10)
		rs.kill()
		time.Sleep(time.Second)
		if err := rs.start(); err != nil {
			faultErr <- err
			return
		}
		time.Sleep(produceFor * 3 / 10)
		pg.Kill()
		time.Sleep(time.Second)
		if err := pg.Restart(); err != nil {
			faultErr <- err
		}
	}()
	wg.Wait()
	close(faultErr)
	for err := range faultErr {
		t.Fatal(err)
	}

	// Every committed job runs, the outbox empties and no job waits in Redis any more.
	cl := work.NewClient(ns, rp)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting int64
		werr := db.QueryRow(ctx, "SELECT count(*) FROM work_outbox").Scan(&waiting)
		queued, qerr := queuedJobs(cl, "fx")
		runMu.Lock()
		notRun := 0
		for id := range committed {
			if runs[id] == 0 {
				notRun++
			}
		}
		runMu.Unlock()
		if werr == nil && qerr == nil && waiting == 0 && queued == 0 && notRun == 0 {
			break
		}
		if time.Now().After(deadline) {
			relayLog, _ := os.ReadFile(filepath.Join(logDir, "relay.log"))
			if len(relayLog) > 4000 {
				relayLog = relayLog[len(relayLog)-4000:]
			}
			t.Fatalf("after 30 s: %d rows in the outbox (%v), %d jobs queued (%v), %d committed jobs not run; relays' log:\n%s",
				waiting, werr, queued, qerr, notRun, relayLog)
		}
		time.Sleep(50 * time.Millisecond)
	}
	wp.Stop()
	poolStopped = true

	var duplicates, lost, rolledBackRan, uncertainRan, strangers int
	jobs := 0
	for id, n := range runs {
		if n > 1 {
			duplicates++
			report(t, duplicates, "job %s ran %d times", id, n)
		}
		if !committed[id] && !rolledBack[id] && !uncertain[id] {
			strangers++
			report(t, strangers, "job %s ran, but no producer enqueued it", id)
		}
	}
	for id := range committed {
		jobs++
		if runs[id] == 0 {
			lost++
		}
	}
	for id := range rolledBack {
		if runs[id] > 0 {
			rolledBackRan++
			report(t, rolledBackRan, "job %s of a rolled-back transaction ran", id)
		}
	}
	for id := range uncertain {
		if runs[id] > 0 {
			uncertainRan++
		}
	}
	if lost > 0 {
		t.Errorf("%d committed jobs never ran", lost)
	}
	if txCommitted == 0 || txRolledBack == 0 || relayKills.Load() == 0 {
		t.Errorf("the load did not happen: %d transactions committed, %d rolled back, %d relay kills", txCommitted, txRolledBack, relayKills.Load())
	}
	t.Logf("relay faults: %d transactions committed (%d jobs), %d rolled back (%d jobs, %d ran), %d uncertain (%d jobs, %d ran); "+
		"%d relay kills, 1 redis-server kill, 1 PostgreSQL kill; duplicates %d, lost %d; outbox empty",
		txCommitted, jobs, txRolledBack, len(rolledBack), rolledBackRan, txUncertain, len(uncertain), uncertainRan,
		relayKills.Load(), duplicates, lost)
}

// TestRunOnceUnderHandlerKills SIGKILLs worker processes while their handlers are inside RunOnce's
// transaction (or just past its commit), and checks that every job's effect was applied exactly once
// although some jobs ran again.
func TestRunOnceUnderHandlerKills(t *testing.T) {
	redisBin := faultsPrereqs(t, false)
	db, dsn := pgtest.DB(t)
	ctx := context.Background()
	if err := Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	// No unique constraint: an effect applied twice shows as two rows.
	if _, err := db.Exec(ctx, "CREATE TABLE effects (job_id text NOT NULL, pid int NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	bin := buildRelayProc(t)
	rs := startRedisProc(t, redisBin, false)
	rp := rs.pool()
	defer rp.Close()
	const ns, ledger = "pgfaults", "pgfaults-ledger"
	logDir := t.TempDir()
	workerArgs := []string{"-mode", "worker", "-redis", rs.addr, "-ns", ns, "-ledger", ledger, "-pg", dsn,
		"-concurrency", "4", "-dead-pool", "3s"}
	workers := make([]*proc, 3)
	var err error
	for i := range workers {
		if workers[i], err = startProc(bin, filepath.Join(logDir, "worker.log"), workerArgs...); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, w := range workers {
			if w != nil {
				w.kill()
			}
		}
	}()

	const produceFor, killFor = 15 * time.Second, 20 * time.Second
	start := time.Now()
	var ids []string
	var kills int
	var wg sync.WaitGroup
	var produceErr, killErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		enq := work.NewEnqueuer(ns, rp)
		for time.Since(start) < produceFor {
			for i := 0; i < 10; i++ {
				j, err := enq.Enqueue("effect", work.Q{"i": len(ids)})
				if err != nil {
					produceErr = err
					return
				}
				ids = append(ids, j.ID)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewSource(time.Now().UnixNano()))
		for {
			time.Sleep(time.Duration(1000+rng.Intn(1000)) * time.Millisecond)
			if time.Since(start) > killFor {
				return
			}
			i := rng.Intn(len(workers))
			workers[i].kill()
			kills++
			p, err := startProc(bin, filepath.Join(logDir, "worker.log"), workerArgs...)
			if err != nil {
				workers[i] = nil
				killErr = err
				return
			}
			workers[i] = p
		}
	}()
	wg.Wait()
	if produceErr != nil || killErr != nil {
		t.Fatal(produceErr, killErr)
	}

	// The killed pools' jobs come back after DeadPoolTimeout; wait until every job's effect is there
	// and nothing waits in Redis.
	cl := work.NewClient(ns, rp)
	deadline := time.Now().Add(40 * time.Second)
	for {
		var applied int
		perr := db.QueryRow(ctx, "SELECT count(DISTINCT job_id) FROM effects").Scan(&applied)
		queued, qerr := queuedJobs(cl, "effect")
		if perr == nil && qerr == nil && applied == len(ids) && queued == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 40 s: %d of %d jobs applied their effect (%v), %d queued (%v)", applied, len(ids), perr, queued, qerr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Let runs in progress (a requeued job whose effect is there already) end before counting.
	time.Sleep(500 * time.Millisecond)
	for _, w := range workers {
		w.kill()
	}
	workers = nil

	effects := map[string]int{}
	rows, err := db.Query(ctx, "SELECT job_id, count(*) FROM effects GROUP BY job_id")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			t.Fatal(err)
		}
		effects[id] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	applied := 0
	wrong := 0
	for _, id := range ids {
		switch n := effects[id]; n {
		case 1:
			applied++
		default:
			wrong++
			report(t, wrong, "job %s applied its effect %d times", id, n)
		}
	}
	if len(effects) != len(ids) {
		t.Errorf("%d jobs have effects, %d were enqueued", len(effects), len(ids))
	}
	starts := hashCounts(t, rp, ledger+":starts")
	skipped := hashCounts(t, rp, ledger+":skipped")
	rerun := 0
	for _, n := range starts {
		if n > 1 {
			rerun++
		}
	}
	if rerun == 0 {
		t.Errorf("no job ran twice in %d kills: the test exercised nothing", kills)
	}
	t.Logf("RunOnce under handler kills: %d jobs, %d worker kills; %d jobs started more than once, of which %d found done by RunOnce (the rest rolled back by the kill); effects applied once: %d, more than once: %d, never: %d",
		len(ids), kills, rerun, len(skipped), applied, countOver(effects, 1), len(ids)-len(effects))
}

// report fails the test with the first few of a kind of error (the n-th), and a count of the rest
// in the test's summary line.
func report(t *testing.T, n int, format string, args ...any) {
	t.Helper()
	if n <= 10 {
		t.Errorf(format, args...)
	} else if n == 11 {
		t.Error("... and more: see the summary")
	}
}

func countOver(m map[string]int, n int) int {
	c := 0
	for _, v := range m {
		if v > n {
			c++
		}
	}
	return c
}
