package release

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// miniredisReleases are the miniredis releases the gocraft/work API is checked on, with the newer
// features each must refuse with an error naming what it lacks: v2.14.0, the oldest a program moving
// from gocraft/work is taken to hold (it hands status replies to Lua as plain strings and the errors
// of redis.pcall as nil, and lacks ZMSCORE and ZADD's LT), and the newest. The releases between
// differ from these in commands the gocraft/work API does not use.
var miniredisReleases = []struct {
	version string
	refused []string
}{
	{"v2.14.0", []string{"keyed jobs", "schedules"}},
	{"v2.40.0", nil},
}

// TestOlderMiniredis builds testdata/miniredis (gocraft/work's API, run against a miniredis started
// in the program: plain, scheduled and unique jobs, a retry, the dead set, a periodic job, a paused
// queue) in a module of its own that pins each miniredis release, and runs it. miniredis stays out
// of the library's own modules: only these programs require it.
func TestOlderMiniredis(t *testing.T) {
	root := repoRoot(t)
	version := candidate(t, root)
	e := newGoEnv(t, root, version)
	src, err := os.ReadFile(filepath.Join("testdata", "miniredis", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, mr := range miniredisReleases {
		release := mr.version
		t.Run(release, func(t *testing.T) {
			t.Parallel() // each program runs its own server
			gomod := "module example.com/miniredis\n\ngo 1.22\n\nrequire (\n" +
				"\t" + rootModule + " " + version + "\n" +
				"\tgithub.com/alicebob/miniredis/v2 " + release + "\n)\n"
			bin := e.buildPinned(t, gomod, src, "github.com/alicebob/miniredis/v2", release)
			cmd := exec.Command(bin)
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			want := ""
			for _, f := range mr.refused {
				want += "refused: " + f + "\n"
			}
			if err != nil || stdout.String() != want+"ok\n" {
				t.Fatalf("on miniredis %s, the program failed: %v\nits output:\n%s\nwant:\n%sok\nits log:\n%s", release, err, stdout.String(), want, stderr.String())
			}
		})
	}
}
