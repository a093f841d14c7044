package work

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// A keyed payload pushed by hand onto its name's own queue goes to the dead set with the reason; a
// retry from the dead set then sends it to its key's queue, where it runs with its key.
func TestKeyedPayloadOnTheNamesQueueIsDeadLetteredThenRetriedToItsKey(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	ran := make(chan string, 4)
	bhvStart(t, NewWorkerPool(bhvCtx{}, 2, ns, pool).Job("mail", func(j *Job) error { ran <- j.ID + "/" + j.Key; return nil }))
	rdo(t, pool, "LPUSH", bhvKey(ns, "jobs", "mail"), `{"name":"mail","id":"misplaced","t":1,"args":null,"key":"acme"}`)
	var dead []*Job
	eventually(t, 10*time.Second, "the misplaced job in the dead set", func() bool {
		dead = bhvZJobs(t, pool, bhvKey(ns, "dead"))
		return len(dead) == 1
	})
	if !strings.Contains(dead[0].LastErr, `job key "acme" found in the queue of its name`) {
		t.Fatalf("dead record's reason %q", dead[0].LastErr)
	}
	c := NewClient(ns, pool)
	jobs, _, err := c.DeadJobs(1)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("DeadJobs: %v %v", jobs, err)
	}
	if err := c.RetryDeadJob(jobs[0].DiedAt, jobs[0].ID); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-ran:
		if got != "misplaced/acme" {
			t.Fatalf("ran %s, want misplaced/acme", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the retried job did not run")
	}
}

// A payload in one key's queue that names another key goes to the dead set, and the key it was
// taken from keeps no running slot for it.
func TestKeyedPayloadInAnotherKeysQueueIsDeadLettered(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	rdo(t, pool, "LPUSH", ns+":keyed:mail:{a}", `{"name":"mail","id":"wrongkey","t":1,"args":null,"key":"b"}`)
	rdo(t, pool, "ZADD", ns+":keyed:mail:ready", 0, "a")
	bhvStart(t, NewWorkerPool(bhvCtx{}, 2, ns, pool).JobWithOptions("mail", JobOptions{KeyConcurrency: 1}, func(*Job) error { return nil }))
	var dead []*Job
	eventually(t, 10*time.Second, "the job in the dead set", func() bool {
		dead = bhvZJobs(t, pool, bhvKey(ns, "dead"))
		return len(dead) == 1
	})
	if !strings.Contains(dead[0].LastErr, `job key "b" does not match the queue of key "a"`) {
		t.Fatalf("dead record's reason %q", dead[0].LastErr)
	}
	waitKeyedStateGone(t, pool, ns, "mail")
}

