package examples

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work"
)

// Keys of one job wait in the lane and a pool takes them in rounds of lane jobs alone; a key's
// second job moves its first to the key's queue (a spill). On the embedded Redis, whose Lua is
// another implementation than Redis's, every job runs once, a key's two in order, and no lane state
// is left.
func TestLaneOnTheEmbeddedRedis(t *testing.T) {
	mr, err := miniredis.Run()
	if err != nil {
		t.Fatal(err)
	}
	defer mr.Close()
	rp := &redis.Pool{MaxIdle: 4, Dial: func() (redis.Conn, error) { return redis.Dial("tcp", mr.Addr()) }}
	defer rp.Close()
	do := func(cmd string, args ...interface{}) (interface{}, error) {
		c := rp.Get()
		defer c.Close()
		return c.Do(cmd, args...)
	}
	const ns, keys = "lane", 60
	enq := work.NewEnqueuer(ns, rp)
	var jobs []work.BatchJob
	for i := 0; i < keys; i++ {
		jobs = append(jobs, work.BatchJob{Name: "ping", Key: fmt.Sprint("k", i), Args: work.Q{"n": 1}})
	}
	if _, err := enq.EnqueueBatch(jobs); err != nil {
		t.Fatal(err)
	}
	if n, _ := redis.Int(do("HLEN", ns+":keyed:ping:lane")); n != keys {
		t.Fatalf("%d keys in the lane, want %d", n, keys)
	}
	if _, err := enq.EnqueueWith("ping", work.Q{"n": 2}, work.EnqueueOptions{Key: "k0"}); err != nil {
		t.Fatal(err)
	}
	if n, _ := redis.Int(do("LLEN", ns+":keyed:ping:{k0}")); n != 2 {
		t.Fatalf("k0's queue holds %d jobs after its second enqueue, want both", n)
	}

	var mu sync.Mutex
	ran := map[string][]int64{}
	total := 0
	wp := work.NewWorkerPool(struct{}{}, 8, ns, rp)
	wp.Job("ping", func(j *work.Job) error {
		mu.Lock()
		defer mu.Unlock()
		ran[j.Key] = append(ran[j.Key], j.ArgInt64("n"))
		total++
		return nil
	})
	wp.Start()
	deadline := time.Now().Add(time.Minute)
	for {
		mu.Lock()
		n := total
		mu.Unlock()
		if n == keys+1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	wp.Stop()
	mu.Lock()
	defer mu.Unlock()
	if total != keys+1 {
		t.Fatalf("%d jobs ran, want %d", total, keys+1)
	}
	for i := 0; i < keys; i++ {
		key, want := fmt.Sprint("k", i), "[1]"
		if i == 0 {
			want = "[1 2]"
		}
		if got := fmt.Sprint(ran[key]); got != want {
			t.Errorf("key %s ran %s, want %s", key, got, want)
		}
	}
	left, _ := redis.Strings(do("KEYS", ns+":keyed:ping:*"))
	for _, k := range left {
		if k != ns+":keyed:ping:meta" {
			t.Errorf("keyed state left: %s", k)
		}
	}
}
