package release

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// redigoReleases are the redigo versions a program moving from gocraft/work may hold:
// v2.0.0+incompatible, the tag gocraft/work's own go.mod names and the one `go get` chose for
// years (minimal version selection ranks it above every v1 release, so the library is then built
// against it), v1.8.0, the first release with a go.mod, and every later v1.8 and v1.9 release that
// is not retracted.
var redigoReleases = []string{
	"v2.0.0+incompatible",
	"v1.8.0", "v1.8.2", "v1.8.3", "v1.8.4", "v1.8.5", "v1.8.8", "v1.8.9",
	"v1.9.2", "v1.9.3",
}

// TestOlderRedigo builds testdata/redigo (a small gocraft/work-style program: middleware, a
// context struct, plain, unique and scheduled jobs, a job registered after Start, the Client and
// the web UI) in a module of its own that pins each redigo release, and runs it against the test
// Redis. A v1 release below the library's own requirement is pinned with a replace directive, as a
// program that must stay on it would; v2.0.0+incompatible needs none.
func TestOlderRedigo(t *testing.T) {
	addr := os.Getenv("WORK_TEST_REDIS")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	if c, err := net.DialTimeout("tcp", addr, 2*time.Second); err != nil {
		t.Fatalf("no Redis at %s (WORK_TEST_REDIS): %v", addr, err)
	} else {
		c.Close()
	}
	root := repoRoot(t)
	version := candidate(t, root)
	e := newGoEnv(t, root, version)
	src, err := os.ReadFile(filepath.Join("testdata", "redigo", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, redigo := range redigoReleases {
		t.Run(redigo, func(t *testing.T) {
			t.Parallel() // each program runs in a namespace of its own
			gomod := "module example.com/redigo\n\ngo 1.22\n\nrequire (\n" +
				"\t" + rootModule + " " + version + "\n" +
				"\tgithub.com/gomodule/redigo " + redigo + "\n)\n"
			if !strings.HasPrefix(redigo, "v2.") {
				gomod += "\nreplace github.com/gomodule/redigo => github.com/gomodule/redigo " + redigo + "\n"
			}
			bin := e.buildPinned(t, gomod, src, "github.com/gomodule/redigo", redigo)
			out, err := exec.Command(bin, addr).CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != "ok" {
				t.Fatalf("built against redigo %s, the program failed: %v\n%s", redigo, err, out)
			}
		})
	}
}

// buildPinned writes a program (main.go, and gomod as its go.mod) in a module of its own, tidies it,
// checks that its build list holds module at version (as a replacement, if one is given), builds it
// and returns the binary's path.
func (e *goEnv) buildPinned(t *testing.T, gomod string, src []byte, module, version string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string][]byte{"go.mod": []byte(gomod), "main.go": src} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e.run(t, dir, "mod", "tidy")
	got := strings.TrimSpace(e.run(t, dir, "list", "-m", "-f", "{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}", module))
	if got != version {
		t.Fatalf("the program's build list holds %s %s, want %s", module, got, version)
	}
	bin := filepath.Join(t.TempDir(), "program")
	e.run(t, dir, "build", "-o", bin, ".")
	return bin
}
