package main

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

type kind int

const (
	kindRate  kind = iota // jobs/s: integer with separators
	kindSig               // 3 significant digits
	kindBytes             // integer
)

type metricDef struct {
	key   string
	label string
	kind  kind
}

func (m metricDef) format(v float64) string { return formatValue(m.kind, v) }

func formatValue(k kind, v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	switch k {
	case kindRate, kindBytes:
		return commas(v)
	default:
		return sig3(v)
	}
}

// commas formats v rounded to an integer with thousands separators.
func commas(v float64) string {
	s := strconv.FormatInt(int64(math.Round(v)), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// sig3 formats v with about three significant digits.
func sig3(v float64) string {
	if v == 0 {
		return "0"
	}
	d := 2 - int(math.Floor(math.Log10(math.Abs(v))))
	if d <= 0 {
		return commas(v)
	}
	return strconv.FormatFloat(v, 'f', d, 64)
}

func enqueueMetrics() []metricDef {
	return []metricDef{
		{"enq.jobs_s", "enqueue jobs/s", kindRate},
		{"enq.go_cpu", "enqueue Go CPU s/1k jobs", kindSig},
		{"enq.redis_cpu", "enqueue Redis CPU s/1k jobs", kindSig},
		{"enq.go_cores", "enqueue Go CPU cores busy", kindSig},
		{"enq.redis_cores", "enqueue Redis CPU cores busy", kindSig},
		{"enq.other_cores", "enqueue other processes' CPU cores busy", kindSig},
		{"enq.bytes", "enqueue Redis bytes/queued job", kindBytes},
		{"enq.cmds", "enqueue Redis cmds/job", kindSig},
		{"enq.rt", "enqueue client socket writes/job", kindSig},
	}
}

func processMetrics() []metricDef {
	return []metricDef{
		{"proc.jobs_s", "process jobs/s", kindRate},
		{"proc.go_cpu", "process Go CPU s/1k jobs", kindSig},
		{"proc.redis_cpu", "process Redis CPU s/1k jobs", kindSig},
		{"proc.go_cores", "process Go CPU cores busy", kindSig},
		{"proc.redis_cores", "process Redis CPU cores busy", kindSig},
		{"proc.other_cores", "process other processes' CPU cores busy", kindSig},
		{"proc.cmds", "process Redis cmds/job", kindSig},
		{"proc.rt", "process client socket writes/job", kindSig},
	}
}

func latencyMetrics() []metricDef {
	return []metricDef{
		{"lat.achieved", "offered jobs/s (achieved)", kindRate},
		{"lat.p50", "p50 enqueue-to-start ms", kindSig},
		{"lat.p99", "p99 enqueue-to-start ms", kindSig},
		{"lat.p999", "p99.9 enqueue-to-start ms", kindSig},
		{"lat.max", "max enqueue-to-start ms", kindSig},
		{"lat.go_cpu", "consumer Go CPU s/1k jobs", kindSig},
		{"lat.go_cores", "consumer Go CPU cores busy", kindSig},
		{"lat.rt", "consumer client socket writes/job", kindSig},
		{"lat.prod_go_cpu", "producer Go CPU s/1k jobs (own process)", kindSig},
		{"lat.prod_rt", "producer client socket writes/job", kindSig},
		{"lat.redis_cpu", "Redis CPU s/1k jobs (producer+consumer)", kindSig},
		{"lat.cmds", "Redis cmds/job (producer+consumer)", kindSig},
		{"lat.other_cores", "other processes' CPU cores busy", kindSig},
	}
}

func crashMetrics() []metricDef {
	return []metricDef{
		{"crash.ran_s", "seconds from started to SIGKILL", kindSig},
		{"crash.finished", "handler runs finished before the kill", kindRate},
		{"crash.jobs_s", "jobs/s before the kill (SADDs included)", kindRate},
		{"crash.inprog", "in-progress entries after the kill", kindRate},
		{"crash.twice", "run twice: started, not acknowledged", kindRate},
		{"crash.fin_unacked", "  of which finished, not acknowledged", kindRate},
		{"crash.started_unfinished", "  of which started, not finished", kindRate},
		{"crash.never_started", "in progress, never started (fetched ahead)", kindRate},
		{"crash.run_window_ms", "ms a handler runs (started, not finished ÷ jobs/s)", kindSig},
		{"crash.fin_window_ms", "ms a finished job waits for its ack (÷ jobs/s)", kindSig},
	}
}

func idleMetrics() []metricDef {
	return []metricDef{
		{"idle.cmds_s", "Redis cmds/s (commandstats calls)", kindSig},
		{"idle.total_s", "Redis total_commands_processed/s", kindSig},
		{"idle.rt_s", "client socket writes/s", kindSig},
		{"idle.redis_cpu", "Redis CPU ms/s", kindSig},
		{"idle.go_cpu", "Go CPU ms/s", kindSig},
		{"idle.other_cores", "other processes' CPU cores busy", kindSig},
	}
}

func metricByKey(ms []metricDef, key string) metricDef {
	for _, m := range ms {
		if m.key == key {
			return m
		}
	}
	return metricDef{key: key, label: key, kind: kindSig}
}

// benchCase is one workload configuration and its results: per column, one metrics map per round.
// The columns are the libraries, or, for a case that compares variants of its own (cols: keyed
// jobs against unkeyed ones, say), those variants.
type benchCase struct {
	id, title, desc string
	rounds          int
	metrics         []metricDef
	summary         []string // metric keys shown in the summary
	run             func(library) (map[string]float64, error)

	// A case of variants: its columns, what runs one, its ratio columns (each the median of the
	// per-cycle ratios of two columns) and its goals. run is not used then.
	cols   []string
	runCol func(col int) (map[string]float64, error)
	ratios []ratioCol
	goals  []goal

	// noSummary: the case's workload has a summary table of its own (longjobs), so the case is in
	// neither the Summary table nor a variants' summary.
	noSummary bool

	vals  [][]map[string]float64 // [column][round]; nil for a failed run
	fails []int                  // [column]
}

// ratioCol is a ratio column of a case of variants: column num over column den.
type ratioCol struct{ num, den int }

// goal is a target on the per-cycle ratio of a metric between two columns of a case of variants,
// or, when abs is set, on the metric of column num itself, round by round.
type goal struct {
	label    string // what it says, e.g. "10 keys: jobs/s ≥ 0.7 × unkeyed"
	key      string // the metric
	num, den int    // the columns (den: not used when abs)
	atMost   bool   // the ratio (or value) must be at most bound (else at least)
	bound    float64
	abs      bool
}

// colNames are the case's column names: its variants', or the libraries'.
func (c *benchCase) colNames(libs []string) []string {
	if c.cols != nil {
		return c.cols
	}
	return libs
}

// ratioSeries are the per-cycle ratios of a metric, column a over column b (cycles where both ran).
func (c *benchCase) ratioSeries(a, b int, key string) []float64 {
	var rs []float64
	n := min(len(c.vals[a]), len(c.vals[b]))
	for i := 0; i < n; i++ {
		x, okX := c.vals[a][i][key]
		y, okY := c.vals[b][i][key]
		if okX && okY && y != 0 {
			rs = append(rs, x/y)
		}
	}
	return rs
}

func (c *benchCase) series(li int, key string) []float64 {
	var xs []float64
	for _, m := range c.vals[li] {
		if v, ok := m[key]; ok {
			xs = append(xs, v)
		}
	}
	return xs
}

// ratio is the median over rounds of library a's value over library b's, pairing the runs of the
// same cycle of rounds.
func (c *benchCase) ratio(a, b int, key string) float64 {
	med, _, _ := summarize(c.ratioSeries(a, b, key))
	return med
}

func (c *benchCase) runs(li int) int {
	n := 0
	for _, m := range c.vals[li] {
		if m != nil {
			n++
		}
	}
	return n
}

func (c *benchCase) median(li int, key string) float64 {
	med, _, _ := summarize(c.series(li, key))
	return med
}

type table struct {
	left   int // columns aligned left (the first one at least)
	title  string
	notes  []string
	header []string
	rows   [][]string
}

func (t table) plain(w io.Writer) {
	widths := make([]int, len(t.header))
	for i, h := range t.header {
		widths[i] = len(h)
	}
	for _, r := range t.rows {
		for i, c := range r {
			widths[i] = max(widths[i], len(c))
		}
	}
	fmt.Fprintln(w, t.title)
	for _, n := range t.notes {
		fmt.Fprintln(w, "  "+n)
	}
	line := func(cells []string) {
		var b strings.Builder
		for i, c := range cells {
			if i < max(1, t.left) {
				b.WriteString("  " + c + strings.Repeat(" ", widths[i]-len(c)))
			} else {
				b.WriteString("  " + strings.Repeat(" ", widths[i]-len(c)) + c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	line(t.header)
	sep := make([]string, len(widths))
	for i, wd := range widths {
		sep[i] = strings.Repeat("-", wd)
	}
	line(sep)
	for _, r := range t.rows {
		line(r)
	}
	fmt.Fprintln(w)
}

func (t table) markdown(w io.Writer) {
	fmt.Fprintf(w, "#### %s\n\n", t.title)
	for _, n := range t.notes {
		fmt.Fprintln(w, n+"  ")
	}
	if len(t.notes) > 0 {
		fmt.Fprintln(w)
	}
	// A | would end the cell; a < would open an HTML tag, as in <ns>:batches.
	esc := func(s string) string { return strings.NewReplacer("|", `\|`, "<", `\<`).Replace(s) }
	cells := make([]string, len(t.header))
	for i, h := range t.header {
		cells[i] = esc(h)
	}
	fmt.Fprintln(w, "| "+strings.Join(cells, " | ")+" |")
	al := make([]string, len(t.header))
	for i := range al {
		al[i] = "---:"
	}
	for i := 0; i < max(1, t.left) && i < len(al); i++ {
		al[i] = "---"
	}
	fmt.Fprintln(w, "|"+strings.Join(al, "|")+"|")
	for _, r := range t.rows {
		for i, c := range r {
			cells[i] = esc(c)
		}
		fmt.Fprintln(w, "| "+strings.Join(cells, " | ")+" |")
	}
	fmt.Fprintln(w)
}

type report struct {
	libs    []string // in the order of the rounds; the first one is the numerator of the ratios
	command string
	env     [][2]string
	ceiling []ceilingRow
	cases   []*benchCase
	soak    *soakRun // the soak workload's run, when it ran
	elapsed time.Duration
	verbose bool

	loadStart, loadEnd string
}

func (r *report) tables() []table {
	var ts []table
	env := table{title: "Environment", left: 2, header: []string{"what", "value"}}
	for _, e := range r.env {
		env.rows = append(env.rows, []string{e[0], e[1]})
	}
	env.rows = append(env.rows, []string{"command", r.command}, []string{"workload time", r.elapsed.Round(time.Second).String()},
		[]string{"load average (1, 5, 15 min) at start", r.loadStart}, []string{"load average at end", r.loadEnd})
	ts = append(ts, env)

	if len(r.ceiling) > 0 {
		ct := table{
			title:  "Redis ceiling (redis-benchmark -t lpush,rpop -n 200000 -q on the same server)",
			notes:  []string{redisBenchmarkVersion()},
			left:   2,
			header: []string{"pipeline", "command", "requests/s", "p50 ms"},
		}
		for _, c := range r.ceiling {
			ct.rows = append(ct.rows, []string{"-P " + strconv.Itoa(c.pipeline), c.command, commas(c.rps), c.p50ms})
		}
		ts = append(ts, ct)
	}

	ratioNames := r.ratioHeaders()
	sumTitle := "Summary (medians)"
	if len(ratioNames) > 0 {
		sumTitle = "Summary (medians; " + strings.Join(ratioNames, ", ") + " = median of the per-cycle ratios)"
	}
	sum := table{
		title:  sumTitle,
		left:   2,
		header: append(append([]string{"workload", "metric"}, r.libs...), ratioNames...),
	}
	for _, c := range r.cases {
		if c.cols != nil || c.noSummary {
			continue // a case of variants, or of longjobs, has a summary of its own
		}
		for _, k := range c.summary {
			md := metricByKey(c.metrics, k)
			row := []string{c.title, strings.TrimSpace(md.label)}
			for li := range r.libs {
				row = append(row, md.format(c.median(li, k)))
			}
			sum.rows = append(sum.rows, append(row, r.ratios(c, k)...))
		}
	}
	if len(sum.rows) > 0 {
		ts = append(ts, sum)
	}
	for _, c := range r.cases {
		if c.cols != nil && !c.noSummary {
			ts = append(ts, c.variantSummary())
			if len(c.goals) > 0 {
				ts = append(ts, c.goalTable())
			}
		}
	}

	if mn := r.manyNamesTable(); mn != nil {
		ts = append(ts, *mn)
	}
	if lt := r.longJobsTable(); lt != nil {
		ts = append(ts, *lt)
	}

	for _, c := range r.cases {
		var runs, fails []string
		failed := false
		header := []string{"metric"}
		cols := c.colNames(r.libs)
		for li, name := range cols {
			runs = append(runs, fmt.Sprintf("%s %d", name, c.runs(li)))
			fails = append(fails, fmt.Sprintf("%s %d", name, c.fails[li]))
			failed = failed || c.fails[li] > 0
			header = append(header, name+" median", name+" min..max")
		}
		t := table{
			title:  c.title,
			notes:  []string{c.desc, "rounds: " + strings.Join(runs, ", ") + " (alternating " + strings.Join(cols, ", ") + "; FLUSHALL before each run)"},
			header: append(header, r.caseRatioHeaders(c)...),
		}
		if failed {
			t.notes = append(t.notes, "FAILED runs: "+strings.Join(fails, ", "))
		}
		for _, md := range c.metrics {
			row := []string{md.label}
			for li := range cols {
				med, lo, hi := summarize(c.series(li, md.key))
				row = append(row, md.format(med), md.format(lo)+".."+md.format(hi))
			}
			t.rows = append(t.rows, append(row, r.caseRatios(c, md.key)...))
		}
		ts = append(ts, t)
		if r.verbose {
			if bt, ok := r.breakdownTable(c, "cmds:", "Redis commands by command (median per job; per second for idle)"); ok {
				ts = append(ts, bt)
			}
			if bt, ok := r.breakdownTable(c, "usec:", "Redis µs by command (commandstats usec, median per job; a script's includes the commands it runs)"); ok {
				ts = append(ts, bt)
			}
			if strings.HasPrefix(c.id, "crash/") {
				ts = append(ts, r.roundsTable(c))
			}
		}
	}
	if r.soak != nil {
		ts = append(ts, r.soak.tables()...)
	}
	return ts
}

// ratioHeaders names the ratio columns: the first library over each of the others.
func (r *report) ratioHeaders() []string {
	if len(r.libs) < 2 {
		return nil
	}
	var hs []string
	for _, name := range r.libs[1:] {
		hs = append(hs, r.libs[0]+"/"+name)
	}
	return hs
}

// ratios are a metric's paired ratios, one per column of ratioHeaders.
func (r *report) ratios(c *benchCase, key string) []string {
	var out []string
	for range r.ratioHeaders() {
		out = append(out, ratioStr(c.ratio(0, len(out)+1, key)))
	}
	return out
}

// caseRatioHeaders names a case's ratio columns: its own for a case of variants, else the
// libraries' (ratioHeaders).
func (r *report) caseRatioHeaders(c *benchCase) []string {
	if c.cols == nil {
		return r.ratioHeaders()
	}
	var hs []string
	for _, rc := range c.ratios {
		hs = append(hs, c.cols[rc.num]+" / "+c.cols[rc.den])
	}
	return hs
}

// caseRatios are a metric's paired ratios, one per column of caseRatioHeaders.
func (r *report) caseRatios(c *benchCase, key string) []string {
	if c.cols == nil {
		return r.ratios(c, key)
	}
	var out []string
	for _, rc := range c.ratios {
		out = append(out, ratioStr(c.ratio(rc.num, rc.den, key)))
	}
	return out
}

// variantSummary is the summary of a case of variants: its summary metrics' medians per variant and
// its ratio columns.
func (c *benchCase) variantSummary() table {
	t := table{
		title:  c.title + ": summary (medians; a / b = median of the per-cycle ratios)",
		header: append([]string{"metric"}, c.cols...),
	}
	for _, rc := range c.ratios {
		t.header = append(t.header, c.cols[rc.num]+" / "+c.cols[rc.den])
	}
	for _, k := range c.summary {
		md := metricByKey(c.metrics, k)
		row := []string{strings.TrimSpace(md.label)}
		for ci := range c.cols {
			row = append(row, md.format(c.median(ci, k)))
		}
		for _, rc := range c.ratios {
			row = append(row, ratioStr(c.ratio(rc.num, rc.den, k)))
		}
		t.rows = append(t.rows, row)
	}
	return t
}

// goalTable lists a case's goals: the median of the per-cycle ratios (or of the values, for an
// absolute goal), their range, and whether the median and the worst cycle meet the goal.
func (c *benchCase) goalTable() table {
	t := table{
		title:  c.title + ": goals (per-cycle ratios or values of one run)",
		left:   1,
		header: []string{"goal", "median", "min..max", "met (median)", "met (every cycle)"},
	}
	for _, g := range c.goals {
		rs, str := c.ratioSeries(g.num, g.den, g.key), ratioStr
		if g.abs {
			rs, str = c.series(g.num, g.key), metricByKey(c.metrics, g.key).format
		}
		med, lo, hi := summarize(rs)
		meets := func(v float64) bool {
			if math.IsNaN(v) {
				return false
			}
			if g.atMost {
				return v <= g.bound
			}
			return v >= g.bound
		}
		worst := lo
		if g.atMost {
			worst = hi
		}
		yes := func(ok bool) string {
			if len(rs) == 0 {
				return "-"
			}
			if ok {
				return "yes"
			}
			return "NO"
		}
		t.rows = append(t.rows, []string{g.label, str(med), str(lo) + ".." + str(hi), yes(meets(med)), yes(meets(worst))})
	}
	return t
}

// roundsTable lists every run of a case, cycle by cycle (shown with -v for the crash workload).
func (r *report) roundsTable(c *benchCase) table {
	t := table{title: c.title + ": every run", header: []string{"round", "library"}}
	cols := c.colNames(r.libs)
	for _, md := range c.metrics {
		t.header = append(t.header, strings.TrimSpace(md.label))
	}
	for round := 0; round < c.rounds; round++ {
		for li, name := range cols {
			if round >= len(c.vals[li]) {
				continue
			}
			row := []string{strconv.Itoa(round + 1), name}
			m := c.vals[li][round]
			for _, md := range c.metrics {
				if m == nil {
					row = append(row, "FAILED")
					continue
				}
				v, ok := m[md.key]
				if !ok {
					v = math.NaN()
				}
				row = append(row, md.format(v))
			}
			t.rows = append(t.rows, row)
		}
	}
	return t
}

// manyNamesTable compares the manynames process rate with burn c=50 for each library.
func (r *report) manyNamesTable() *table {
	var burn, many *benchCase
	for _, c := range r.cases {
		switch c.id {
		case "burn/c50":
			burn = c
		case "manynames":
			many = c
		}
	}
	if many == nil {
		return nil
	}
	t := table{
		title:  "manynames vs burn at concurrency 50 (process jobs/s, ratio of medians)",
		header: []string{"library", "burn c=50", "manynames", "manynames/burn"},
	}
	if burn == nil {
		t.notes = []string{"burn was not run: run -workloads burn,manynames for this ratio"}
	}
	for li, name := range r.libs {
		m := many.median(li, "proc.jobs_s")
		row := []string{name, "-", commas(m), "-"}
		if burn != nil {
			bm := burn.median(li, "proc.jobs_s")
			row[1] = commas(bm)
			row[3] = strconv.FormatFloat(m/bm, 'f', 2, 64)
		}
		t.rows = append(t.rows, row)
	}
	return &t
}

// breakdownTable lists the median per job of the metrics whose keys start with prefix, by phase and
// command (the Redis commands per job, say); false when the case has none.
func (r *report) breakdownTable(c *benchCase, prefix, what string) (table, bool) {
	cols := c.colNames(r.libs)
	t := table{title: c.title + ": " + what, header: append([]string{"phase:command"}, cols...)}
	keys := map[string]bool{}
	for li := range cols {
		for _, m := range c.vals[li] {
			for k := range m {
				if strings.HasPrefix(k, prefix) {
					keys[k] = true
				}
			}
		}
	}
	var ks []string
	for k := range keys {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		row := []string{strings.TrimPrefix(k, prefix)}
		for li := range cols {
			xs := make([]float64, 0, len(c.vals[li]))
			for _, m := range c.vals[li] {
				if m != nil {
					xs = append(xs, m[k]) // absent: 0
				}
			}
			med, _, _ := summarize(xs)
			row = append(row, sig3(med))
		}
		t.rows = append(t.rows, row)
	}
	return t, len(ks) > 0
}

func ratioStr(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return sig3(v)
}

func (r *report) plain(w io.Writer) {
	for _, t := range r.tables() {
		t.plain(w)
	}
}

func (r *report) markdown(w io.Writer) {
	for _, t := range r.tables() {
		t.markdown(w)
	}
}
