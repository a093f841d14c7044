package pgtest

import (
	"context"
	"strings"
	"testing"
)

func TestDB(t *testing.T) {
	pool, dsn := DB(t)
	var db string
	if err := pool.QueryRow(context.Background(), "SELECT current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	if db == "postgres" || !strings.Contains(dsn, "/"+db) {
		t.Errorf("database %s, DSN %s: want a database of the test's own, named in the DSN", db, dsn)
	}
}

func TestWithDatabase(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"postgres://u@127.0.0.1:5432/postgres?sslmode=disable", "postgres://u@127.0.0.1:5432/d1?sslmode=disable"},
		{"postgresql://u@h/", "postgresql://u@h/d1"},
		{"host=h user=u", "host=h user=u dbname=d1"},
	} {
		got, err := withDatabase(c.in, "d1")
		if err != nil || got != c.want {
			t.Errorf("withDatabase(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}
