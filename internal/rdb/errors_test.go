package rdb

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/gomodule/redigo/redis"
)

// Redis's WRONGTYPE reply becomes ErrWrongType, keeping the reply; other errors pass as they are.
func TestWrongTypeWrapsOnlyWrongType(t *testing.T) {
	reply := redis.Error("WRONGTYPE Operation against a key holding the wrong kind of value")
	err := wrongType(reply)
	var re redis.Error
	if !errors.Is(err, ErrWrongType) || !errors.As(err, &re) || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Errorf("wrongType(%q) = %v, want ErrWrongType wrapping the reply", reply, err)
	}
	if again := wrongType(err); again != err {
		t.Errorf("wrapped twice: %v", again)
	}
	for _, other := range []error{nil, io.EOF, redis.Error("ERR unknown command")} {
		if got := wrongType(other); got != other {
			t.Errorf("wrongType(%v) = %v, want it unchanged", other, got)
		}
	}
}

// The scripts' refusals of batches and dependencies become the package's sentinels.
func TestScriptRefusalsBecomeSentinels(t *testing.T) {
	for reply, want := range map[string]error{
		"WORKBATCH exists b1":   ErrBatchExists,
		"WORKBATCH unknown b1":  ErrBatchNotFound,
		"WORKBATCH complete b1": ErrBatchComplete,
		"WORKBATCH empty b1":    ErrBatchEmpty,
	} {
		if got := batchError(redis.Error(reply)); got != want {
			t.Errorf("batchError(%q) = %v, want %v", reply, got, want)
		}
	}
	if got := batchError(io.EOF); got != io.EOF {
		t.Errorf("batchError(EOF) = %v", got)
	}
	got := dependencyError(redis.Error("WORKDEP unknown j:abc"))
	if !errors.Is(got, ErrUnknownDependency) || !strings.HasSuffix(got.Error(), ": abc") {
		t.Errorf("dependencyError = %v, want ErrUnknownDependency naming abc", got)
	}
}

// Every Place names the key of the documented layout, in the store's namespace.
func TestPlacesNameTheLayoutsKeys(t *testing.T) {
	s := NewStore("ns", RefusingBackend(io.EOF))
	for p, want := range map[Place]string{
		Scheduled:                 "ns:scheduled",
		Retry:                     "ns:retry",
		Dead:                      "ns:dead",
		BatchesExpiry:             "ns:batches_expiry",
		SchedulesDue:              "ns:schedules:due",
		Queue("email"):            "ns:jobs:email",
		InProgress("email", "p1"): "ns:jobs:email:p1:inprogress",
		KeyedQueue("email", "k"):  "ns:keyed:email:{k}",
		KeyedInProgress("e", "p"): "ns:keyed:e:p:inprogress",
		KeyedWaiting("e"):         "ns:keyed:e:waiting",
	} {
		if got := s.key(p); got != want {
			t.Errorf("key(%v) = %q, want %q", p, got, want)
		}
		if got := p.String(); "ns:"+got != want {
			t.Errorf("String() = %q, want %q without the namespace", got, want)
		}
	}
}
