package pgserver

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// psql runs one statement through the server's own client and returns its output.
func psql(t *testing.T, s *Server, sql string) (string, error) {
	t.Helper()
	bin, err := Bin()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(bin, "psql"), "-h", "127.0.0.1", "-p", strconv.Itoa(s.Port), "-U", s.User,
		"-d", "postgres", "-Atc", sql).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// A server starts, keeps what was committed through a hard kill, restarts, and stops leaving no
// process behind.
func TestStartKillRestartStop(t *testing.T) {
	if _, err := Bin(); err != nil {
		t.Skip(err)
	}
	s, err := Start(Options{Settings: map[string]string{"fsync": "on"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop(true)
	if out, err := psql(t, s, "CREATE TABLE t (v int); INSERT INTO t VALUES (7); SELECT v FROM t"); err != nil || !strings.HasSuffix(out, "7") {
		t.Fatalf("psql: %q, %v", out, err)
	}
	if len(s.PIDs()) < 2 {
		t.Errorf("PIDs = %v, want the postmaster and its helpers", s.PIDs())
	}
	s.Kill()
	if pids := s.PIDs(); len(pids) != 0 {
		t.Errorf("processes left after Kill: %v", pids)
	}
	if _, err := psql(t, s, "SELECT 1"); err == nil {
		t.Error("the killed server answered")
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if out, err := psql(t, s, "SELECT v FROM t"); err != nil || out != "7" {
		t.Errorf("after the restart: %q, %v", out, err)
	}
	s.Stop(false)
	if pids := s.PIDs(); len(pids) != 0 {
		t.Errorf("processes left after Stop: %v", pids)
	}
}
