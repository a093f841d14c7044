package examples

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The bursts example re-indexes its document once, with the last edit, and sends each user's
// notifications in digests of at most 100.
func TestBurstsExample(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "run", "./bursts")
	out, err := cmd.Output() // standard output only: the go command may report downloads on standard error
	if err != nil {
		t.Fatalf("go run ./bursts: %v\n%s", err, out)
	}
	t.Logf("go run ./bursts:\n%s", out)
	want := "20 edits of doc 7: 1 re-index, of edit [20]\n" +
		"ada: 2 digest(s) of 100+100 notifications\n" +
		"bob: 1 digest(s) of 40 notifications\n" +
		"cleo: 1 digest(s) of 10 notifications\n"
	if got := string(out); got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
	if strings.Count(string(out), "\n") != 4 {
		t.Errorf("want four lines")
	}
}
