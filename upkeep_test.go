package work

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

// The batch index loses every batch whose status expired, with no reader involved: the pools'
// upkeep removes them. WORK_TEST_BATCHES sets how many batches (default 300); the figure of the
// index's size before and after is logged.
func TestUpkeepDropsExpiredBatchesFromTheIndex(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	n := 300
	if v, err := strconv.Atoi(os.Getenv("WORK_TEST_BATCHES")); err == nil && v > 0 {
		n = v
	}
	e := NewEnqueuer(ns, pool)
	for i := 0; i < n; i++ {
		if _, _, err := e.EnqueueInBatch(BatchOptions{Keep: time.Second}, []BatchJob{{Name: "m"}}); err != nil {
			t.Fatal(err)
		}
	}
	wp := bhvStart(t, NewWorkerPool(bhvCtx{}, 10, ns, pool).Job("m", func(*Job) error { return nil }))
	index := bhvKey(ns, "batches")
	eventually(t, time.Minute, "every batch to complete", func() bool {
		return rInt(t, pool, "ZCARD", bhvKey(ns, "batches_expiry")) == int64(n)
	})
	before := rInt(t, pool, "ZCARD", index)
	beforeBytes := rInt(t, pool, "MEMORY", "USAGE", index, "SAMPLES", "0")
	eventually(t, 10*time.Second, "every batch hash to expire", func() bool {
		return len(rStrings(t, pool, "KEYS", ns+":batch:*")) == 0
	})
	// One upkeep pass, as the pool makes every minute (an upkeep of the test's own: the pool's runs
	// on its goroutine).
	u := newUpkeep(wp.reg.run)
	removed := u.trimBatches()
	after := rInt(t, pool, "ZCARD", index)
	t.Logf("%d batches of Keep 1s: index %d entries (%d bytes) once complete, %d after one upkeep pass (%d removed)",
		n, before, beforeBytes, after, removed)
	if before != int64(n) || after != 0 || removed != int64(n) {
		t.Fatalf("index held %d, then %d after upkeep (removed %d); want %d, then 0", before, after, removed, n)
	}
	if left := rInt(t, pool, "EXISTS", bhvKey(ns, "batches_expiry")); left != 0 {
		t.Errorf("batches_expiry still exists after every batch left the index")
	}
}

// Entries of the index whose batch is gone by another way (completed before batches_expiry existed,
// deleted by hand) go too, in a walk of a bounded part of the index per call; open batches stay.
func TestUpkeepWalksTheBatchIndexForEntriesWithoutABatch(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	open, err := e.NewBatch(BatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	index := bhvKey(ns, "batches")
	const orphans = 2500
	for i := 0; i < orphans; i++ {
		rdo(t, pool, "ZADD", index, 1000+i, fmt.Sprintf("gone%d", i))
	}
	wp := bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).Job("m", func(*Job) error { return nil }))
	u := newUpkeep(wp.reg.run)
	// Each call checks at most batchBudget entries; the walk goes on from where it stopped.
	for i := 0; i < 5 && rInt(t, pool, "ZCARD", index) > 1; i++ {
		n, next, err := wp.store.trimBatches(wp.reg.run.ctx, batchBudget, u.batchWalk)
		if err != nil {
			t.Fatal(err)
		}
		if n > batchBudget {
			t.Fatalf("one call removed %d entries, over its budget of %d", n, batchBudget)
		}
		u.batchWalk = next
	}
	if left := rStrings(t, pool, "ZRANGE", index, 0, -1); len(left) != 1 || left[0] != open.ID {
		t.Fatalf("index holds %d entries after the walk (first %v), want only the open batch %s", len(left), left[:min(len(left), 3)], open.ID)
	}
}
