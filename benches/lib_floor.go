package main

import (
	"bytes"
	"errors"
	"strconv"
	"sync"

	redigo "github.com/gomodule/redigo/redis"
)

// floorLib is not a job queue: it is the least a consumer can do per job while it starts each job
// as soon as it is enqueued, so that the latency workload can show how much CPU any library must
// spend at a given load. Its jobs are work's (its producer is work's Enqueuer: LPUSH and PUBLISH).
// Its consumer is one goroutine that loops on BLMPOP over the queues: one round trip per job from a
// goroutine that waits for the reply. It keeps no in-progress list, sends no acknowledgement, reads
// no wake-up message, hands nothing to another goroutine and decodes nothing but the enqueue time:
// every real consumer with per-job pickup does at least this much. The configured concurrency is
// ignored.
type floorLib struct{ addr string }

func (l floorLib) name() string { return "floor" }

func (l floorLib) newProducer(conns int) producer { return workLib(l).newProducer(conns) }

func (l floorLib) inProgress(redisDo) ([]string, error) {
	return nil, errors.New("floor keeps no in-progress list")
}

type floorConsumer struct {
	addr string
	cfg  consumerConfig
	conn redigo.Conn
	done chan struct{} // closed by stop
	wg   sync.WaitGroup
}

func (l floorLib) newConsumer(cfg consumerConfig) consumer {
	return &floorConsumer{addr: l.addr, cfg: cfg, done: make(chan struct{})}
}

func (c *floorConsumer) start() error {
	conn, err := redigo.Dial("tcp", c.addr, redigo.DialContextFunc(dialCounting))
	if err != nil {
		return err
	}
	c.conn = conn
	args := redigo.Args{0.1, len(c.cfg.names)} // BLMPOP timeout (s) numkeys key... RIGHT
	for _, n := range c.cfg.names {
		args = append(args, workNamespace+":jobs:"+n)
	}
	args = append(args, "RIGHT")
	c.wg.Add(1)
	go c.loop(args)
	return nil
}

func (c *floorConsumer) loop(args redigo.Args) {
	defer c.wg.Done()
	for {
		select {
		case <-c.done:
			return
		default:
		}
		reply, err := redigo.Values(c.conn.Do("BLMPOP", args...))
		if err == redigo.ErrNil {
			continue // timed out: look at stop
		}
		if err != nil || len(reply) != 2 {
			progress("floor: BLMPOP: %v", err)
			return
		}
		jobs, _ := redigo.ByteSlices(reply[1], nil)
		for _, raw := range jobs {
			_ = c.cfg.h("", argsT(raw))
		}
	}
}

func (c *floorConsumer) stop() {
	close(c.done)
	c.wg.Wait()
	c.conn.Close()
}

// argsT returns the enqueue time a work job's JSON carries in its args ({"t": ...}), 0 if none.
func argsT(raw []byte) int64 {
	const key = `"args":{"t":`
	i := bytes.Index(raw, []byte(key))
	if i < 0 {
		return 0
	}
	s := raw[i+len(key):]
	end := bytes.IndexByte(s, '}')
	if end < 0 {
		return 0
	}
	t, _ := strconv.ParseInt(string(s[:end]), 10, 64)
	return t
}

// floorAckLib is the floor of a consumer that keeps every job safe: the least it can do per job
// while it starts each job as soon as it is enqueued, keeps the job in an in-progress list until its
// handler has run, and then acknowledges it at once. Each job name has a goroutine and a connection
// of its own, looping on one write per job: the LREM that acknowledges the job just run and the
// BLMOVE that moves the next job from the queue to the in-progress list, in one pipeline, so the
// acknowledgement reaches Redis the moment the handler returns and costs no round trip of its own.
// It reads no wake-up message, hands nothing to another goroutine and decodes nothing but the
// enqueue time. It cannot honour priorities, pauses, concurrency limits or retries (one blocking
// command watches one queue), which is why no library of several queues is built this way; the
// configured concurrency is ignored (one job at a time per name).
type floorAckLib struct{ addr string }

func (l floorAckLib) name() string { return "floor-ack" }

func (l floorAckLib) newProducer(conns int) producer { return workLib(l).newProducer(conns) }

func (l floorAckLib) inProgress(redisDo) ([]string, error) {
	return nil, errors.New("floor-ack runs only the latency workload")
}

type floorAckConsumer struct {
	addr  string
	cfg   consumerConfig
	conns []redigo.Conn
	done  chan struct{} // closed by stop
	wg    sync.WaitGroup
}

func (l floorAckLib) newConsumer(cfg consumerConfig) consumer {
	return &floorAckConsumer{addr: l.addr, cfg: cfg, done: make(chan struct{})}
}

func (c *floorAckConsumer) start() error {
	for _, n := range c.cfg.names {
		conn, err := redigo.Dial("tcp", c.addr, redigo.DialContextFunc(dialCounting))
		if err != nil {
			for _, conn := range c.conns {
				conn.Close()
			}
			return err
		}
		c.conns = append(c.conns, conn)
		c.wg.Add(1)
		go c.loop(conn, workNamespace+":jobs:"+n, floorAckInProgress(n))
	}
	return nil
}

// floorAckInProgress is the in-progress list of floor-ack's consumer of the job name.
func floorAckInProgress(name string) string {
	return workNamespace + ":jobs:" + name + ":floor-ack:inprogress"
}

func (c *floorAckConsumer) loop(conn redigo.Conn, queue, inProgress string) {
	defer c.wg.Done()
	var ran []byte // the job whose handler has run, not yet acknowledged
	for {
		select {
		case <-c.done:
			if ran != nil {
				_, _ = conn.Do("LREM", inProgress, 1, ran)
			}
			return
		default:
		}
		if ran != nil {
			_ = conn.Send("LREM", inProgress, 1, ran)
		}
		_ = conn.Send("BLMOVE", queue, inProgress, "RIGHT", "LEFT", 0.1)
		err := conn.Flush()
		if err == nil && ran != nil {
			_, err = conn.Receive()
			ran = nil
		}
		var raw []byte
		if err == nil {
			raw, err = redigo.Bytes(conn.Receive())
		}
		if err == redigo.ErrNil {
			continue // timed out: look at stop
		}
		if err != nil {
			progress("floor-ack: %v", err)
			return
		}
		_ = c.cfg.h("", argsT(raw))
		ran = raw
	}
}

func (c *floorAckConsumer) stop() {
	close(c.done)
	c.wg.Wait()
	for _, conn := range c.conns {
		conn.Close()
	}
}
