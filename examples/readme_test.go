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
