package main

import (
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// goCPU returns the user+system CPU seconds this process has used.
func goCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// systemCPU returns the CPU seconds all processes of the machine have used (Linux: /proc/stat), or
// NaN where the system does not tell.
func systemCPU() float64 {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return math.NaN()
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return math.NaN()
	}
	var busy float64
	for i, v := range f[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		if i >= 7 { // guest time is counted in user already
			break
		}
		n, _ := strconv.ParseFloat(v, 64)
		busy += n
	}
	return busy / 100 // USER_HZ
}

// snapshot is the state of the counters at one moment.
type snapshot struct {
	at    time.Time
	sys   float64
	goCPU float64
	srv   serverStats
	rt    int64
}

func (b *bench) snap() snapshot {
	st, err := b.srv.stats()
	if err != nil {
		b.fatalf("INFO: %v", err)
	}
	return snapshot{at: time.Now(), sys: systemCPU(), goCPU: goCPU(), srv: st, rt: roundTrips.Load()}
}

// usage is what happened between two snapshots.
type usage struct {
	wall      time.Duration
	otherCPU  float64 // CPU seconds used by other processes of the machine
	goCPU     float64
	redisCPU  float64
	mem       int64
	cmds      int64 // INFO commandstats calls, summed (commands run by scripts included)
	totalCmds int64 // total_commands_processed, less the harness's own INFO
	rt        int64
	byCmd     map[string]int64
	usecByCmd map[string]int64 // INFO commandstats usec delta by command
}

func since(a, b snapshot) usage {
	u := usage{
		wall:      b.at.Sub(a.at),
		otherCPU:  (b.sys - a.sys) - (b.goCPU - a.goCPU) - (b.srv.cpu - a.srv.cpu),
		goCPU:     b.goCPU - a.goCPU,
		redisCPU:  b.srv.cpu - a.srv.cpu,
		mem:       b.srv.usedMem - a.srv.usedMem,
		totalCmds: b.srv.totalCmds - a.srv.totalCmds - 1, // the INFO that took snapshot a
		rt:        b.rt - a.rt,
		byCmd:     make(map[string]int64),
		usecByCmd: make(map[string]int64),
	}
	for k, v := range b.srv.calls {
		if d := v - a.srv.calls[k]; d > 0 {
			u.byCmd[k] = d
			u.cmds += d
		}
	}
	for k, v := range b.srv.usec {
		if d := v - a.srv.usec[k]; d > 0 {
			u.usecByCmd[k] = d
		}
	}
	return u
}

// perJob fills the usual per-job metrics of a phase that handled n jobs in elapsed.
func (u usage) perJob(m map[string]float64, phase string, n int, elapsed time.Duration, withMem bool) {
	fn := float64(n)
	m[phase+".jobs_s"] = fn / elapsed.Seconds()
	m[phase+".go_cpu"] = u.goCPU * 1000 / fn
	m[phase+".redis_cpu"] = u.redisCPU * 1000 / fn
	m[phase+".go_cores"] = u.goCPU / u.wall.Seconds()
	m[phase+".redis_cores"] = u.redisCPU / u.wall.Seconds()
	m[phase+".other_cores"] = max(0, u.otherCPU/u.wall.Seconds())
	m[phase+".cmds"] = float64(u.cmds) / fn
	m[phase+".rt"] = float64(u.rt) / fn
	if withMem {
		m[phase+".bytes"] = float64(u.mem) / fn
	}
}

// loadAverage returns the 1, 5 and 15 minute load averages, when the system tells them.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// median, min and max of a sample (NaN when empty).
func summarize(xs []float64) (med, lo, hi float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	med = s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return med, s[0], s[n-1]
}

// percentile of sorted durations (nearest rank).
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(sorted) {
		i = len(sorted) - 1
	}
	return sorted[i]
}
