package work

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// waitingCommitter is the Enqueuer's use of a groupCommit, reduced to its bones: a submitter
// writes when no write is under way, else waits for its item to be written, and a finished write
// hands the next one to the first waiting submitter.
type waitingCommitter struct {
	g       groupCommit[*waitingItem]
	write   func(batch []*waitingItem) // called by one writer at a time
	seq     int                        // items added so far; guarded by g.mu
	writing atomic.Int32
	overlap atomic.Bool // two writes were under way at once
}

type waitingItem struct {
	seq  int // order of submission
	done chan []*waitingItem
}

func (c *waitingCommitter) submit(it *waitingItem) {
	c.g.mu.Lock()
	it.seq = c.seq
	c.seq++
	var batch []*waitingItem
	if !c.g.submitLocked(it) {
		c.g.mu.Unlock()
		if batch = <-it.done; batch == nil {
			return
		}
		// The turn was handed over (takeFirstLocked): this item first, then what is pending now.
		c.g.mu.Lock()
		batch = append([]*waitingItem{it}, c.g.takeLocked()...)
	} else {
		batch = c.g.takeLocked()
	}
	c.g.mu.Unlock()
	if c.writing.Add(1) > 1 {
		c.overlap.Store(true)
	}
	c.write(batch)
	c.writing.Add(-1)
	for _, q := range batch {
		if q != it {
			q.done <- nil
		}
	}
	c.g.putAwayLock(batch)
	if !c.g.endLocked() {
		c.g.mu.Unlock()
		return
	}
	next := c.g.takeFirstLocked()
	c.g.mu.Unlock()
	next.done <- []*waitingItem{}
}

// checkWritten fails t unless the batches, in the order written, hold every item of 0..n-1 once,
// in the order of submission.
func checkWritten(t *testing.T, batches [][]int, n int) {
	t.Helper()
	var all []int
	for _, b := range batches {
		if len(b) == 0 {
			t.Fatal("an empty batch was written")
		}
		all = append(all, b...)
	}
	if len(all) != n {
		t.Fatalf("%d items written, want %d", len(all), n)
	}
	for i, s := range all {
		if s != i {
			t.Fatalf("item %d written at place %d: items go out once each, in the order submitted", s, i)
		}
	}
}

func TestGroupCommitManySubmittersEachItemOnceInOrder(t *testing.T) {
	t.Parallel()
	const goroutines, each = 32, 200
	var batches [][]int
	c := &waitingCommitter{write: func(batch []*waitingItem) {
		b := make([]int, len(batch))
		for i, it := range batch {
			b[i] = it.seq
		}
		batches = append(batches, b) // one writer at a time: no lock needed
		time.Sleep(20 * time.Microsecond)
	}}
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			it := &waitingItem{done: make(chan []*waitingItem, 1)}
			for i := 0; i < each; i++ {
				c.submit(it) // returns once written, so it can be submitted again
			}
		}()
	}
	wg.Wait()
	if c.overlap.Load() {
		t.Fatal("two writes were under way at once")
	}
	checkWritten(t, batches, goroutines*each)
	if len(batches) >= goroutines*each {
		t.Fatalf("%d writes for %d items: concurrent submitters never shared one", len(batches), goroutines*each)
	}
	c.g.mu.Lock()
	defer c.g.mu.Unlock()
	if c.g.writers != 0 || len(c.g.pending) != 0 {
		t.Fatalf("after the last write: %d writers, %d pending, want none", c.g.writers, len(c.g.pending))
	}
}

