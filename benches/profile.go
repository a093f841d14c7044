package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
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
