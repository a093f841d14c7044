package worktest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/workqueue/work"
	"github.com/workqueue/work/worktest"
)

// mailContext is a worker pool's context struct.
type mailContext struct {
	account string
}

func (c *mailContext) FindAccount(job *work.Job, next work.NextMiddlewareFunc) error {
	c.account = "account-" + job.ArgString("address")
	return next()
}

func (c *mailContext) SendWelcome(ctx context.Context, job *work.Job) error {
	fmt.Printf("welcome %s (%s), attempt %d\n", job.ArgString("address"), c.account, job.Fails+1)
	return job.ArgError()
}

// Run a handler with its middleware on a job made from args, with no Redis.
func ExampleRun() {
	c := &mailContext{}
	err := worktest.Run((*mailContext).SendWelcome, work.Q{"address": "a@example.com"},
		worktest.WithMiddleware((*mailContext).FindAccount),
		worktest.WithCustomContext(c), // to read the context struct afterwards
		worktest.WithTimeout(time.Minute))
	fmt.Println(err, c.account)
	// Output:
	// welcome a@example.com (account-a@example.com), attempt 1
	// <nil> account-a@example.com
}

// A panic is returned as the failure a pool would record.
func ExampleRun_panic() {
	err := worktest.Run(func(job *work.Job) error {
		var m map[string]int
		//lint:ignore SA5000 the handler panics on purpose: that is what the example shows
		m["x"]++
		return nil
	}, nil)
	fmt.Println(err)
	// Output: assignment to entry in nil map
}

// Jobs lists what code under test enqueued, as a worker would decode it.
func ExampleJobs() {
	pool := newPool()
	defer pool.Close()
	ns := fmt.Sprintf("worktest-example-jobs-%d", time.Now().UnixNano())
	defer worktest.DeleteNamespace(pool, ns)

	enqueuer := work.NewEnqueuer(ns, pool)
	enqueuer.Enqueue("send_email", work.Q{"address": "a@example.com", "retries": 3})
	enqueuer.Enqueue("send_email", work.Q{"address": "b@example.com"})

	jobs, err := worktest.Jobs(pool, ns, "send_email")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, j := range jobs {
		fmt.Println(j.Name, j.Args["address"], worktest.Match(j, work.Q{"retries": 3}))
	}
	// Output:
	// send_email a@example.com true
	// send_email b@example.com false
}

// DrainContext waits for a started pool to empty its queues, up to a deadline.
func ExampleDrainContext() {
	pool := newPool()
	defer pool.Close()
	ns := fmt.Sprintf("worktest-example-drain-%d", time.Now().UnixNano())
	defer worktest.DeleteNamespace(pool, ns)

	sum := 0
	wp := work.NewWorkerPool(struct{}{}, 1, ns, pool)
	wp.Job("add", func(job *work.Job) error { sum += int(job.ArgInt64("n")); return nil })
	enqueuer := work.NewEnqueuer(ns, pool)
	for n := 1; n <= 10; n++ {
		enqueuer.Enqueue("add", work.Q{"n": n})
	}
	wp.Start()
	defer wp.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fmt.Println(worktest.DrainContext(ctx, wp), sum)
	// Output: <nil> 55
}

// In a test: a namespace of the test's own, and an assertion on what the code under test enqueued.
func ExampleAssertEnqueued() {
	signup := func(enqueuer *work.Enqueuer, address string) error {
		_, err := enqueuer.Enqueue("send_email", work.Q{"address": address, "template": "welcome"})
		return err
	}

	_ = func(t *testing.T) { // func TestSignup(t *testing.T)
		pool := newPool()
		ns := worktest.Namespace(t, pool) // deleted when the test ends
		if err := signup(work.NewEnqueuer(ns, pool), "a@example.com"); err != nil {
			t.Fatal(err)
		}
		job := worktest.AssertEnqueued(t, pool, ns, "send_email", work.Q{"address": "a@example.com"})
		if job != nil && job.ArgString("template") != "welcome" {
			t.Errorf("template %q", job.ArgString("template"))
		}
		worktest.AssertNotEnqueued(t, pool, ns, "charge_card", nil)
	}
}
