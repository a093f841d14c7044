package work

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/workqueue/work/internal/rdb"
)

// The batch index loses every batch whose status expired, with no reader involved: the pools drop
// each one when it is due, as they move due jobs. WORK_TEST_BATCHES sets how many batches (default
// 300); the index's size at its largest and at the end is logged.
func TestExpiredBatchesLeaveTheIndexWithNoReader(t *testing.T) {
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
	index := bhvKey(ns, "batches")
	largest, largestBytes := rInt(t, pool, "ZCARD", index), rInt(t, pool, "MEMORY", "USAGE", index, "SAMPLES", "0")
	if largest != int64(n) {
		t.Fatalf("the index lists %d of the %d batches made", largest, n)
	}
	bhvStart(t, NewWorkerPool(bhvCtx{}, 10, ns, pool).Job("m", func(*Job) error { return nil }))
	eventually(t, time.Minute, "every batch to expire and leave the index", func() bool {
		return rInt(t, pool, "EXISTS", index) == 0 && len(rStrings(t, pool, "KEYS", ns+":batch*")) == 0
	})
	t.Logf("%d batches of Keep 1s: index of %d entries (%d bytes) before they ran, 0 once they expired", n, largest, largestBytes)
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
	st := rdb.NewStore(ns, PoolBackend(pool))
	u := newUpkeep(upkeepParams{ctx: context.Background(), store: st, logger: slog.Default()})
	// Each call checks at most batchBudget entries; the walk goes on from where it stopped.
	for i := 0; i < 5 && rInt(t, pool, "ZCARD", index) > 1; i++ {
		n, next, err := st.TrimBatches(u.ctx, batchBudget, batchBudget, u.batchWalk)
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
