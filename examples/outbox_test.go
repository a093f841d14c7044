package examples

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The outbox example, on a fresh database of the test PostgreSQL (WORK_TEST_POSTGRES) and its
// embedded Redis, sends the committed order's receipt once and no receipt for the rolled-back one.
func TestOutboxExample(t *testing.T) {
	base := os.Getenv("WORK_TEST_POSTGRES")
	if base == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("WORK_TEST_POSTGRES is not set: CI must run this test (scripts/test.sh starts a PostgreSQL)")
		}
		t.Skip("WORK_TEST_POSTGRES is not set: no PostgreSQL to run the example on (scripts/test.sh starts one)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	name := fmt.Sprintf("work_example_outbox_%d", os.Getpid())
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	defer admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name

	// Its standard output only: the go command may report downloads on standard error.
	cmd := exec.CommandContext(ctx, "go", "run", "./outbox", "-postgres", u.String())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go run ./outbox: %v\n%s%s", err, out, stderr.String())
	}
	t.Logf("go run ./outbox:\n%s", out)
	want := regexp.MustCompile(`(?s)^order (\d+): card declined, rolled back with its receipt job
order (\d+) committed with its receipt job \w+
receipt for order (\d+) sent
order (\d+) exists: false; jobs run for it: 0
$`)
	m := want.FindStringSubmatch(string(out))
	if m == nil || m[2] != m[3] || m[1] != m[4] {
		t.Fatalf("want the rolled-back order without a receipt and the committed one with its receipt; got:\n%s", out)
	}
}
