// Package pgtest gives pgwork's tests a PostgreSQL database of their own on the test server whose
// DSN is in WORK_TEST_POSTGRES (scripts/test.sh starts one and exports it).
package pgtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Env is the variable that holds the test server's DSN.
const Env = "WORK_TEST_POSTGRES"

var dbCounter atomic.Int64

// DefaultDSN is the server examples use when WORK_TEST_POSTGRES is not set.
const DefaultDSN = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// DB creates a fresh database on the test server for the test, dropped when the test ends, and
// returns a pool on it (closed when the test ends) and its DSN. Without WORK_TEST_POSTGRES the test
// is skipped, or fails under CI=true, where a missing server is a broken setup rather than a
// developer's machine without PostgreSQL.
func DB(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	base := os.Getenv(Env)
	if base == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set: CI must run the PostgreSQL tests (scripts/test.sh starts a server)", Env)
		}
		t.Skipf("%s is not set: no PostgreSQL to test against (scripts/test.sh starts one)", Env)
	}
	pool, dsn, drop, err := NewDatabase(base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := drop(); err != nil {
			t.Error(err)
		}
	})
	return pool, dsn
}

// ExampleDB is DB for runnable examples, which have no testing.T: a fresh database on the server at
// WORK_TEST_POSTGRES (else DefaultDSN), and a function that closes the pool and drops it. It
// panics when the server cannot be reached.
func ExampleDB() (*pgxpool.Pool, string, func()) {
	base := os.Getenv(Env)
	if base == "" {
		base = DefaultDSN
	}
	pool, dsn, drop, err := NewDatabase(base)
	if err != nil {
		panic(err)
	}
	return pool, dsn, func() {
		if err := drop(); err != nil {
			panic(err)
		}
	}
}

// NewDatabase creates a fresh database on the server at base and returns a pool on it, its DSN, and
// a function that closes the pool and drops the database.
func NewDatabase(base string) (*pgxpool.Pool, string, func() error, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		return nil, "", nil, fmt.Errorf("no test PostgreSQL at %s: %v", base, err)
	}
	defer admin.Close(ctx)

	// The process ID keeps apart the test binaries of several packages run at once.
	name := fmt.Sprintf("work_test_%d_%d", os.Getpid(), dbCounter.Add(1))
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return nil, "", nil, fmt.Errorf("create database %s: %v", name, err)
	}
	dsn, err := withDatabase(base, name)
	if err != nil {
		return nil, "", nil, err
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, "", nil, fmt.Errorf("connect to %s: %v", dsn, err)
	}
	drop := func() error {
		pool.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			return fmt.Errorf("drop database %s: %v", name, err)
		}
		defer c.Close(ctx)
		// FORCE ends the sessions a test left open (a relay's listener, a connection of its own).
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			return fmt.Errorf("drop database %s: %v", name, err)
		}
		return nil
	}
	return pool, dsn, drop, nil
}

// withDatabase returns the DSN base with its database replaced by name, in URL or key=value form.
func withDatabase(base, name string) (string, error) {
	if strings.HasPrefix(base, "postgres://") || strings.HasPrefix(base, "postgresql://") {
		u, err := url.Parse(base)
		if err != nil {
			return "", fmt.Errorf("%s: %v", Env, err)
		}
		u.Path = "/" + name
		return u.String(), nil
	}
	return base + " dbname=" + name, nil
}
