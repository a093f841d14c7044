package main

import (
	"errors"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	redigo "github.com/gomodule/redigo/redis"
)

// floorEnqueueLib is the floor of a producer of single enqueue calls: the least a client can do per
// call and still return only once Redis has its job. It pushes jobs in work's layout (one LPUSH per
// job, like work and gocraft/work), but encodes nothing: each job's JSON is a fixed text with a
// counter for its ID and its args already encoded. Its calls share two connections, alternately, and
// on each of them no call waits for another's reply to be sent: a writer goroutine sends every call
// queued since its last write (having yielded once, so that callers just woken queue their next
// jobs), without waiting for replies, which a reader goroutine takes in order and hands to the
// waiting callers. It sends no wake-up message and keeps no list of known job names, and a broken
// connection fails every later call: it is a bound on the enqueue workload, not a client.
type floorEnqueueLib struct{ addr string }

func (l floorEnqueueLib) name() string { return "floor-enqueue" }

func (l floorEnqueueLib) newConsumer(consumerConfig) consumer { return noConsumer{} }

func (l floorEnqueueLib) inProgress(redisDo) ([]string, error) {
	return nil, errors.New("floor-enqueue runs only the enqueue workload")
}

// noConsumer is the consumer of a pseudo-library that only produces.
type noConsumer struct{}

func (noConsumer) start() error { return errors.New("floor-enqueue has no consumer") }
func (noConsumer) stop()        {}

// floorEnqueueConns is how many connections the floor's calls share. One write under way per
// connection already lets calls queue for the next; two let a second round trip overlap the first.
const floorEnqueueConns = 2

type floorEnqueueProducer struct {
	pipes []*floorPipe
	next  atomic.Uint64 // picks a pipe per call, and numbers the jobs
	calls sync.Pool     // *floorCall
}

// floorCall is one enqueue call waiting for its reply.
type floorCall struct {
	key     string
	payload []byte
	done    chan error
}

// floorPipe is one connection with its writer and reader goroutines.
type floorPipe struct {
	conn redigo.Conn

	mu    sync.Mutex
	wake  *sync.Cond
	queue []*floorCall // calls not yet sent
	spare []*floorCall
	err   error // why calls fail from now on: the dial, a write, or close

	sent chan []*floorCall // batches sent, for the reader, in order
	wg   sync.WaitGroup
}

func (l floorEnqueueLib) newProducer(int) producer {
	p := &floorEnqueueProducer{}
	p.calls.New = func() any { return &floorCall{done: make(chan error, 1)} }
	for i := 0; i < floorEnqueueConns; i++ {
		fp := &floorPipe{sent: make(chan []*floorCall, 64)}
		fp.wake = sync.NewCond(&fp.mu)
		// A pipe that could not dial fails every call with the dial's error.
		fp.conn, fp.err = redigo.Dial("tcp", l.addr, redigo.DialContextFunc(dialCounting))
		fp.wg.Add(2)
		go fp.write()
		go fp.read()
		p.pipes = append(p.pipes, fp)
	}
	return p
}

// floorArgs are the args of each kind, encoded once.
var floorArgs = map[args]string{argsNone: "{}", argsSmall: `{"addr":"test@example.com","n":1}`}

func (p *floorEnqueueProducer) enqueue(name string, a args) error {
	n := p.next.Add(1)
	c := p.calls.Get().(*floorCall)
	c.key = workNamespace + ":jobs:" + name
	b := append(c.payload[:0], `{"name":"`...)
	b = append(b, name...)
	b = append(b, `","id":"f`...)
	b = strconv.AppendUint(b, n, 16)
	b = append(b, `","t":`...)
	b = strconv.AppendInt(b, time.Now().Unix(), 10)
	b = append(b, `,"args":`...)
	if a == argsTimestamp {
		b = append(b, `{"t":`...)
		b = strconv.AppendInt(b, enqueueStamp(), 10)
		b = append(b, '}')
	} else {
		b = append(b, floorArgs[a]...)
	}
	c.payload = append(b, '}')
	err := p.pipes[n%uint64(len(p.pipes))].call(c)
	p.calls.Put(c)
	return err
}

func (p *floorEnqueueProducer) close() {
	for _, fp := range p.pipes {
		fp.close()
	}
}

// call queues c for the writer and returns its reply's error.
func (fp *floorPipe) call(c *floorCall) error {
	fp.mu.Lock()
	if err := fp.err; err != nil {
		fp.mu.Unlock()
		return err
	}
	fp.queue = append(fp.queue, c)
	first := len(fp.queue) == 1
	fp.mu.Unlock()
	if first {
		fp.wake.Signal()
	}
	return <-c.done
}

func (fp *floorPipe) write() {
	defer fp.wg.Done()
	defer close(fp.sent)
	for {
		fp.mu.Lock()
		for len(fp.queue) == 0 && fp.err == nil {
			fp.wake.Wait()
		}
		if fp.err != nil {
			for _, c := range fp.queue {
				c.done <- fp.err
			}
			fp.queue = nil
			fp.mu.Unlock()
			return
		}
		fp.mu.Unlock()
		runtime.Gosched() // callers woken by the last reply queue their next jobs for this write
		fp.mu.Lock()
		batch := fp.queue
		fp.queue, fp.spare = fp.spare[:0], nil
		fp.mu.Unlock()
		for _, c := range batch {
			_ = fp.conn.Send("LPUSH", c.key, c.payload)
		}
		if err := fp.conn.Flush(); err != nil {
			for _, c := range batch {
				c.done <- err
			}
			fp.mu.Lock()
			fp.err = err
			fp.mu.Unlock()
			continue
		}
		fp.sent <- batch
	}
}

func (fp *floorPipe) read() {
	defer fp.wg.Done()
	for batch := range fp.sent {
		for i, c := range batch {
			_, err := fp.conn.Receive()
			c.done <- err
			batch[i] = nil
		}
		fp.mu.Lock()
		if cap(batch) > cap(fp.spare) {
			fp.spare = batch[:0]
		}
		fp.mu.Unlock()
	}
}

var errFloorClosed = errors.New("floor-enqueue: producer closed")

func (fp *floorPipe) close() {
	fp.mu.Lock()
	if fp.err == nil {
		fp.err = errFloorClosed
	}
	fp.mu.Unlock()
	fp.wake.Broadcast()
	fp.wg.Wait()
	if fp.conn != nil {
		fp.conn.Close()
	}
}