func TestGroupCommitHandsTheTurnToTheFirstWaiter(t *testing.T) {
	t.Parallel()
	const n = 8
	release := make(chan struct{})
	var batches [][]*waitingItem
	c := &waitingCommitter{write: func(batch []*waitingItem) {
		if len(batches) == 0 {
			<-release // the first write is held until every other item waits
		}
		batches = append(batches, slices.Clone(batch))
	}}
	items := make([]*waitingItem, n)
	returned := make(chan int, n)
	for i := range items {
		items[i] = &waitingItem{done: make(chan []*waitingItem, 1)}
		go func() {
			c.submit(items[i])
			returned <- i
		}()
		// Submit in turn, so that the order of submission is known.
		eventuallyTrue(t, func() bool {
			c.g.mu.Lock()
			defer c.g.mu.Unlock()
			return c.seq == i+1
		})
	}
	close(release)
	for range items {
		<-returned
	}
	if len(batches) != 2 || len(batches[0]) != 1 || len(batches[1]) != n-1 {
		t.Fatalf("batches of %v items, want one alone then the %d that waited behind it", lens(batches), n-1)
	}
	if batches[0][0] != items[0] {
		t.Fatal("the first submitter did not write its own item")
	}
	if !slices.Equal(batches[1], items[1:]) {
		t.Fatal("the second write did not carry the waiting items in the order submitted")
	}
}

// eventuallyTrue waits up to 10s for cond.
func eventuallyTrue(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(100 * time.Microsecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}

func lens[T any](batches [][]T) []int {
	n := make([]int, len(batches))
	for i, b := range batches {
		n[i] = len(b)
	}
	return n
}

// TestGroupCommitHandsOverToAGoroutine is the acker's use: submitters never wait; one that finds
// no write under way writes, and a write that ends with items pending hands the next one to a
// goroutine of the committer's own, which writes until nothing is pending.
func TestGroupCommitHandsOverToAGoroutine(t *testing.T) {
	t.Parallel()
	const goroutines, each = 16, 500
	var g groupCommit[int]
	g.maxBatch = 7
	seq := 0
	var batches [][]int
	var writing atomic.Int32
	write := func(batch []int) {
		if writing.Add(1) > 1 {
			t.Error("two writes were under way at once")
		}
		batches = append(batches, slices.Clone(batch))
		writing.Add(-1)
	}
	kick, stop, stopped := make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	endWrite := func(batch []int) {
		g.putAwayLock(batch)
		more := g.endLocked()
		g.mu.Unlock()
		if more {
			select {
			case kick <- struct{}{}:
			default:
			}
		}
	}
	go func() {
		defer close(stopped)
		for {
			select {
			case <-kick:
			case <-stop:
				return
			}
			for {
				g.mu.Lock()
				batch := g.takeLocked() // the turn was handed over: writers still counts it
				g.mu.Unlock()
				write(batch)
				g.putAwayLock(batch)
				more := g.endLocked()
				g.mu.Unlock()
				if !more {
					break
				}
			}
		}
	}()
	var wg sync.WaitGroup
	for k := 0; k < goroutines; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				g.mu.Lock()
				s := seq
				seq++
				if !g.submitLocked(s) {
					g.mu.Unlock()
					continue
				}
				batch := g.takeLocked()
				g.mu.Unlock()
				write(batch)
				endWrite(batch)
			}
		}()
	}
	wg.Wait()
	eventuallyTrue(t, func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.writers == 0 && len(g.pending) == 0
	})
	close(stop)
	<-stopped
	checkWritten(t, batches, goroutines*each)
	for _, b := range batches {
		if len(b) > g.maxBatch {
			t.Fatalf("a batch of %d items, more than maxBatch %d", len(b), g.maxBatch)
		}
	}
}

func TestGroupCommitReusesItsArrays(t *testing.T) {
	var g groupCommit[int]
	g.maxBatch = 3
	round := func() {
		g.mu.Lock()
		for i := 0; i < 5; i++ {
			g.addLocked(i)
		}
		g.beginLocked()
		for {
			batch := g.takeLocked()
			g.mu.Unlock()
			g.putAwayLock(batch)
			if !g.endLocked() {
				break
			}
		}
		g.mu.Unlock()
	}
	round() // grows the arrays
	if allocs := testing.AllocsPerRun(100, round); allocs != 0 {
		t.Fatalf("%v allocations a round of writes, want 0", allocs)
	}
}

func TestGroupCommitPutsAFailedBatchBackFirst(t *testing.T) {
	var g groupCommit[int]
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := 0; i < 3; i++ {
		g.addLocked(i)
	}
	batch := g.takeLocked()
	g.addLocked(3)
	g.putBackLocked(batch)
	if got := g.takeLocked(); !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Fatalf("pending after a failed write: %v, want [0 1 2 3]", got)
	}
}
