// Package release builds, from a checkout of this repository, a module proxy in a directory: every
// module of the repository at one version, in the layout that GOPROXY=file://DIR reads. With it the
// modules can be fetched as a user's project would fetch them once tagged, before any tag exists:
// the consumption test does so, and scripts/release-bump.sh tidies the nested modules against the
// version about to be tagged.
//
// The module zips hold what the go command would put in them when fetching the tagged commit: the
// files git tracks (plus new files git does not ignore, so that a change not yet committed is
// tested too), less what a module zip leaves out (nested modules, vendor directories, irregular
// files), and, for a module in a subdirectory without a LICENSE, the repository's LICENSE.
package release

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	modzip "golang.org/x/mod/zip"
)

// Module is one module of the repository.
type Module struct {
	Path string // module path, from its go.mod
	Dir  string // directory relative to the repository root, with slashes; "." for the root
}

// Modules lists the modules of the repository at root: every go.mod among its files, outside
// testdata directories. The root module comes first, the others in the order of their directories.
func Modules(root string) ([]Module, error) {
	files, err := repoFiles(root)
	if err != nil {
		return nil, err
	}
	var mods []Module
	for _, f := range files {
		if path.Base(f) != "go.mod" || inTestdata(f) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			return nil, err
		}
		p := modfile.ModulePath(data)
		if p == "" {
			return nil, fmt.Errorf("%s: no module path", f)
		}
		mods = append(mods, Module{Path: p, Dir: path.Dir(f)})
	}
	sort.Slice(mods, func(i, j int) bool {
		if (mods[i].Dir == ".") != (mods[j].Dir == ".") {
			return mods[i].Dir == "."
		}
		return mods[i].Dir < mods[j].Dir
	})
	if len(mods) == 0 || mods[0].Dir != "." {
		return nil, fmt.Errorf("%s: no go.mod at the root", root)
	}
	return mods, nil
}

// BuildProxy writes every module of the repository at root, at the given version, into the
// module proxy directory out (created if missing; a version already there is replaced, and the
// version is added to each module's list). It returns the modules it wrote.
func BuildProxy(root, out, version string) ([]Module, error) {
	if !semver.IsValid(version) || semver.Canonical(version) != version {
		return nil, fmt.Errorf("version %q is not a canonical semantic version such as v0.1.0", version)
	}
	files, err := repoFiles(root)
	if err != nil {
		return nil, err
	}
	mods, err := Modules(root)
	if err != nil {
		return nil, err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return nil, err
	}
	for _, m := range mods {
		mv := module.Version{Path: m.Path, Version: version}
		if err := module.Check(m.Path, version); err != nil {
			return nil, err
		}
		escPath, err := module.EscapePath(m.Path)
		if err != nil {
			return nil, err
		}
		escVersion, err := module.EscapeVersion(version)
		if err != nil {
			return nil, err
		}
		dir := filepath.Join(out, filepath.FromSlash(escPath), "@v")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		base := filepath.Join(dir, escVersion)

		gomod, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(m.Dir), "go.mod"))
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(base+".mod", gomod, 0o644); err != nil {
			return nil, err
		}
		var zbuf bytes.Buffer
		if err := modzip.Create(&zbuf, mv, moduleFiles(root, m.Dir, files)); err != nil {
			return nil, fmt.Errorf("zipping %s: %w", m.Path, err)
		}
		if err := os.WriteFile(base+".zip", zbuf.Bytes(), 0o644); err != nil {
			return nil, err
		}
		if err := os.WriteFile(base+".info", info, 0o644); err != nil {
			return nil, err
		}
		if err := addToList(filepath.Join(dir, "list"), version); err != nil {
			return nil, err
		}
	}
	return mods, nil
}

// addToList adds version to a proxy's @v/list file unless it is there.
func addToList(list, version string) error {
	old, err := os.ReadFile(list)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, v := range strings.Fields(string(old)) {
		if v == version {
			return nil
		}
	}
	return os.WriteFile(list, append(old, version+"\n"...), 0o644)
}

// moduleFiles returns the files of the module in directory dir (relative to root), from the
// repository's file list. The zip writer drops those that belong in no module zip.
func moduleFiles(root, dir string, files []string) []modzip.File {
	prefix := dir + "/"
	if dir == "." {
		prefix = ""
	}
	var out []modzip.File
	hasLicense := false
	for _, f := range files {
		if !strings.HasPrefix(f, prefix) {
			continue
		}
		rel := strings.TrimPrefix(f, prefix)
		if rel == "LICENSE" {
			hasLicense = true
		}
		out = append(out, diskFile{zipPath: rel, disk: filepath.Join(root, filepath.FromSlash(f))})
	}
	// As the go command does when it fetches a module that lies in a subdirectory of its
	// repository: the repository's LICENSE goes in when the module has none of its own.
	if dir != "." && !hasLicense {
		lic := filepath.Join(root, "LICENSE")
		if fi, err := os.Lstat(lic); err == nil && fi.Mode().IsRegular() {
			out = append(out, diskFile{zipPath: "LICENSE", disk: lic})
		}
	}
	return out
}

type diskFile struct {
	zipPath string // path in the zip, relative to the module root
	disk    string
}

func (f diskFile) Path() string                 { return f.zipPath }
func (f diskFile) Lstat() (fs.FileInfo, error)  { return os.Lstat(f.disk) }
func (f diskFile) Open() (io.ReadCloser, error) { return os.Open(f.disk) }

// repoFiles lists the files of the repository at root, relative to it, with slashes: what git
// tracks and what it would add (not ignored), less what is deleted from the work tree. Outside a
// git work tree, every file below root but those under .git.
func repoFiles(root string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if _, statErr := os.Stat(filepath.Join(root, ".git")); statErr == nil {
			return nil, fmt.Errorf("git ls-files in %s: %v: %s", root, err, stderr.String())
		}
		return walkFiles(root)
	}
	seen := map[string]bool{}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f == "" || seen[f] {
			continue
		}
		seen[f] = true
		if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(f))); err != nil {
			continue // deleted, not yet committed
		}
		files = append(files, f)
	}
	sort.Strings(files)
	return files, nil
}

func walkFiles(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	return files, err
}

func inTestdata(f string) bool {
	for _, el := range strings.Split(path.Dir(f), "/") {
		if el == "testdata" {
			return true
		}
	}
	return false
}
