// Command schedules keeps one schedule per customer in Redis, set at run time: each in the
// customer's time zone and keyed by the customer, so that every customer's runs are dispatched
// fairly and within its per-key limits. A worker pool enqueues each tick once and runs the jobs; the
// handler makes (schedule ID, tick) its idempotency key.
//
//	go run ./examples/schedules                       # on an embedded, in-process Redis
//	go run ./examples/schedules -redis 127.0.0.1:6379 # on a real Redis
package main

import (
	"flag"
	"fmt"
	"log"
	"sort"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // the customers' zones, on a machine without a zone database too

	"github.com/alicebob/miniredis/v2"
	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work"
)

func main() {
	addr := flag.String("redis", "", "Redis host:port (default: an embedded, in-process Redis)")
	flag.Parse()
	if *addr == "" {
		mr, err := miniredis.Run()
		if err != nil {
			log.Fatal(err)
		}
		defer mr.Close()
		*addr = mr.Addr()
	}
	rp := &redis.Pool{MaxIdle: 10, Dial: func() (redis.Conn, error) { return redis.Dial("tcp", *addr) }}
	defer rp.Close()

	// One schedule per customer, set (or replaced) under an ID of our choosing; setting the same
	// schedule again on the next start changes nothing. A real report would run "0 0 9 * * MON"
	// (Mondays at 9:00 in the customer's zone); here it runs every second.
	customers := map[string]string{"ada": "Europe/Berlin", "bob": "America/New_York", "cleo": "Asia/Tokyo"}
	client := work.NewClient("reports", rp)
	var list []work.Schedule
	for customer, zone := range customers {
		list = append(list, work.Schedule{ID: "report:" + customer, Spec: "@every 1s", Location: zone,
			JobName: "send_report", Args: work.Q{"customer": customer}, Key: customer})
	}
	if err := client.SetSchedules(list); err != nil {
		log.Fatal(err)
	}

	// The handler: a tick may be delivered twice (after a crash, say), never enqueued twice, so
	// (ScheduleID, Tick) tells a second delivery from a new run. A real handler would keep it in its
	// own database, beside the report it sends.
	var mu sync.Mutex
	sent := map[string]bool{}
	runs := map[string]int{}
	twice := 0 // customers whose report ran twice
	done := make(chan struct{})
	pool := work.NewWorkerPool(struct{}{}, 4, "reports", rp)
	pool.Job("send_report", func(job *work.Job) error {
		mu.Lock()
		defer mu.Unlock()
		idem := fmt.Sprintf("%s@%d", job.ScheduleID, job.Tick)
		if sent[idem] {
			fmt.Printf("%-5s %s delivered again: already sent\n", job.Key+":", idem)
			return nil
		}
		sent[idem] = true
		zone, err := work.ParseLocation(customers[job.Key])
		if err != nil {
			return err
		}
		fmt.Printf("%-5s report of the tick at %s (%s)\n", job.Key+":", time.Unix(job.Tick, 0).In(zone).Format("15:04:05 MST"), idem)
		if runs[job.Key]++; runs[job.Key] == 2 {
			if twice++; twice == len(customers) {
				close(done)
			}
		}
		return nil
	})
	pool.Start()
	select {
	case <-done:
	case <-time.After(time.Minute):
		log.Fatal("the schedules did not run")
	}
	pool.Stop()

	// A customer leaves: its schedule goes, the others stay.
	if err := client.DeleteSchedule("report:bob"); err != nil {
		log.Fatal(err)
	}
	page, err := client.Schedules(work.ScheduleQuery{StoredOnly: true})
	if err != nil {
		log.Fatal(err)
	}
	var left []string
	for _, s := range page.Schedules {
		left = append(left, s.ID)
	}
	sort.Strings(left)
	fmt.Printf("%d schedules left: %s\n", page.Stored, strings.Join(left, ", "))
}
