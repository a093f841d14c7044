// Package examples holds runnable programs; this test keeps the README's copies of them in step.
package examples

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
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
