// Package examples holds runnable programs; these tests keep the README's copies of them in step and
// run those that need no Redis of their own.
package examples

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	_ "time/tzdata"
)

// Every Go program in the repository's README.md is a copy of a program here, which the build
// compiles and vets; this test keeps the two copies identical. Outside the repository (a copy of
// this module alone) there is no README to compare.
func TestReadmeProgramsAreExamples(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if os.IsNotExist(err) {
		t.Skip("no README.md beside this module")
	}
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllSubmatch(readme, -1)
	programs, err := filepath.Glob(filepath.Join("*", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	sources := make(map[string]string)
	for _, p := range programs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		sources[string(b)] = p
	}
	found := 0
	for _, b := range blocks {
		code := string(b[1])
		if !regexp.MustCompile(`(?m)^package main$`).MatchString(code) {
			continue
		}
		found++
		if _, ok := sources[code]; !ok {
			t.Errorf("a Go program in README.md is not the copy of any examples/*/main.go:\n%s", code)
		}
	}
	if found == 0 {
		t.Error("README.md has no Go program")
	}
}

// The keyed example, on its embedded Redis, finishes the small customers' reports while the big
// customer's backlog has barely started: each of them takes a turn as soon as it has jobs waiting.
func TestKeyedExampleServesSmallCustomersFirst(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "run", "./keyed").CombinedOutput()
	if err != nil {
		t.Fatalf("go run ./keyed: %v\n%s", err, out)
	}
	t.Logf("go run ./keyed:\n%s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 4 || lines[3] != "bigcorp: 100 reports done" {
		t.Fatalf("want a line per small customer, then bigcorp's 100 reports done; got:\n%s", out)
	}
	small := regexp.MustCompile(`^(\w+): +2 reports done \(bigcorp: (\d+) of 100 so far\)$`)
	var customers []string
	for _, line := range lines[:3] {
		m := small.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("%q, want a small customer's 2 reports done", line)
		}
		customers = append(customers, m[1])
		// Fetched in the first turns, they are done long before the backlog; 50 leaves room for a slow
		// machine.
		if n, _ := strconv.Atoi(m[2]); n > 50 {
			t.Errorf("%s's reports were done after %d of bigcorp's", m[1], n)
		}
	}
	sort.Strings(customers)
	if strings.Join(customers, ",") != "ada,bob,cleo" {
		t.Errorf("small customers done: %v, want ada, bob and cleo", customers)
	}
}

// The schedules example, on its embedded Redis, runs each customer's report on the ticks of its
// schedule, each tick once, in the customer's zone, then deletes one customer's schedule.
func TestSchedulesExampleRunsEachTickOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "run", "./schedules").CombinedOutput()
	if err != nil {
		t.Fatalf("go run ./schedules: %v\n%s", err, out)
	}
	t.Logf("go run ./schedules:\n%s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if last := lines[len(lines)-1]; last != "2 schedules left: report:ada, report:cleo" {
		t.Errorf("last line %q, want the two schedules left once bob's is deleted", last)
	}
	zones := map[string]string{"ada": "Europe/Berlin", "bob": "America/New_York", "cleo": "Asia/Tokyo"}
	run := regexp.MustCompile(`^(\w+): +report of the tick at (\d\d:\d\d:\d\d [A-Z+0-9-]+) \(report:(\w+)@(\d+)\)$`)
	ticks := map[string][]int64{}
	for _, line := range lines[:len(lines)-1] {
		m := run.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("%q, want a customer's report of a tick", line)
		}
		customer, local, id := m[1], m[2], m[3]
		tick, _ := strconv.ParseInt(m[4], 10, 64)
		zone, err := time.LoadLocation(zones[customer])
		if err != nil || id != customer {
			t.Fatalf("%q: the job of customer %s came from the schedule of %s (zone: %v)", line, customer, id, err)
		}
		if want := time.Unix(tick, 0).In(zone).Format("15:04:05 MST"); local != want {
			t.Errorf("%q: the tick shows as %s, want %s in %s", line, local, want, zones[customer])
		}
		for _, seen := range ticks[customer] {
			if seen == tick {
				t.Errorf("%s's tick %d ran twice", customer, tick)
			}
		}
		ticks[customer] = append(ticks[customer], tick)
	}
	for customer := range zones {
		if len(ticks[customer]) < 2 {
			t.Errorf("%s's report ran on %d ticks, want at least 2", customer, len(ticks[customer]))
		}
	}
}
