package work

import (
	"errors"
	"strings"
	"testing"

	"github.com/workqueue/work/internal/rdb"
)

// Every sentinel error starts with "work: ", but the two whose text gocraft/work fixed.
func TestSentinelErrorTexts(t *testing.T) {
	gocraft := map[error]string{ErrNotDeleted: "nothing deleted", ErrNotRetried: "nothing retried"}
	for err, want := range gocraft {
		if err.Error() != want {
			t.Errorf("%q, want gocraft/work's %q", err, want)
		}
	}
	for _, err := range []error{ErrJobNotFound, ErrNoRecord, ErrWrongType, ErrMalformedJobName, ErrMalformedID,
		ErrMalformedRate, ErrMalformedLimit, ErrMalformedArgs, ErrMalformedKey, ErrMalformedSpec, ErrUnknownLocation,
		ErrKeyFull, ErrUnknownDependency, ErrBatchNotFound, ErrBatchComplete, ErrBatchEmpty, ErrBatchExists,
		ErrMalformedSchedule, ErrScheduleNotFound, ErrDamagedSchedule, ErrJobCancelled, ErrResultTooLarge,
		ErrBadProgress, ErrNotInPool, ErrNotReplicated} {
		if !strings.HasPrefix(err.Error(), "work: ") {
			t.Errorf("%q does not start with the library's prefix", err)
		}
	}
}

// The Client's reads of a key another program overwrote return ErrWrongType, with Redis's reply.
func TestWrongTypeOnTheClientsReads(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	c := NewClient(ns, pool)
	ks := rdb.NewKeyspace(ns)
	rdo(t, pool, "SET", ks.JobRecord("rec1"), "x")
	rdo(t, pool, "SET", ks.Batch("b1"), "x")
	rdo(t, pool, "SET", ks.Schedules(), "x")

	if _, err := c.JobRecord("rec1"); !errors.Is(err, ErrWrongType) || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Errorf("JobRecord: %v, want ErrWrongType with Redis's reply", err)
	}
	if _, err := c.BatchStatus("b1"); !errors.Is(err, ErrWrongType) {
		t.Errorf("BatchStatus: %v, want ErrWrongType", err)
	}
	if _, err := c.Schedule("s1"); !errors.Is(err, ErrWrongType) {
		t.Errorf("Schedule: %v, want ErrWrongType", err)
	}
	if _, err := c.Schedules(ScheduleQuery{}); !errors.Is(err, ErrWrongType) {
		t.Errorf("Schedules: %v, want ErrWrongType", err)
	}
	if err := c.PauseSchedule("s1"); !errors.Is(err, ErrWrongType) {
		t.Errorf("PauseSchedule: %v, want ErrWrongType", err)
	}
}