// Keyed state overwritten by another program with the wrong type stops only what it belongs to: a
// name's running hash stops that name's keyed jobs, a key's queue that key; the name's own queue,
// other keys and other names keep flowing, and everything runs once the keys are repaired.
func TestKeyedStateOfTheWrongTypeStopsOnlyItsOwner(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	h, count := countRuns()
	// Keys' own queues (a lane job needs none, so a queue of the wrong type stops no lane key).
	limitKeys(t, pool, ns, "mail")
	for _, key := range []string{"good", "broken"} {
		if _, err := e.EnqueueWith("mail", nil, EnqueueOptions{Key: key}); err != nil {
			t.Fatal(err)
		}
	}
	// Another key's queue of the wrong type, and another name's running hash.
	rdo(t, pool, "DEL", ns+":keyed:mail:{broken}")
	rdo(t, pool, "SET", ns+":keyed:mail:{broken}", "x")
	if _, err := e.EnqueueWith("sms", nil, EnqueueOptions{Key: "k"}); err != nil {
		t.Fatal(err)
	}
	rdo(t, pool, "SET", ns+":keyed:sms:running", "x")
	if _, err := e.Enqueue("sms", nil); err != nil {
		t.Fatal(err)
	}
	bhvStart(t, NewWorkerPool(bhvCtx{}, 4, ns, pool).Job("mail", h).Job("sms", h))
	eventually(t, 10*time.Second, "the good key and the unkeyed job to run", func() bool {
		return count("mail/good") == 1 && count("sms/") == 1
	})
	if count("sms/k") != 0 {
		t.Fatal("a keyed job of a name whose running hash is broken ran")
	}
	// Repaired: everything left runs.
	rdo(t, pool, "DEL", ns+":keyed:sms:running")
	rdo(t, pool, "DEL", ns+":keyed:mail:{broken}")
	if _, err := e.EnqueueWith("mail", nil, EnqueueOptions{Key: "broken"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "the repaired keys' jobs to run", func() bool {
		return count("sms/k") == 1 && count("mail/broken") == 1
	})
	// An enqueue onto broken keyed state is refused with a clear error, nothing written.
	rdo(t, pool, "SET", ns+":keyed:push:meta", "x")
	if _, err := e.EnqueueWith("push", nil, EnqueueOptions{Key: "k"}); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("enqueue onto a broken meta hash: %v", err)
	}
	if n := rInt(t, pool, "EXISTS", ns+":keyed:push:{k}"); n != 0 {
		t.Fatal("a refused enqueue wrote the key's queue")
	}
}

// A pool's keyed in-progress list overwritten with another type stops its keyed takes; the jobs it
// popped go back to their keys' queues and the keys back to their turns, so they run once the list
// is repaired, even keys whose only job it was. KeyConcurrency 1 takes its rounds another way
// (keyedTake's one-rounds), so it is run both ways.
func TestKeyedInProgressOfTheWrongTypePutsKeysBack(t *testing.T) {
	t.Parallel()
	for _, limit := range []uint{0, 1} {
		t.Run(fmt.Sprintf("KeyConcurrency=%d", limit), func(t *testing.T) {
			t.Parallel()
			testKeyedInProgressOfTheWrongType(t, limit)
		})
	}
}

func testKeyedInProgressOfTheWrongType(t *testing.T, limit uint) {
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	h, count := countRuns()
	for _, key := range []string{"a", "b"} {
		if _, err := e.EnqueueWith("mail", nil, EnqueueOptions{Key: key}); err != nil {
			t.Fatal(err)
		}
	}
	wp := NewWorkerPool(bhvCtx{}, 4, ns, pool).JobWithOptions("mail", JobOptions{KeyConcurrency: limit}, h).Job("sms", h)
	inprogress := ns + ":keyed:mail:" + wp.workerPoolID + ":inprogress"
	rdo(t, pool, "SET", inprogress, "x")
	bhvStart(t, wp)
	// An unkeyed job enqueued after the pool started runs: the pool has fetched since.
	if _, err := e.Enqueue("sms", nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the unkeyed job to run", func() bool { return count("sms/") == 1 })
	if count("mail/a")+count("mail/b") != 0 {
		t.Fatal("a keyed job ran while the pool's keyed in-progress list was broken")
	}
	rdo(t, pool, "DEL", inprogress)
	// A new keyed job wakes the pool; the old keys must have their turns back to run.
	if _, err := e.EnqueueWith("mail", nil, EnqueueOptions{Key: "c"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "every key's job to run", func() bool {
		return count("mail/a") == 1 && count("mail/b") == 1 && count("mail/c") == 1
	})
}

// countRuns returns a handler that counts its runs by "<name>/<key>", and the function that reads a
// count.
func countRuns() (func(*Job) error, func(string) int) {
	var mu sync.Mutex
	ran := map[string]int{}
	h := func(j *Job) error {
		mu.Lock()
		ran[j.Name+"/"+j.Key]++
		mu.Unlock()
		return nil
	}
	count := func(k string) int {
		mu.Lock()
		defer mu.Unlock()
		return ran[k]
	}
	return h, count
}
