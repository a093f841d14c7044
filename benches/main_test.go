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
