package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"sync"
)

// startProfile starts a Go CPU profile of the harness process (the consumer, in every workload that
// profiles) when -profile names a directory, in <dir>/<case>-<column>-r<round>.pprof (the column:
// the library, or the variant of a workload that compares variants), and returns the function that
// stops it (safe to call more than once).
func (b *bench) startProfile() func() {
	if b.profileDir == "" {
		return func() {}
	}
	name := fmt.Sprintf("%s-%s-r%d.pprof", strings.ReplaceAll(b.cur.caseID, "/", "-"), fileSafe(b.cur.col), b.cur.round)
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
	tf := b.startTrace(strings.TrimSuffix(f.Name(), ".pprof") + ".trace")
	var once sync.Once
	return func() {
		once.Do(func() {
			if tf != nil {
				trace.Stop()
				if err := tf.Close(); err != nil {
					progress("trace: %v", err)
				}
			}
			pprof.StopCPUProfile()
			if err := f.Close(); err != nil {
				progress("profile: %v", err)
			}
		})
	}
}

// startTrace starts an execution trace into name when -trace asks for one, and returns its file (nil
// when none runs). A trace shows what a CPU profile cannot: how often goroutines block and are woken,
// and by whom (go tool trace).
func (b *bench) startTrace(name string) *os.File {
	if !b.trace {
		return nil
	}
	tf, err := os.Create(name)
	if err != nil {
		progress("trace: %v", err)
		return nil
	}
	if err := trace.Start(tf); err != nil {
		progress("trace: %v", err)
		tf.Close()
		os.Remove(name)
		return nil
	}
	return tf
}

// fileSafe turns a column's name into a part of a file name: runs of anything but letters, digits,
// '.' and '-' become one '-'.
func fileSafe(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range s {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-') {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.Trim(b.String(), "-")
}
