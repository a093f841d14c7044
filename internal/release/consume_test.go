package release

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// rootModule is the path of the library's module, which every other module of the repository
// requires at the version under test.
const rootModule = "github.com/workqueue/work"

// repoRoot is the repository root, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.work")); err != nil {
		t.Fatalf("no go.work at the repository root %s: %v", root, err)
	}
	return root
}

// candidate is the version the modules are to be released at: the one the go.work maps to the
// checkout, which every module requiring the root module must require.
func candidate(t *testing.T, root string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "go.work"))
	if err != nil {
		t.Fatal(err)
	}
	wf, err := modfile.ParseWork("go.work", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The root module, and each nested module that another one requires (pgwork, which the
	// examples require), are mapped at the candidate to their directory: a workspace still reads
	// the go.mod of the version a module is required at.
	var version string
	nested := map[string]string{}
	for _, r := range wf.Replace {
		switch {
		case r.Old.Path == rootModule:
			if r.Old.Version == "" || r.New.Path != "./" && r.New.Path != "." {
				t.Errorf("go.work: replace %s %s => %s: want %s vX.Y.Z => ./", r.Old.Path, r.Old.Version, r.New.Path, rootModule)
				continue
			}
			version = r.Old.Version
		case strings.HasPrefix(r.Old.Path, rootModule+"/"):
			dir := "./" + strings.TrimPrefix(r.Old.Path, rootModule+"/")
			if r.Old.Version == "" || r.New.Path != dir {
				t.Errorf("go.work: replace %s %s => %s: want %s vX.Y.Z => %s", r.Old.Path, r.Old.Version, r.New.Path, r.Old.Path, dir)
				continue
			}
			nested[r.Old.Path] = r.Old.Version
		default:
			t.Errorf("go.work replaces %s: only this repository's modules, at the version the modules require, belong there", r.Old.Path)
		}
	}
	if version == "" {
		t.Fatalf("go.work maps no version of %s to the checkout (replace %s vX.Y.Z => ./)", rootModule, rootModule)
	}
	for p, v := range nested {
		if v != version {
			t.Errorf("go.work: replace %s %s: want the candidate %s, as for %s", p, v, version, rootModule)
		}
	}
	return version
}

// TestModuleFiles checks every go.mod of the repository: no replace directive (one would be
// ignored where the module is used as a dependency), each module in the go.work, and every
// requirement on a module of this repository at the candidate version.
func TestModuleFiles(t *testing.T) {
	root := repoRoot(t)
	version := candidate(t, root)
	mods, err := Modules(root)
	if err != nil {
		t.Fatal(err)
	}
	ours := map[string]bool{}
	for _, m := range mods {
		ours[m.Path] = true
	}
	data, err := os.ReadFile(filepath.Join(root, "go.work"))
	if err != nil {
		t.Fatal(err)
	}
	wf, err := modfile.ParseWork("go.work", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, u := range wf.Use {
		used[filepath.ToSlash(filepath.Clean(u.Path))] = true
	}
	for _, m := range mods {
		name := filepath.Join(m.Dir, "go.mod")
		data, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		f, err := modfile.Parse(name, data, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range f.Replace {
			t.Errorf("%s: replace %s => %s: a replace directive only applies where the module is the main module; the go.work covers development", name, r.Old.Path, r.New.Path)
		}
		for _, r := range f.Require {
			if ours[r.Mod.Path] && r.Mod.Version != version {
				t.Errorf("%s requires %s %s, want the candidate %s (scripts/release-bump.sh sets it)", name, r.Mod.Path, r.Mod.Version, version)
			}
		}
		if !used[m.Dir] {
			t.Errorf("go.work does not use %s (go work use ./%s)", m.Dir, m.Dir)
		}
	}
	if t.Failed() {
		return
	}
	var names []string
	for _, m := range mods {
		names = append(names, m.Path)
	}
	t.Logf("%d modules, candidate %s: %s", len(mods), version, strings.Join(names, " "))
}

// goEnv is what the go commands of these tests run with: no workspace, modules fetched first from
// the proxy directory built from this checkout, then from the local module cache and the proxies
// set in the environment; the checksum database skips this repository's modules only.
type goEnv struct {
	proxy, modcache, bin string
}

func newGoEnv(t *testing.T, root, version string) *goEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("builds programs from a module proxy: skipped with -short")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	tmp := t.TempDir()
	e := &goEnv{proxy: filepath.Join(tmp, "proxy"), modcache: filepath.Join(tmp, "modcache"), bin: filepath.Join(tmp, "bin")}
	if _, err := BuildProxy(root, e.proxy, version); err != nil {
		t.Fatal(err)
	}
	return e
}

func goEnvValue(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

func (e *goEnv) environ(t *testing.T) []string {
	t.Helper()
	proxies := []string{"file://" + filepath.ToSlash(e.proxy)}
	// The modules already downloaded on this machine, served from the local cache's download
	// directory (a valid proxy), spare the network most fetches. The module cache of these tests is
	// a fresh one: versions of this repository's modules built from the work tree must never land
	// in the machine's cache, where they would stand for a tagged version.
	if mc := goEnvValue(t, "GOMODCACHE"); mc != "" {
		if _, err := os.Stat(filepath.Join(mc, "cache", "download")); err == nil {
			proxies = append(proxies, "file://"+filepath.ToSlash(filepath.Join(mc, "cache", "download")))
		}
	}
	if p := goEnvValue(t, "GOPROXY"); p != "" {
		proxies = append(proxies, p)
	}
	nosumdb := rootModule
	if v := goEnvValue(t, "GONOSUMDB"); v != "" {
		nosumdb = v + "," + nosumdb
	}
	// -trimpath keeps the module cache's location out of the build cache's keys: the next run, with
	// another temporary module cache, reuses what this one compiled.
	flags := strings.TrimSpace(goEnvValue(t, "GOFLAGS") + " -mod=mod -modcacherw -trimpath")
	return append(os.Environ(),
		"GOWORK=off",
		"GOFLAGS="+flags,
		"GOPROXY="+strings.Join(proxies, ","),
		"GONOSUMDB="+nosumdb,
		"GOMODCACHE="+e.modcache,
		"GOBIN="+e.bin,
		"GIT_TERMINAL_PROMPT=0",
	)
}

// run runs the go command in dir and returns its standard output; it fails the test on an error.
func (e *goEnv) run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = e.environ(t)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go %s (in %s): %v\n%s%s", strings.Join(args, " "), dir, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// consumer writes a program in a module of its own that imports the given packages.
func consumer(t *testing.T, imports ...string) string {
	t.Helper()
	dir := t.TempDir()
	var src strings.Builder
	src.WriteString("// Command consumer only imports packages, as a user's program would.\npackage main\n\nimport (\n")
	for _, p := range imports {
		src.WriteString("\t_ \"" + p + "\"\n")
	}
	src.WriteString(")\n\nfunc main() {}\n")
	files := map[string]string{
		"go.mod":  "module example.com/consumer\n\ngo 1.22\n",
		"main.go": src.String(),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestConsume fetches the modules as a user's project does, at the candidate version, from a proxy
// built from this checkout: the core with goredis, otelwork, metrics/prometheus and pgwork, the core alone
// (whose module graph must hold none of what the other modules, the programs, the demo or the
// browser test need), and the command-line programs with go install.
func TestConsume(t *testing.T) {
	root := repoRoot(t)
	version := candidate(t, root)
	e := newGoEnv(t, root, version)

	t.Run("core-and-integrations", func(t *testing.T) {
		dir := consumer(t, rootModule, rootModule+"/goredis", rootModule+"/otelwork", rootModule+"/metrics/prometheus", rootModule+"/pgwork")
		e.run(t, dir, "get",
			rootModule+"@"+version, rootModule+"/goredis@"+version,
			rootModule+"/otelwork@"+version, rootModule+"/metrics/prometheus@"+version, rootModule+"/pgwork@"+version)
		e.run(t, dir, "build", "-o", filepath.Join(t.TempDir(), "consumer"), ".")
	})

	t.Run("core-only", func(t *testing.T) {
		dir := consumer(t, rootModule, rootModule+"/webui", rootModule+"/worktest")
		e.run(t, dir, "get", rootModule+"@"+version)
		e.run(t, dir, "build", "-o", filepath.Join(t.TempDir(), "consumer"), ".")
		graph := e.run(t, dir, "mod", "graph")
		mods := map[string]bool{}
		for _, line := range strings.Split(graph, "\n") {
			for _, f := range strings.Fields(line) {
				mods[strings.SplitN(f, "@", 2)[0]] = true
			}
		}
		var all []string
		for m := range mods {
			all = append(all, m)
		}
		sort.Strings(all)
		t.Logf("module graph of a program importing only the core: %s", strings.Join(all, " "))
		for _, banned := range []string{
			"github.com/chromedp/", "github.com/spf13/cobra", "github.com/alicebob/miniredis",
			"github.com/prometheus/", "go.opentelemetry.io/", "github.com/redis/go-redis", "github.com/hibiken/asynq",
			"github.com/jackc/",
		} {
			for _, m := range all {
				if strings.HasPrefix(m, banned) {
					t.Errorf("the module graph of a program importing only %s holds %s", rootModule, m)
				}
			}
		}
		for _, m := range all {
			if m != rootModule && strings.HasPrefix(m, rootModule+"/") {
				t.Errorf("the module graph of a program importing only %s holds %s", rootModule, m)
			}
		}
	})

	t.Run("install-programs", func(t *testing.T) {
		dir := t.TempDir()
		for _, p := range []string{"work", "workenqueue", "workwebui"} {
			e.run(t, dir, "install", rootModule+"/cmd/"+p+"@"+version)
		}
		out, err := exec.Command(filepath.Join(e.bin, "work"), "--help").CombinedOutput()
		if err != nil {
			t.Fatalf("work --help: %v\n%s", err, out)
		}
	})
}

// TestModulesTidy checks that `go mod tidy` outside the workspace, against the candidate version
// of this repository's modules, changes no go.mod: inside the workspace a missing requirement can
// go unnoticed, since another module's requirements supply it. The go.sum hashes of this
// repository's own modules are left out of the comparison: scripts/release-bump.sh writes them for
// the tree it is run on, which the work tree no longer is after the next change.
func TestModulesTidy(t *testing.T) {
	root := repoRoot(t)
	version := candidate(t, root)
	e := newGoEnv(t, root, version)
	mods, err := Modules(root)
	if err != nil {
		t.Fatal(err)
	}
	ours := func(line string) bool {
		return strings.HasPrefix(line, rootModule+" ") || strings.HasPrefix(line, rootModule+"/")
	}
	sums := func(data []byte) string {
		var keep []string
		for _, l := range strings.Split(string(data), "\n") {
			if l != "" && !ours(l) {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	for _, m := range mods {
		t.Run(m.Dir, func(t *testing.T) {
			// The module as the proxy serves it, in a directory of its own.
			dir := filepath.Join(t.TempDir(), "m")
			escPath, err := module.EscapePath(m.Path)
			if err != nil {
				t.Fatal(err)
			}
			zipFile := filepath.Join(e.proxy, filepath.FromSlash(escPath), "@v", version+".zip")
			if err := modzip.Unzip(dir, module.Version{Path: m.Path, Version: version}, zipFile); err != nil {
				t.Fatal(err)
			}
			oldMod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
			if err != nil {
				t.Fatal(err)
			}
			oldSum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			os.Chmod(filepath.Join(dir, "go.mod"), 0o644) // the zip's files come out read-only
			os.Remove(filepath.Join(dir, "go.sum"))
			if err := os.WriteFile(filepath.Join(dir, "go.sum"), []byte(sums(oldSum)+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			e.run(t, dir, "mod", "tidy")
			newMod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
			if err != nil {
				t.Fatal(err)
			}
			newSum, _ := os.ReadFile(filepath.Join(dir, "go.sum"))
			if !bytes.Equal(oldMod, newMod) {
				t.Errorf("%s/go.mod is not tidy; go mod tidy makes it:\n%s", m.Dir, newMod)
			}
			if sums(oldSum) != sums(newSum) {
				t.Errorf("%s/go.sum is not tidy; go mod tidy makes it:\n%s", m.Dir, newSum)
			}
		})
	}
}
