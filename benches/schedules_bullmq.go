package main

// The memory of the schedules workload's schedules in BullMQ's Redis layout of job schedulers
// (Queue.upsertJobScheduler), written here key by key, as BullMQ's scripts leave them once a
// scheduler is upserted: BullMQ itself is not run. See README.md, "schedules", for the sources.

import (
	"fmt"
	"runtime"
	"strconv"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/workqueue/work"
)

// bullmqPrefix is the prefix of a BullMQ queue named "reports" under BullMQ's default prefix.
const bullmqPrefix = "bull:reports:"

// bullmqScheduler sends, on c, the commands that leave job scheduler i of the schedules workload in
// BullMQ's layout, its next run at next (Unix ms), upserted at now (Unix ms):
//
//   - the scheduler's entry in the sorted set <prefix>repeat, scored by its next run;
//   - its hash <prefix>repeat:<id>: name, ic (iterations), tz, pattern, data (the job's data);
//   - the job of its next run, a delayed job with the ID repeat:<id>:<next ms>: its hash (name, data,
//     opts, timestamp, delay, priority, rjk: the scheduler's ID), opts holding the repeat options,
//     the job ID, delay, timestamp, prevMillis and repeatJobKey;
//   - that job's entry in the sorted set <prefix>delayed, scored by its run time times 0x1000 plus
//     a 12-bit counter.
//
// The events stream that BullMQ's scripts also write to is left out: it is capped (10,000 events by
// default), not a cost per scheduler.
func bullmqScheduler(c redigo.Conn, i int, spec string, next, now int64) error {
	s := customerSchedule(i, schedStoredJob, spec)
	data := `{"customer_id":` + s.Key + `}`
	jobID := "repeat:" + s.ID + ":" + strconv.FormatInt(next, 10)
	opts := fmt.Sprintf(`{"repeat":{"pattern":%q,"tz":%q,"count":1},"jobId":%q,"delay":%d,"timestamp":%d,"prevMillis":%d,"repeatJobKey":%q}`,
		s.Spec, s.Location, jobID, next-now, now, next, s.ID)
	for _, cmd := range [][]interface{}{
		{"ZADD", bullmqPrefix + "repeat", next, s.ID},
		{"HSET", bullmqPrefix + "repeat:" + s.ID, "name", s.JobName, "ic", 1, "tz", s.Location, "pattern", s.Spec, "data", data},
		{"HSET", bullmqPrefix + jobID, "name", s.JobName, "data", data, "opts", opts, "timestamp", now, "delay", next - now,
			"priority", 0, "rjk", s.ID},
		{"ZADD", bullmqPrefix + "delayed", next*0x1000 + int64(i&0xfff), jobID},
	} {
		if err := c.Send(cmd[0].(string), cmd[1:]...); err != nil {
			return err
		}
	}
	return nil
}

// bullmqLayout writes cfg.n job schedulers in BullMQ's layout (bullmqScheduler), pipelined from
// cfg.batchG connections, and records the Redis memory they take per scheduler.
func (b *bench) bullmqLayout(m map[string]float64, cfg *schedConfig) error {
	loc, err := time.LoadLocation(schedZone)
	if err != nil {
		return err
	}
	spec := storedSpec(loc)
	cr, err := work.ParseCron(spec, schedZone)
	if err != nil {
		return err
	}
	now := time.Now()
	next, nowMs := cr.Next(now).UnixMilli(), now.UnixMilli()
	conns := make(chan redigo.Conn, cfg.batchG)
	for range cfg.batchG {
		c, err := redigo.Dial("tcp", b.srv.addr)
		if err != nil {
			return err
		}
		defer c.Close()
		conns <- c
	}
	runtime.GC()
	s0 := b.snap()
	_, err = batched(cfg.n, cfg.batchG, 1000, func(from, count int) error {
		c := <-conns
		defer func() { conns <- c }()
		for i := from; i < from+count; i++ {
			if err := bullmqScheduler(c, i, spec, next, nowMs); err != nil {
				return err
			}
		}
		if err := c.Flush(); err != nil {
			return err
		}
		for range 4 * count {
			if _, err := c.Receive(); err != nil {
				return err
			}
		}
		return nil
	})
	s1 := b.snap()
	if err != nil {
		return fmt.Errorf("BullMQ layout: %w", err)
	}
	m["set.bytes"] = float64(since(s0, s1).mem) / float64(cfg.n)
	return nil
}
