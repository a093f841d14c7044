package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
)

// startProfile starts a Go CPU profile of the harness process (the consumer, in the burn and latency
// workloads) when -profile names a directory, in <dir>/<case>-<library>-r<round>.pprof, and returns
// the function that stops it (safe to call more than once).
func (b *bench) startProfile(l library) func() {
	if b.profileDir == "" {
		return func() {}
	}
	name := fmt.Sprintf("%s-%s-r%d.pprof", strings.ReplaceAll(b.cur.caseID, "/", "-"), l.name(), b.cur.round)
	f, err := os.Create(filepath.Join(b.profileDir, name))
	if err != nil {
		progress("profile: %v", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		progress("profile: %v", err)
		f.Close()
		os.Remove(f.Name())
		return func() {}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			if err := f.Close(); err != nil {
				progress("profile: %v", err)
			}
		})
	}
}
