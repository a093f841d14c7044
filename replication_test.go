package work

import (
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
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
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--dir", t.TempDir(), "--replicaof", "127.0.0.1", primaryPort)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	eventually(t, 10*time.Second, "the replica to start", func() bool {
		c, err := redis.Dial("tcp", addr)
		if err != nil {
			return false
		}
		defer c.Close()
		_, err = c.Do("PING")
		return err == nil
	})
}
