package work

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestOnlyTheStoreKnowsRedis keeps the boundary of internal/rdb: no library file of the root package
// builds a key, sends a command or subscribes. It fails on a file that uses redigo for anything but
// the *redis.Pool of the public constructors, reaches the store's keyspace or its Backend, or holds
// a string that names part of the layout's keys.
func TestOnlyTheStoreKnowsRedis(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	// Pieces of the documented key layout (docs/redis-layout.md): a library file that spells one is
	// building a key.
	layout := []string{"jobs:", ":inprogress", ":paused", ":lock", "max_concurrency", "unique:",
		"worker_pools", "known_jobs", "last_periodic_enqueue", "dead_trimmed", "batches_expiry",
		"batch:", "job:", "keyed:", "schedules:", "stats:", "wake", "worker:"}
	// Selectors that reach past the store's named operations.
	forbidden := map[string]bool{"Ks": true, "Keyspace": true, "NewKeyspace": true, "Backend": true,
		"Conn": true, "Subscribe": true, "Do": true, "Send": true}
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		redigo := ""
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "github.com/gomodule/redigo/redis" {
				redigo = "redis"
				if imp.Name != nil {
					redigo = imp.Name.Name
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Field:
				n.Tag = nil // a struct tag names a JSON field, not a key
				return true
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && redigo != "" && x.Name == redigo && n.Sel.Name != "Pool" {
					t.Errorf("%s: uses redigo's %s: only internal/rdb talks to Redis", fset.Position(n.Pos()), n.Sel.Name)
				}
				if forbidden[n.Sel.Name] && !(file == "redis.go" && n.Sel.Name == "Backend") {
					t.Errorf("%s: reaches the store's %s: call a named operation of rdb.Store", fset.Position(n.Pos()), n.Sel.Name)
				}
			case *ast.BasicLit:
				if n.Kind != token.STRING {
					return true
				}
				s, _ := strconv.Unquote(n.Value)
				for _, piece := range layout {
					if strings.Contains(s, piece) && !strings.HasPrefix(s, "work: ") {
						t.Errorf("%s: the string %q spells the key layout's %q: only internal/rdb builds keys",
							fset.Position(n.Pos()), s, piece)
					}
				}
			}
			return true
		})
	}
	// And the store's own files are where the layout lives: a sanity check that the test looks at the
	// right thing.
	if _, err := os.Stat(filepath.Join("internal", "rdb", "store.go")); err != nil {
		t.Fatal(err)
	}
}
