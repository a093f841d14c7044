package main

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// The ideal makespan of each shape: a job per free worker, and a key's jobs one after the other.
func TestLongShapesIdeal(t *testing.T) {
	want := map[string]time.Duration{
		"longjobs/a":    2 * time.Second, // 6 jobs on 8 workers
		"longjobs/b":    2 * time.Second, // 8 jobs on 8 workers
		"longjobs/c":    4 * time.Second, // 4 keys × 4 jobs on 4 workers
		"longjobs/d":    3 * time.Second, // 8 keys × 3 jobs on 8 workers
		"longjobs/e":    2 * time.Second,
		"longjobs/f":    4 * time.Second,
		"longjobs/1ms":  4 * time.Second, // 80,000 jobs on 20 workers
		"longjobs/10ms": 4 * time.Second, // 8,000 jobs on 20 workers
	}
	shapes := longShapes(longConfig{quick: 5000, throughput: 4 * time.Second})
	if len(shapes) != len(want) {
		t.Fatalf("%d shapes, want %d", len(shapes), len(want))
	}
	for _, s := range shapes {
		if got := s.ideal(); got != want[s.id] {
			t.Errorf("%s: ideal %v, want %v", s.id, got, want[s.id])
		}
		if d := s.desc(2 * time.Second); !strings.Contains(d, "ideal "+want[s.id].String()) {
			t.Errorf("%s: the description does not say the ideal: %s", s.id, d)
		}
	}
	// Keys fewer than workers: the keys bound it; more keys than workers: the workers.
	if got := (longShape{pools: 1, workers: 8, jobs: 6, keys: 2, d: time.Second}).ideal(); got != 3*time.Second {
		t.Errorf("2 keys × 3 jobs on 8 workers: ideal %v, want 3s", got)
	}
	if got := (longShape{pools: 1, workers: 2, jobs: 8, keys: 8, d: time.Second}).ideal(); got != 4*time.Second {
		t.Errorf("8 keys × 1 job on 2 workers: ideal %v, want 4s", got)
	}
}

// The summary judges work alone, on the median and on the worst round, and only in the shapes of
// long jobs.
func TestLongJobsTableJudgesWorkAgainstTheGoal(t *testing.T) {
	run := func(ratio float64) map[string]float64 {
		return map[string]float64{"long.ideal_s": 2, "long.makespan_s": 2 * ratio, "long.ratio": ratio, "long.jobs_s": 3 / ratio, "long.busiest": 4}
	}
	tp := map[string]float64{"long.ideal_s": 4, "long.makespan_s": 8, "long.ratio": 2, "long.jobs_s": 10000}
	r := &report{libs: []string{"work", "gocraft"}, cases: []*benchCase{
		{id: "longjobs/a", title: "longjobs: a", vals: [][]map[string]float64{
			{run(1.01), run(1.02), run(1.3)},
			{run(3), run(3.1), run(3.2)},
		}},
		{id: "longjobs/1ms", title: "longjobs: 1ms", vals: [][]map[string]float64{{tp}, {tp}}},
		{id: "burn/c10", title: "burn c=10", vals: [][]map[string]float64{{{"proc.jobs_s": 1}}, {{"proc.jobs_s": 1}}}},
	}}
	lt := r.longJobsTable()
	if lt == nil {
		t.Fatal("no longjobs table")
	}
	var got [][]string
	for _, row := range lt.rows {
		got = append(got, []string{row[0], row[1], row[5], row[6], row[9]})
	}
	want := [][]string{
		{"a", "work", "1.02", "1.01..1.30", "yes / NO"},
		{"a", "gocraft", "3.10", "3.00..3.20", "-"},
		{"1ms", "work", "2.00", "2.00..2.00", "-"},
		{"1ms", "gocraft", "2.00", "2.00..2.00", "-"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("rows %q, want %q", got, want)
	}
}

func TestLongConfigSelectsShapesByName(t *testing.T) {
	c := longConfig{quick: 10, throughput: time.Second, shapes: "c, 1ms"}
	if err := c.check(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range longShapes(c) {
		if c.selected(s) {
			got = append(got, s.id)
		}
	}
	if want := []string{"longjobs/c", "longjobs/1ms"}; !reflect.DeepEqual(got, want) {
		t.Errorf("selected %q, want %q", got, want)
	}
	c.shapes = ""
	if !c.selected(longShapes(c)[0]) {
		t.Error("no -longjobs-shapes: the first shape is not selected")
	}
	for _, bad := range []longConfig{{quick: 10, throughput: time.Second, shapes: "a,z"}, {quick: 0, throughput: time.Second}, {quick: 10, throughput: time.Millisecond}} {
		if err := bad.check(); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}
