package main

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseRatesReadsAListOfPositiveRates(t *testing.T) {
	got, err := parseRates(" 2000, 15000 ")
	if err != nil || !reflect.DeepEqual(got, []int{2000, 15000}) {
		t.Fatalf("parseRates = %v, %v; want [2000 15000]", got, err)
	}
	for _, bad := range []string{"", "0", "1000,-5", "1000,,2000", "fast"} {
		if got, err := parseRates(bad); err == nil {
			t.Errorf("parseRates(%q) = %v, want an error", bad, got)
		}
	}
}

// A cell such as "<ns>:batches" must not read as an HTML tag, nor a | end the cell.
func TestMarkdownEscapesWhatWouldBreakACell(t *testing.T) {
	var b strings.Builder
	table{title: "t", header: []string{"series", "n"}, rows: [][]string{{"<ns>:batches | index", "1"}}}.markdown(&b)
	if want := `| \<ns>:batches \| index | 1 |`; !strings.Contains(b.String(), want) {
		t.Fatalf("markdown:\n%s\nwant a row %s", b.String(), want)
	}
}

// A goal is met by the median of the per-cycle ratios, and by every cycle when the worst one meets
// it too.
func TestGoalTableJudgesTheMedianAndTheWorstCycle(t *testing.T) {
	c := &benchCase{
		title: "t",
		cols:  []string{"keyed", "alone"},
		vals: [][]map[string]float64{
			{{"ms": 30}, {"ms": 30}, {"ms": 50}},
			{{"ms": 20}, {"ms": 20}, {"ms": 20}},
		},
		goals: []goal{
			{label: "within 2x", key: "ms", num: 0, den: 1, atMost: true, bound: 2},
			{label: "at least 1.4x", key: "ms", num: 0, den: 1, bound: 1.4},
			{label: "no data", key: "other", num: 0, den: 1, bound: 1},
		},
	}
	got := c.goalTable().rows
	want := [][]string{
		{"within 2x", "1.50", "1.50..2.50", "yes", "NO"},
		{"at least 1.4x", "1.50", "1.50..2.50", "yes", "yes"},
		{"no data", "-", "-..-", "-", "-"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("goal rows:\n%q\nwant\n%q", got, want)
	}
}

func TestFileSafeNamesAVariantForAProfile(t *testing.T) {
	for in, want := range map[string]string{"work": "work", "100,000 keys": "100-000-keys", "10,000 keys, KC 1": "10-000-keys-KC-1", "work FIFO": "work-FIFO"} {
		if got := fileSafe(in); got != want {
			t.Errorf("fileSafe(%q) = %q, want %q", in, got, want)
		}
	}
}

// An absolute goal judges a column's own values, round by round, in the metric's format.
func TestGoalTableJudgesAnAbsoluteGoalOnTheValues(t *testing.T) {
	c := &benchCase{
		title:   "t",
		cols:    []string{"large", "small"},
		metrics: []metricDef{{"bytes", "bytes", kindBytes}},
		vals: [][]map[string]float64{
			{{"bytes": 240}, {"bytes": 230}, {"bytes": 260}},
			{{"bytes": 1}, {"bytes": 1}, {"bytes": 1}},
		},
		goals: []goal{{label: "at most 250 bytes", key: "bytes", num: 0, atMost: true, bound: 250, abs: true}},
	}
	got := c.goalTable().rows
	want := [][]string{{"at most 250 bytes", "240", "230..260", "yes", "NO"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("goal rows:\n%q\nwant\n%q", got, want)
	}
}
