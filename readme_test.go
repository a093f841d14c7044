package work_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// Every Go program in README.md is a copy of a program under examples/, which the build compiles and
// vets; this test keeps the two copies identical.
func TestReadmeProgramsAreExamples(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllSubmatch(readme, -1)
	programs, err := filepath.Glob(filepath.Join("examples", "*", "main.go"))
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
