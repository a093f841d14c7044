package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	redigo "github.com/gomodule/redigo/redis"
)

// childArg, as the first argument, makes the harness run as one of its own child processes (a
// paced producer, a pool to be killed, or a pool of the longjobs workload) instead of as the
// harness. It is not a flag, so -h does not list it.
const childArg = "__child"

// child is a child process of the harness: the harness's own executable run with childArg. It gets
// SIGKILL when the harness dies (Linux), and it exits when its standard input closes.
type child struct {
	cmd    *exec.Cmd
	stdin  *os.File
	lines  chan string // the child's standard output, line by line; closed at its end
	exited chan struct{}
}

// startChild starts the harness's executable as a child process of the given role.
func startChild(role string, args ...string) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd := exec.Command(exe, append([]string{childArg, role}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, os.Stderr
	setParentDeathSignal(cmd)
	c := &child{cmd: cmd, stdin: inW, lines: make(chan string, 16), exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		// The child gets SIGKILL when the thread that started it exits: keep this goroutine on its
		// thread until the child is gone (as for redis-server).
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			close(c.exited)
			return
		}
		started <- nil
		_ = cmd.Wait()
		close(c.exited)
	}()
	err = <-started
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("starting %s: %w", role, err)
	}
	go func() {
		defer outR.Close()
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	return c, nil
}

// expect returns the child's next line of output that starts with prefix. Other lines (a library
// may log to standard output: gocraft/work logs its errors there) are copied to stderr.
func (c *child) expect(prefix string, timeout time.Duration) (string, error) {
	deadline := time.After(timeout)
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				return "", fmt.Errorf("child process ended before %q", prefix)
			}
			if strings.HasPrefix(l, prefix) {
				return l, nil
			}
			fmt.Fprintln(os.Stderr, "benches (child):", l)
		case <-deadline:
			return "", fmt.Errorf("no %q from the child process after %v", prefix, timeout)
		}
	}
}

func (c *child) send(line string) error {
	_, err := io.WriteString(c.stdin, line+"\n")
	return err
}

// wait waits for the child to exit, and kills it after timeout.
func (c *child) wait(timeout time.Duration) {
	select {
	case <-c.exited:
	case <-time.After(timeout):
		c.kill()
	}
	c.stdin.Close()
}

// kill sends SIGKILL to the child and waits until it is gone. Safe to call more than once.
func (c *child) kill() {
	select {
	case <-c.exited:
	default:
		_ = c.cmd.Process.Signal(syscall.SIGKILL)
		<-c.exited
	}
	c.stdin.Close()
}

// childMain runs the harness as a child process; args follow childArg.
func childMain(args []string) {
	if len(args) == 0 {
		childFatal(errors.New("no role"))
	}
	role := args[0]
	fs := flag.NewFlagSet(childArg+" "+role, flag.ExitOnError)
	libName := fs.String("lib", "", "library")
	addr := fs.String("redis", "", "Redis address")
	checkInterval := fs.Duration("asynq-task-check-interval", 0, "asynq Config.TaskCheckInterval")
	rate := fs.Int("rate", 0, "producer: jobs/s")
	n := fs.Int("n", 0, "producer: jobs to send")
	g := fs.Int("goroutines", 8, "producer: goroutines")
	conc := fs.Int("concurrency", 50, "crash, pool: workers")
	names := fs.String("names", strings.Join(trafficNames, ","), "crash, pool: registered job names")
	sleep := fs.Duration("sleep", 0, "pool: how long a handler runs")
	keyConc := fs.Uint("key-concurrency", 0, "pool: JobOptions.KeyConcurrency of every name (work; 0: none)")
	_ = fs.Parse(args[1:])
	l, err := newLibrary(*libName, *addr, *checkInterval)
	if err != nil {
		childFatal(err)
	}
	// Exit when the harness closes our standard input or goes away.
	in := bufio.NewScanner(os.Stdin)
	switch role {
	case "producer":
		producerChild(l, in, *rate, *n, *g)
	case "crash":
		crashChild(l, in, *addr, *conc, strings.Split(*names, ","))
	case "pool":
		poolChild(l, in, *conc, strings.Split(*names, ","), *sleep, *keyConc)
	default:
		childFatal(fmt.Errorf("unknown role %q", role))
	}
}

func childFatal(err error) {
	fmt.Fprintln(os.Stderr, "benches (child):", err)
	os.Exit(1)
}

// producerResult is what the producer child reports when it has sent its jobs.
type producerResult struct {
	Sent   int64   `json:"sent"`
	Errors int64   `json:"errors"`
	SendS  float64 `json:"send_s"` // from the first send to the end of the last
	CPUS   float64 `json:"cpu_s"`  // this process's Go CPU seconds over the sending
	RT     int64   `json:"rt"`     // socket writes over the sending
}

