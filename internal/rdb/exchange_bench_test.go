package rdb

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/gomodule/redigo/redis"

	"github.com/workqueue/work/internal/redistest"
)

// BenchmarkExchangeIdleFetch makes exchange calls that fetch from one empty group, a queue or a
// name's keyed jobs: what every call costs Redis before its jobs (the script's text run anew, its
// arguments and reply turned into Lua and back). It reports Redis CPU a call. With
// WORK_CALLGRIND_PID (benches/callgrind/exchange.sh), each sub-benchmark zeroes callgrind's counts of
// that server before its calls and dumps them after.
func BenchmarkExchangeIdleFetch(b *testing.B) {
	pool := newTestPool(b)
	s := NewStore(redistest.Namespace(b, pool, "rdb-exchange-bench"), PoolBackend(pool))
	for _, c := range []struct {
		name string
		q    *QueueArgs
	}{
		{"queue", s.NewQueueArgs("a", "pool1", false, RateLimit{})},
		{"keyed", s.NewKeyedQueueArgs("a", "pool1", false, RateLimit{}, KeyDefaults{})},
	} {
		b.Run(c.name, func(b *testing.B) {
			x := &Exchange{}
			call := func() {
				x.Reset()
				x.Fetch = append(x.Fetch, FetchShare{Q: c.q, Share: 1})
				if err := s.RunExchange(context.Background(), "pool1", x); err != nil {
					b.Fatal(err)
				}
			}
			call() // loads the script
			counted := b.N > 1 && os.Getenv("WORK_CALLGRIND_PID") != ""
			if counted {
				callgrindControl(b, "-z")
			}
			cpu0 := redisCPU(b, pool)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				call()
			}
			b.StopTimer()
			if counted {
				callgrindControl(b, "-d")
			}
			b.ReportMetric((redisCPU(b, pool)-cpu0)*1e6/float64(b.N), "redis-µs/call")
		})
	}
}

// callgrindControl sends op to the callgrind of WORK_CALLGRIND_PID.
func callgrindControl(b *testing.B, op string) {
	if out, err := exec.Command("callgrind_control", op, os.Getenv("WORK_CALLGRIND_PID")).CombinedOutput(); err != nil {
		b.Fatalf("callgrind_control %s: %v: %s", op, err, out)
	}
}

// redisCPU reads the server's CPU seconds, user and system.
func redisCPU(b *testing.B, pool *redis.Pool) float64 {
	c := pool.Get()
	defer c.Close()
	info, err := redis.String(c.Do("INFO", "cpu"))
	if err != nil {
		b.Fatal(err)
	}
	var cpu float64
	for _, line := range strings.Split(info, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
			f, _ := strconv.ParseFloat(v, 64)
			cpu += f
		}
	}
	return cpu
}
