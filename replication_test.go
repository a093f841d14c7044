package work

import (
	"errors"
	"testing"
	"time"

	"github.com/workqueue/work/internal/redistest"
)

func TestWaitReplicasFailsWithoutAReplicaAndSucceedsWithOne(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-servers")
	}
	t.Parallel()
	primary, server := privateRedis(t)
	_ = server
	e := NewEnqueuer("wait", primary)
	e.WaitReplicas, e.WaitTimeout = 1, 100*time.Millisecond
	if _, err := e.Enqueue("x", nil); !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("enqueue without a replica: %v, want ErrNotReplicated", err)
	}

	// Attach a replica and wait for it to sync.
	cfg := rStrings(t, primary, "CONFIG", "GET", "port")
	startReplica(t, cfg[1])
	e.WaitTimeout = 2 * time.Second
	eventually(t, 20*time.Second, "the replica to acknowledge an enqueue", func() bool {
		_, err := e.Enqueue("x", nil)
		return err == nil
	})
	if _, err := e.EnqueueBatch([]BatchJob{{Name: "x"}, {Name: "y"}}); err != nil {
		t.Fatalf("batch with a replica: %v", err)
	}
	if _, err := e.EnqueueIn("x", 60, nil); err != nil {
		t.Fatalf("scheduled with a replica: %v", err)
	}
	if _, err := e.EnqueueUnique("x", Q{"u": 1}); err != nil {
		t.Fatalf("unique with a replica: %v", err)
	}
}

func startReplica(t *testing.T, primaryPort string) {
	t.Helper()
	redistest.Start(t, redistest.Options{Args: []string{"--replicaof", "127.0.0.1", primaryPort}})
}