// producerChild offers rate jobs/s, n jobs in all, stamped with their enqueue time (argsTimestamp),
// from g goroutines, when the harness says "go"; it prints "ready" first and its producerResult as
// JSON at the end.
func producerChild(l library, in *bufio.Scanner, rate, n, g int) {
	if rate <= 0 || n <= 0 || g <= 0 {
		childFatal(errors.New("producer: -rate, -n and -goroutines must be positive"))
	}
	p := l.newProducer(g)
	defer p.close()
	fmt.Println("ready")
	if !in.Scan() || in.Text() != "go" {
		os.Exit(1)
	}
	runtime.GC()
	cpu0, rt0 := goCPU(), roundTrips.Load()
	sent, errs, el := pace(p, rate, n, g, argsTimestamp, nil)
	res := producerResult{Sent: sent, Errors: errs, SendS: el.Seconds(), CPUS: goCPU() - cpu0, RT: roundTrips.Load() - rt0}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
}

// The sets in which the crash child's handlers record the IDs of the jobs they start and finish.
const (
	crashStartedKey  = "benchcrash:started"
	crashFinishedKey = "benchcrash:finished"
)

// crashChild runs a pool/server whose handlers record each job's ID with SADD to crashStartedKey when
// they start and to crashFinishedKey before they return, prints "started" once it is started, and
// runs until it is killed (or its standard input closes).
func crashChild(l library, in *bufio.Scanner, addr string, conc int, names []string) {
	rec := redigoPool(addr, conc+10)
	var recErrs atomic.Int64
	var once sync.Once
	record := func(key, id string) error {
		conn := rec.Get()
		_, err := conn.Do("SADD", key, id)
		conn.Close()
		if err != nil {
			recErrs.Add(1)
			once.Do(func() { fmt.Fprintln(os.Stderr, "benches (crash child): SADD:", err) })
		}
		return err
	}
	c := l.newConsumer(consumerConfig{
		concurrency: conc,
		names:       names,
		wantID:      true,
		h: func(id string, _ int64) error {
			if err := record(crashStartedKey, id); err != nil {
				return err
			}
			return record(crashFinishedKey, id)
		},
	})
	if err := c.start(); err != nil {
		childFatal(err)
	}
	fmt.Println("started")
	for in.Scan() {
	}
	os.Exit(0)
}

// pace sends n jobs at rate jobs/s from g goroutines, job i at its scheduled time i/rate after the
// start (or at once when late), until all are sent or stop is closed. It returns the jobs sent, the
// enqueue errors and the time from the start to the end of the last send.
func pace(p producer, rate, n, g int, a args, stop <-chan struct{}) (sent, errs int64, el time.Duration) {
	sent, errs, _, el = paceEach(rate, n, g, stop, func(i int, _ time.Time) error {
		return p.enqueue(trafficNames[i%len(trafficNames)], a)
	})
	return sent, errs, el
}

// paceEach calls send for i from 0 to n-1 at rate calls/s from g goroutines, call i at its due time
// i/rate after the start (or at once when late), until all are made or stop (nil: never) is closed.
// It returns the calls that succeeded, those that failed, the most a call began behind its due
// time, and the time from the start to the end of the last call.
func paceEach(rate, n, g int, stop <-chan struct{}, send func(i int, due time.Time) error) (sent, errs int64, lag, el time.Duration) {
	interval := float64(time.Second) / float64(rate)
	var wg sync.WaitGroup
	var nSent, nErrs atomic.Int64
	var mu sync.Mutex
	t0 := time.Now()
	for k := 0; k < g; k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			var late time.Duration
			defer func() {
				mu.Lock()
				lag = max(lag, late)
				mu.Unlock()
			}()
			for i := k; i < n; i += g {
				due := t0.Add(time.Duration(float64(i) * interval))
				if d := time.Until(due); d > 0 {
					select {
					case <-stop:
						return
					case <-time.After(d):
					}
				} else {
					select {
					case <-stop:
						return
					default:
					}
					late = max(late, -d)
				}
				if err := send(i, due); err != nil {
					nErrs.Add(1)
				} else {
					nSent.Add(1)
				}
			}
		}(k)
	}
	wg.Wait()
	return nSent.Load(), nErrs.Load(), lag, time.Since(t0)
}

// connectedClients is INFO clients' connected_clients.
func (s *redisServer) connectedClients() (int, error) {
	info, err := redigo.String(s.do("INFO", "clients"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "connected_clients:"); ok {
			var n int
			_, err := fmt.Sscan(v, &n)
			return n, err
		}
	}
	return 0, errors.New("INFO clients: no connected_clients")
}
