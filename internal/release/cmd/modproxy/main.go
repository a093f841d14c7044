// Command modproxy writes every module of this repository, at one version, into a directory that
// GOPROXY=file://DIR serves, so that the modules can be fetched as if that version were tagged:
//
//	go run ./internal/release/cmd/modproxy -version v0.1.0 -out /tmp/proxy
//
// It prints each module written. scripts/release-bump.sh uses it to tidy the nested modules against
// the version it sets.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/workqueue/work/internal/release"
)

func main() {
	repo := flag.String("repo", ".", "repository root (where the root go.mod is)")
	version := flag.String("version", "", "version to give every module, such as v0.1.0 (required)")
	out := flag.String("out", "", "proxy directory to write (required)")
	flag.Parse()
	if *version == "" || *out == "" || flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}
	mods, err := release.BuildProxy(*repo, *out, *version)
	if err != nil {
		fmt.Fprintln(os.Stderr, "modproxy:", err)
		os.Exit(1)
	}
	for _, m := range mods {
		fmt.Printf("%s@%s\t%s\n", m.Path, *version, m.Dir)
	}
}
