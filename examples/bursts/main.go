// Command bursts turns many enqueues of one thing into few runs: a document edited twenty times is
// re-indexed once, with its last edit (a debounced job), and notifications for three users are sent
// as one digest per user and hundred (grouped jobs, handed to one handler call).
//
//	go run ./examples/bursts                       # on an embedded, in-process Redis
//	go run ./examples/bursts -redis 127.0.0.1:6379 # on a real Redis
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"sort"
	"strings"
	"sync"
	"time"

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

	// Consumers first, so that the group settings (a digest holds at most 100 notifications, and
	// goes out a second after its oldest one at the latest) are known when the jobs come.
	var mu sync.Mutex
	var reindexed []int64
	digests := map[string][]int{}
	done := make(chan struct{})
	pool := work.NewWorkerPool(struct{}{}, 4, "bursts", rp)
	pool.Job("reindex", func(job *work.Job) error {
		mu.Lock()
		defer mu.Unlock()
		reindexed = append(reindexed, job.ArgInt64("edit"))
		return nil
	})
	pool.GroupJob("digest", work.GroupOptions{MaxSize: 100, MaxDelay: time.Second},
		func(ctx context.Context, notes []*work.Job) error {
			// One e-mail with every notification of the call; all of them are of one user.
			mu.Lock()
			defer mu.Unlock()
			user := notes[0].ArgString("user")
			digests[user] = append(digests[user], len(notes))
			if total(digests) == 250 {
				close(done)
			}
			return nil
		})
	pool.Start()
	defer pool.Stop()

	enq := work.NewEnqueuer("bursts", rp)
	// Twenty edits in a row: one re-index, a second after the last edit, with the last one's args.
	for edit := 1; edit <= 20; edit++ {
		_, err := enq.EnqueueWith("reindex", work.Q{"doc": 7, "edit": edit}, work.EnqueueOptions{
			Debounce: &work.Debounce{ID: "doc-7", Window: time.Second, MaxWait: 10 * time.Second},
		})
		if err != nil {
			log.Fatal(err)
		}
	}
	// 250 notifications: 200 for ada, 40 for bob, 10 for cleo, each grouped by its user.
	for i := 0; i < 250; i++ {
		user := "ada"
		switch {
		case i >= 240:
			user = "cleo"
		case i >= 200:
			user = "bob"
		}
		_, err := enq.EnqueueWith("digest", work.Q{"user": user, "n": i}, work.EnqueueOptions{Group: user})
		if err != nil {
			log.Fatal(err)
		}
	}

	select {
	case <-done:
	case <-time.After(time.Minute):
		log.Fatal("the digests did not all go out within a minute")
	}
	for start := time.Now(); time.Since(start) < time.Minute; time.Sleep(50 * time.Millisecond) {
		mu.Lock()
		n := len(reindexed)
		mu.Unlock()
		if n > 0 {
			break
		}
	}
	time.Sleep(200 * time.Millisecond) // a second re-index, which must not come, would show here
	mu.Lock()
	defer mu.Unlock()
	fmt.Printf("20 edits of doc 7: %d re-index, of edit %v\n", len(reindexed), reindexed)
	users := make([]string, 0, len(digests))
	for u := range digests {
		users = append(users, u)
	}
	sort.Strings(users)
	for _, u := range users {
		sizes := make([]string, len(digests[u]))
		for i, n := range digests[u] {
			sizes[i] = fmt.Sprint(n)
		}
		fmt.Printf("%s: %d digest(s) of %s notifications\n", u, len(sizes), strings.Join(sizes, "+"))
	}
}

func total(digests map[string][]int) int {
	n := 0
	for _, sizes := range digests {
		for _, s := range sizes {
			n += s
		}
	}
	return n
}
