package main

import (
	"reflect"
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
