package redistest

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/gomodule/redigo/redis"
)

// What benchmarks read of the server they run against.

// ServerStats reads the server's command count and CPU seconds (user and system), for deltas
// around what a benchmark measures; other clients of the server count too.
func ServerStats(tb testing.TB, pool *redis.Pool) (cmds int64, cpu float64) {
	tb.Helper()
	c := pool.Get()
	defer c.Close()
	info, err := redis.String(c.Do("INFO", "all"))
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch k {
		case "total_commands_processed":
			cmds, _ = strconv.ParseInt(v, 10, 64)
		case "used_cpu_sys", "used_cpu_user":
			f, _ := strconv.ParseFloat(v, 64)
			cpu += f
		}
	}
	return cmds, cpu
}

// Callgrind sends op (-z: zero the counts, -d: dump them) to the callgrind running the server
// whose pid is WORK_CALLGRIND_PID (benches/callgrind/server.sh), so that a benchmark counts only
// what it measures. Without WORK_CALLGRIND_PID it does nothing.
func Callgrind(tb testing.TB, op string) {
	tb.Helper()
	pid := os.Getenv("WORK_CALLGRIND_PID")
	if pid == "" {
		return
	}
	if out, err := exec.Command("callgrind_control", op, pid).CombinedOutput(); err != nil {
		tb.Fatalf("callgrind_control %s: %v: %s", op, err, out)
	}
}
