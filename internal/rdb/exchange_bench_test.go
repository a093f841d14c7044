package rdb

import (
	"context"
	"testing"

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
			call()             // loads the script
			counted := b.N > 1 // go test runs each with b.N 1 first
			_, cpu0 := redistest.ServerStats(b, pool)
			if counted {
				redistest.Callgrind(b, "-z")
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				call()
			}
			b.StopTimer()
			if counted {
				redistest.Callgrind(b, "-d")
			}
			_, cpu1 := redistest.ServerStats(b, pool)
			b.ReportMetric((cpu1-cpu0)*1e6/float64(b.N), "redis-µs/call")
		})
	}
}
