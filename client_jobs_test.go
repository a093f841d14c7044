package work

// Tests of the Client's methods on jobs (client_jobs.go).

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workqueue/work/internal/rdb"
)

// zsetLister lists one of the three job sets as (score, job) pairs.
type zsetLister struct {
	name string
	key  func(rdb.Keyspace) string
	list func(c *Client, page uint) ([]int64, []*Job, int64, error)
}

var zsetListers = []zsetLister{
	{"scheduled", rdb.Keyspace.Scheduled, func(c *Client, page uint) ([]int64, []*Job, int64, error) {
		js, n, err := c.ScheduledJobs(page)
		var scores []int64
		var jobs []*Job
		for _, j := range js {
			scores, jobs = append(scores, j.RunAt), append(jobs, j.Job)
		}
		return scores, jobs, n, err
	}},
	{"retry", rdb.Keyspace.Retry, func(c *Client, page uint) ([]int64, []*Job, int64, error) {
		js, n, err := c.RetryJobs(page)
		var scores []int64
		var jobs []*Job
		for _, j := range js {
			scores, jobs = append(scores, j.RetryAt), append(jobs, j.Job)
		}
		return scores, jobs, n, err
	}},
	{"dead", rdb.Keyspace.Dead, func(c *Client, page uint) ([]int64, []*Job, int64, error) {
		js, n, err := c.DeadJobs(page)
		var scores []int64
		var jobs []*Job
		for _, j := range js {
			scores, jobs = append(scores, j.DiedAt), append(jobs, j.Job)
		}
		return scores, jobs, n, err
	}},
}

func TestClientJobPagesHoldTwentyJobsSortedByScore(t *testing.T) {
	for _, l := range zsetListers {
		l := l
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			c, pool, ks := newTestClient(t)
			// Added in an order unrelated to the scores.
			args := []interface{}{l.key(ks)}
			for i := 44; i >= 0; i-- {
				k := (i * 7) % 45
				j := &Job{Name: "n", ID: fmt.Sprintf("id%02d", k), EnqueuedAt: 1, Args: Q{"k": k}}
				args = append(args, 1000+k, clientJobBytes(t, j))
			}
			rdo(t, pool, "ZADD", args...)

			check := func(page uint, first, n int) {
				t.Helper()
				scores, jobs, total, err := l.list(c, page)
				if err != nil {
					t.Fatal(err)
				}
				if total != 45 {
					t.Errorf("page %d: total %d, want 45", page, total)
				}
				if len(jobs) != n {
					t.Fatalf("page %d: %d jobs, want %d", page, len(jobs), n)
				}
				for i := range jobs {
					k := first + i
					if scores[i] != int64(1000+k) || jobs[i].ID != fmt.Sprintf("id%02d", k) || jobs[i].ArgInt64("k") != int64(k) {
						t.Errorf("page %d item %d: score %d job %+v, want score %d", page, i, scores[i], jobs[i], 1000+k)
					}
					if jobs[i].Raw != nil || jobs[i].LastErr != "" {
						t.Errorf("page %d item %d: a good job reads as undecodable: %+v", page, i, jobs[i])
					}
				}
			}
			check(0, 0, 20)
			check(1, 0, 20)
			check(2, 20, 20)
			check(3, 40, 5)
			check(4, 0, 0)
			check(^uint(0), 0, 0)
		})
	}
}

func TestClientJobPagesReturnUndecodableMembersWithRawAndReason(t *testing.T) {
	for _, l := range zsetListers {
		l := l
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			c, pool, ks := newTestClient(t)
			good := clientJobBytes(t, &Job{Name: "n", ID: "good", EnqueuedAt: 1})
			noName := `{"id":"noname","t":5,"args":{}}`
			rdo(t, pool, "ZADD", l.key(ks), 10, good, 20, "not json at all", 30, noName, 40, `{"name":"n","id":"x"} trailing`)

			scores, jobs, total, err := l.list(c, 1)
			if err != nil {
				t.Fatal(err)
			}
			if total != 4 || len(jobs) != 4 {
				t.Fatalf("total %d, %d jobs; want 4 and 4", total, len(jobs))
			}
			if !reflect.DeepEqual(scores, []int64{10, 20, 30, 40}) {
				t.Errorf("scores %v", scores)
			}
			if jobs[0].ID != "good" || jobs[0].Raw != nil {
				t.Errorf("good job: %+v", jobs[0])
			}
			for i, want := range []string{"not json at all", noName, `{"name":"n","id":"x"} trailing`} {
				j := jobs[i+1]
				if string(j.Raw) != want || j.LastErr == "" {
					t.Errorf("undecodable member %d: Raw %q LastErr %q; want Raw %q and a reason", i, j.Raw, j.LastErr, want)
				}
			}
			if jobs[2].ID != "noname" {
				t.Errorf("an undecodable member keeps the ID it carries: got %q", jobs[2].ID)
			}
			if n := rInt(t, pool, "ZCARD", l.key(ks)); n != 4 {
				t.Errorf("listing changed the set: %d members", n)
			}
		})
	}
}

func TestClientDeadJobsShowsTheOriginalPayloadOfAnUndecodableJob(t *testing.T) {
	t.Parallel()
	c, pool, ks := newTestClient(t)
	// A worker's dead record of a payload it could not decode, name unknown.
	rec := fmt.Sprintf(`{"id":"r1","t":3,"args":null,"err":"malformed job payload","failed_at":9,"raw_payload":%q}`,
		base64.StdEncoding.EncodeToString([]byte("{broken")))
	rdo(t, pool, "ZADD", ks.Dead(), 9, rec)
	jobs, total, err := c.DeadJobs(1)
	if err != nil || total != 1 || len(jobs) != 1 {
		t.Fatalf("got %v, %d, %v", jobs, total, err)
	}
	if j := jobs[0]; j.DiedAt != 9 || j.ID != "r1" || string(j.Raw) != "{broken" || j.LastErr != "malformed job payload" {
		t.Errorf("got %+v (Raw %q)", j.Job, j.Raw)
	}
}

func TestClientDeleteDeadJobRemovesOnlyThatJob(t *testing.T) {
	t.Parallel()
	c, pool, ks := newTestClient(t)
	a := clientJobBytes(t, &Job{Name: "n", ID: "a", EnqueuedAt: 1, Fails: 4, LastErr: "x", FailedAt: 100})
	b := clientJobBytes(t, &Job{Name: "n", ID: "b", EnqueuedAt: 1, Fails: 4, LastErr: "x", FailedAt: 100})
	rdo(t, pool, "ZADD", ks.Dead(), 100, a, 100, b, 101, "junk")

	if err := c.DeleteDeadJob(101, "a"); !errors.Is(err, ErrNotDeleted) {
		t.Errorf("wrong score: got %v, want ErrNotDeleted", err)
	}
	if err := c.DeleteDeadJob(100, "a"); err != nil {
		t.Fatal(err)
	}
	if got := rStrings(t, pool, "ZRANGE", ks.Dead(), 0, -1); !reflect.DeepEqual(got, []string{string(b), "junk"}) {
		t.Errorf("dead set after delete: %q", got)
	}
	if err := c.DeleteDeadJob(100, "a"); !errors.Is(err, ErrNotDeleted) {
		t.Errorf("second delete: got %v, want ErrNotDeleted", err)
	}
	// An undecodable member is deleted by the (empty) ID it was listed with.
	if err := c.DeleteDeadJob(101, ""); err != nil {
		t.Fatal(err)
	}
	if got := rStrings(t, pool, "ZRANGE", ks.Dead(), 0, -1); !reflect.DeepEqual(got, []string{string(b)}) {
		t.Errorf("dead set after deleting the undecodable member: %q", got)
	}
}

func TestClientDeleteRetryJobRemovesOnlyThatJob(t *testing.T) {
	t.Parallel()
	c, pool, ks := newTestClient(t)
	a := clientJobBytes(t, &Job{Name: "n", ID: "a", EnqueuedAt: 1, Fails: 1, LastErr: "x", FailedAt: 5})
	b := clientJobBytes(t, &Job{Name: "n", ID: "b", EnqueuedAt: 1, Fails: 1, LastErr: "x", FailedAt: 5})
	rdo(t, pool, "ZADD", ks.Retry(), 50, a, 60, b)

	if err := c.DeleteRetryJob(60, "a"); !errors.Is(err, ErrNotDeleted) {
		t.Errorf("wrong score: got %v, want ErrNotDeleted", err)
	}
	if err := c.DeleteRetryJob(50, "a"); err != nil {
		t.Fatal(err)
	}
	if got := rStrings(t, pool, "ZRANGE", ks.Retry(), 0, -1); !reflect.DeepEqual(got, []string{string(b)}) {
		t.Errorf("retry set after delete: %q", got)
	}
	if err := c.DeleteRetryJob(50, "a"); !errors.Is(err, ErrNotDeleted) {
		t.Errorf("second delete: got %v, want ErrNotDeleted", err)
	}
}

func TestClientDeleteScheduledJobFreesItsUniqueLock(t *testing.T) {
	t.Parallel()
	c, pool, ks := newTestClient(t)
	args := Q{"user": 7.0, "big": json.Number("12345678901234567890")}
	byArgs, err := ks.Unique("mail", args)
	if err != nil {
		t.Fatal(err)
	}
	byKey, err := ks.Unique("mail", Q{"user": 8.0})
	if err != nil {
		t.Fatal(err)
	}
	withKey := clientJobBytes(t, &Job{Name: "mail", ID: "k", EnqueuedAt: 1, Args: Q{"user": 8.0, "v": 2.0},
		Unique: true, UniqueKey: byKey})
	// A unique job written without unique_key: its lock is found from its args.
	withoutKey := clientJobBytes(t, &Job{Name: "mail", ID: "u", EnqueuedAt: 1, Args: args, Unique: true})
	plain := clientJobBytes(t, &Job{Name: "mail", ID: "p", EnqueuedAt: 1, Args: args})
	rdo(t, pool, "ZADD", ks.Scheduled(), 500, withKey, 500, withoutKey, 600, plain)
	rdo(t, pool, "SET", byKey, withKey, "EX", 86400)
	rdo(t, pool, "SET", byArgs, "1", "EX", 86400)

	if err := c.DeleteScheduledJob(500, "k"); err != nil {
		t.Fatal(err)
	}
	if rInt(t, pool, "EXISTS", byKey) != 0 || rInt(t, pool, "EXISTS", byArgs) != 1 {
		t.Fatalf("after deleting the ByKey job: its lock should be gone and the other kept")
	}
	if err := c.DeleteScheduledJob(600, "p"); err != nil {
		t.Fatal(err)
	}
	if rInt(t, pool, "EXISTS", byArgs) != 1 {
		t.Fatal("deleting a job that is not unique freed a lock")
	}
	if err := c.DeleteScheduledJob(500, "u"); err != nil {
		t.Fatal(err)
	}
	if rInt(t, pool, "EXISTS", byArgs) != 0 {
		t.Fatal("the lock derived from the args was not freed")
	}
	if n := rInt(t, pool, "ZCARD", ks.Scheduled()); n != 0 {
		t.Errorf("scheduled set holds %d members, want 0", n)
	}
	rdo(t, pool, "SET", byArgs, "1", "EX", 86400) // a newer job's lock
	if err := c.DeleteScheduledJob(500, "u"); !errors.Is(err, ErrNotDeleted) {
		t.Errorf("second delete: got %v, want ErrNotDeleted", err)
	}
	if rInt(t, pool, "EXISTS", byArgs) != 1 {
		t.Error("a delete that matched nothing freed a newer job's lock")
	}
}

func TestClientRetryDeadJobMovesItBackToItsQueue(t *testing.T) {
	t.Parallel()
	c, pool, ks := newTestClient(t)
	dead := &Job{Name: "mail", ID: "d1", EnqueuedAt: 1000, Args: Q{"to": "a@b.c"}, Fails: 4, LastErr: "smtp down", FailedAt: 2000}
	rdo(t, pool, "ZADD", ks.Dead(), 2000, clientJobBytes(t, dead))
	psc := subscribeWake(t, pool, ks)
	defer psc.Close()

	before := time.Now().Unix()
	if err := c.RetryDeadJob(2000, "d1"); err != nil {
		t.Fatal(err)
	}
	after := time.Now().Unix()
	if got := nextWake(t, psc); got != "mail" {
		t.Errorf("wake-up message %q, want the job name", got)
	}
	if n := rInt(t, pool, "ZCARD", ks.Dead()); n != 0 {
		t.Errorf("dead set holds %d members, want 0", n)
	}
	queued := rStrings(t, pool, "LRANGE", ks.Jobs("mail"), 0, -1)
	if len(queued) != 1 {
		t.Fatalf("queue holds %d jobs, want 1", len(queued))
	}
	j, err := decodeJob([]byte(queued[0]))
	if err != nil {
		t.Fatal(err)
	}
	if j.Name != "mail" || j.ID != "d1" || j.ArgString("to") != "a@b.c" || j.Fails != 0 || j.LastErr != "" || j.FailedAt != 0 {
		t.Errorf("requeued job %+v", j)
	}
	if j.EnqueuedAt < before || j.EnqueuedAt > after {
		t.Errorf("requeued job t = %d, want the time of the retry", j.EnqueuedAt)
	}
	for _, field := range []string{`"fails"`, `"err"`, `"failed_at"`, `"raw_text"`, `"raw_base64"`, `"raw_payload"`} {
		if strings.Contains(queued[0], field) {
			t.Errorf("requeued payload %s still holds %s", queued[0], field)
		}
	}
}

func TestClientRetryDeadJobQueuesItBehindWaitingJobs(t *testing.T) {
	t.Parallel()
	c, pool, ks := newTestClient(t)
	waiting := clientJobBytes(t, &Job{Name: "mail", ID: "w", EnqueuedAt: 1})
	rdo(t, pool, "LPUSH", ks.Jobs("mail"), waiting)
	rdo(t, pool, "ZADD", ks.Dead(), 5, clientJobBytes(t, &Job{Name: "mail", ID: "d", EnqueuedAt: 1, Fails: 1, LastErr: "x", FailedAt: 5}))
	if err := c.RetryDeadJob(5, "d"); err != nil {
		t.Fatal(err)
	}
	// Workers fetch from the tail: the waiting job stays first in line.
	q := rStrings(t, pool, "LRANGE", ks.Jobs("mail"), 0, -1)
	if len(q) != 2 || q[1] != string(waiting) || !strings.Contains(q[0], `"id":"d"`) {
		t.Errorf("queue %q", q)
	}
}

func TestClientRetryDeadJobTwiceReturnsErrNotRetried(t *testing.T) {
	t.Parallel()
	c, pool, ks := newTestClient(t)
	rdo(t, pool, "ZADD", ks.Dead(), 5, clientJobBytes(t, &Job{Name: "mail", ID: "d", EnqueuedAt: 1, Fails: 1, LastErr: "x", FailedAt: 5}))
	if err := c.RetryDeadJob(5, "d"); err != nil {
		t.Fatal(err)
	}
	if err := c.RetryDeadJob(5, "d"); !errors.Is(err, ErrNotRetried) {
		t.Fatalf("second retry: got %v, want ErrNotRetried", err)
	}
	if err := c.RetryDeadJob(6, "nope"); !errors.Is(err, ErrNotRetried) {
		t.Fatalf("retry of a job that is not there: got %v, want ErrNotRetried", err)
	}
	if n := rInt(t, pool, "LLEN", ks.Jobs("mail")); n != 1 {
		t.Errorf("queue holds %d jobs, want 1", n)
	}
}

func TestClientRetryDeadJobRacingClientsRetryOnce(t *testing.T) {
	t.Parallel()
	c1, pool, ks := newTestClient(t)
	c2 := &Client{store: c1.store}
	for i := 0; i < 20; i++ {
		id := fmt.Sprintf("d%d", i)
		rdo(t, pool, "ZADD", ks.Dead(), 5, clientJobBytes(t, &Job{Name: "mail", ID: id, EnqueuedAt: 1, Fails: 1, LastErr: "x", FailedAt: 5}))
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for k, c := range []*Client{c1, c2} {
			wg.Add(1)
			go func(k int, c *Client) {
				defer wg.Done()
				errs[k] = c.RetryDeadJob(5, id)
			}(k, c)
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			if err == nil {
				ok++
			} else if !errors.Is(err, ErrNotRetried) {
				t.Fatal(err)
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: %d clients retried the job, want exactly 1", i, ok)
		}
	}
	if n := rInt(t, pool, "LLEN", ks.Jobs("mail")); n != 20 {
		t.Errorf("queue holds %d jobs, want 20", n)
	}
}

func TestClientRetryDeadJobKeepsLargeIntegersExact(t *testing.T) {
	t.Parallel()
	c, pool, ks := newTestClient(t)
	args := `{"big":12345678901234567890,"edge":9007199254740993,"neg":-9223372036854775808,"list":[],"obj":{},"f":1.5e300,"s":"\u003ctag\u003e"}`
	member := `{"name":"big","id":"b1","t":1,"args":` + args + `,"unique":true,"unique_key":"k","fails":4,"err":"boom","failed_at":99}`
	rdo(t, pool, "ZADD", ks.Dead(), 99, member)
	if err := c.RetryDeadJob(99, "b1"); err != nil {
		t.Fatal(err)
	}
	got := rStrings(t, pool, "LRANGE", ks.Jobs("big"), 0, -1)
	if len(got) != 1 {
		t.Fatalf("queue holds %d jobs, want 1", len(got))
	}
	var head struct {
		T int64 `json:"t"`
	}
	if err := json.Unmarshal([]byte(got[0]), &head); err != nil {
		t.Fatal(err)
	}
	// Retried, the job is no longer unique (its lock was released when it first started).
	want := fmt.Sprintf(`{"name":"big","id":"b1","t":%d,"args":%s}`, head.T, args)
	if got[0] != want {
		t.Errorf("requeued payload\n got %s\nwant %s", got[0], want)
	}
}

func TestClientRetryDeadJobRequeuesAnUndecodablePayloadVerbatim(t *testing.T) {
	t.Parallel()
	c, pool, ks := newTestClient(t)
	rec := fmt.Sprintf(`{"name":"mail","id":"r1","t":3,"args":null,"err":"malformed job payload","failed_at":9,"raw_payload":%q}`,
		base64.StdEncoding.EncodeToString([]byte(`{"name":"mail",broken`)))
	rdo(t, pool, "ZADD", ks.Dead(), 9, rec)
	if err := c.RetryDeadJob(9, "r1"); err != nil {
		t.Fatal(err)
	}
	if got := rStrings(t, pool, "LRANGE", ks.Jobs("mail"), 0, -1); !reflect.DeepEqual(got, []string{`{"name":"mail",broken`}) {
		t.Errorf("queue %q, want the original payload", got)
	}
	if n := rInt(t, pool, "ZCARD", ks.Dead()); n != 0 {
		t.Errorf("dead set holds %d members, want 0", n)
	}
}

func TestClientRetryDeadJobLeavesAnUndecodableMember(t *testing.T) {
	t.Parallel()
	c, pool, ks := newTestClient(t)
	rec := fmt.Sprintf(`{"id":"r1","t":3,"args":null,"err":"malformed job payload","failed_at":9,"raw_payload":%q}`,
		base64.StdEncoding.EncodeToString([]byte("{broken")))
	rdo(t, pool, "ZADD", ks.Dead(), 9, "garbage", 9, rec)
	if err := c.RetryDeadJob(9, ""); !errors.Is(err, ErrNotRetried) {
		t.Errorf("retry of garbage: got %v, want ErrNotRetried", err)
	}
	if err := c.RetryDeadJob(9, "r1"); !errors.Is(err, ErrNotRetried) {
		t.Errorf("retry of a record with no job name: got %v, want ErrNotRetried", err)
	}
	if n := rInt(t, pool, "ZCARD", ks.Dead()); n != 2 {
		t.Errorf("dead set holds %d members, want both left", n)
	}
}

func TestClientRetryAllDeadJobsMovesThemInBatches(t *testing.T) {
	t.Parallel()
	c, pool, ks := newTestClient(t)
	const n = 2500
	args := []interface{}{ks.Dead()}
	for i := 0; i < n; i++ {
		name := []string{"alpha", "bravo"}[i%2]
		j := &Job{Name: name, ID: fmt.Sprintf("j%04d", i), EnqueuedAt: 1, Args: Q{"i": i}, Fails: 4, LastErr: "x", FailedAt: int64(10000 + i)}
		args = append(args, 10000+i, clientJobBytes(t, j))
	}
	// Members that cannot be retried, in the first batch and in a later one.
	bad := []string{"junk-1", "junk-2", `{"id":"noname"}`}
	args = append(args, 10000, bad[0], 11500, bad[1], 12499, bad[2])
	raw := fmt.Sprintf(`{"name":"charlie","id":"r","t":1,"args":null,"err":"malformed","failed_at":5,"raw_payload":%q}`,
		base64.StdEncoding.EncodeToString([]byte("opaque")))
	args = append(args, 10001, raw)
	rdo(t, pool, "ZADD", args...)

	if err := c.RetryAllDeadJobs(); err != nil {
		t.Fatal(err)
	}
	left := rStrings(t, pool, "ZRANGE", ks.Dead(), 0, -1)
	sort.Strings(left)
	want := append([]string(nil), bad...)
	sort.Strings(want)
	if !reflect.DeepEqual(left, want) {
		t.Errorf("dead set after RetryAllDeadJobs: %q, want only the undecodable members", left)
	}
	if got := rStrings(t, pool, "LRANGE", ks.Jobs("charlie"), 0, -1); !reflect.DeepEqual(got, []string{"opaque"}) {
		t.Errorf("charlie queue %q", got)
	}
	seen := map[string]bool{}
	for _, name := range []string{"alpha", "bravo"} {
		q := rStrings(t, pool, "LRANGE", ks.Jobs(name), 0, -1)
		if len(q) != n/2 {
			t.Errorf("%s queue holds %d jobs, want %d", name, len(q), n/2)
		}
		for k := range q {
			// The first to die is the first in line (the tail).
			j, err := decodeJob([]byte(q[len(q)-1-k]))
			if err != nil {
				t.Fatal(err)
			}
			i := int(j.ArgInt64("i"))
			if j.Name != name || j.Fails != 0 || seen[j.ID] || (name == "alpha" && i != 2*k) || (name == "bravo" && i != 2*k+1) {
				t.Fatalf("%s queue position %d: %+v", name, k, j)
			}
			seen[j.ID] = true
		}
	}
	if len(seen) != n {
		t.Errorf("%d distinct jobs requeued, want %d", len(seen), n)
	}
	if err := c.RetryAllDeadJobs(); err != nil {
		t.Errorf("second RetryAllDeadJobs with only undecodable members: %v", err)
	}
}

func TestClientRetryAllDeadJobsOnAnEmptySetDoesNothing(t *testing.T) {
	t.Parallel()
	c, pool, ks := newTestClient(t)
	if err := c.RetryAllDeadJobs(); err != nil {
		t.Fatal(err)
	}
	if n := rInt(t, pool, "EXISTS", ks.Dead()); n != 0 {
		t.Error("dead set created")
	}
}

func TestClientDeleteAllDeadJobsEmptiesTheDeadSet(t *testing.T) {
	t.Parallel()
	c, pool, ks := newTestClient(t)
	rdo(t, pool, "ZADD", ks.Dead(), 1, "a", 2, "b", 3, clientJobBytes(t, &Job{Name: "n", ID: "c"}))
	rdo(t, pool, "ZADD", ks.Retry(), 1, "r")
	if err := c.DeleteAllDeadJobs(); err != nil {
		t.Fatal(err)
	}
	if rInt(t, pool, "EXISTS", ks.Dead()) != 0 || rInt(t, pool, "ZCARD", ks.Retry()) != 1 {
		t.Error("DeleteAllDeadJobs must empty the dead set and nothing else")
	}
	if err := c.DeleteAllDeadJobs(); err != nil {
		t.Errorf("on an empty dead set: %v", err)
	}
}

func TestClientFindJobFindsAJobInEveryState(t *testing.T) {
	t.Parallel()
	c, pool, ks := newTestClient(t)
	job := func(name, id string) []byte {
		return clientJobBytes(t, &Job{Name: name, ID: id, EnqueuedAt: 1, Args: Q{"who": id}})
	}
	rdo(t, pool, "SADD", ks.KnownJobs(), "mail", "sms")
	rdo(t, pool, "SADD", ks.WorkerPools(), "pool1")
	rdo(t, pool, "ZADD", ks.Scheduled(), 100, job("mail", "s1"))
	rdo(t, pool, "ZADD", ks.Retry(), 200, job("mail", "r1"))
	rdo(t, pool, "LPUSH", ks.Jobs("sms"), job("sms", "q0"), job("sms", "q1"), `{"name":"sms" broken`)
	rdo(t, pool, "LPUSH", ks.InProgress("sms", "pool1"), job("sms", "p1"))
	rdo(t, pool, "ZADD", ks.Dead(), 300, job("mail", "d1"))
	// The ID of a periodic job holds a cron spec; a dead record of an undecodable payload.
	periodic := "periodic:mail:*/5 * * * *:1700000000"
	rdo(t, pool, "ZADD", ks.Dead(), 301, job("mail", periodic))
	rec := fmt.Sprintf(`{"name":"sms","id":"x1","t":3,"args":null,"err":"malformed job payload","failed_at":9,"raw_payload":%q}`,
		base64.StdEncoding.EncodeToString([]byte("{broken")))
	rdo(t, pool, "ZADD", ks.Dead(), 302, rec)

	for _, tc := range []struct {
		id      string
		state   JobState
		pool    string
		score   int64
		decoded bool
	}{
		{"s1", JobStateScheduled, "", 100, true},
		{"r1", JobStateRetry, "", 200, true},
		{"q0", JobStateQueued, "", 0, true},
		{"q1", JobStateQueued, "", 0, true},
		{"p1", JobStateInProgress, "pool1", 0, true},
		{"d1", JobStateDead, "", 300, true},
		{periodic, JobStateDead, "", 301, true},
		{"x1", JobStateDead, "", 302, true}, // a record that names its job decodes, with Raw set
	} {
		loc, err := c.FindJob(tc.id)
		if err != nil {
			t.Fatalf("FindJob(%q): %v", tc.id, err)
		}
		if loc.State != tc.state || loc.Score != tc.score || loc.PoolID != tc.pool || loc.Decoded != tc.decoded || loc.Job.ID != tc.id {
			t.Errorf("FindJob(%q) = %+v, want state %s score %d pool %q", tc.id, loc, tc.state, tc.score, tc.pool)
		}
		if tc.id != "x1" && (loc.Job.ArgString("who") != tc.id || !strings.Contains(loc.Payload, `"who":`)) {
			t.Errorf("FindJob(%q): job %+v payload %q", tc.id, loc.Job, loc.Payload)
		}
	}
	loc, err := c.FindJob("x1")
	if err != nil || string(loc.Job.Raw) != "{broken" || loc.Payload != rec {
		t.Errorf("undecodable record: %+v, %v", loc, err)
	}
	for _, id := range []string{"nope", "q", "*", "s1*"} {
		if _, err := c.FindJob(id); !errors.Is(err, ErrJobNotFound) {
			t.Errorf("FindJob(%q): got %v, want ErrJobNotFound", id, err)
		}
	}
	if _, err := c.FindJob(""); err == nil || errors.Is(err, ErrJobNotFound) {
		t.Errorf("FindJob(\"\"): got %v, want an error about the empty ID", err)
	}
}

func TestClientFindJobReadsLargeQueuesAndSetsInChunks(t *testing.T) {
	t.Parallel()
	c, pool, ks := newTestClient(t)
	rdo(t, pool, "SADD", ks.KnownJobs(), "bulk")
	const n = 2500
	list := []interface{}{ks.Jobs("bulk")}
	set := []interface{}{ks.Dead()}
	for i := 0; i < n; i++ {
		list = append(list, clientJobBytes(t, &Job{Name: "bulk", ID: fmt.Sprintf("q%05d", i), EnqueuedAt: 1}))
		set = append(set, i, clientJobBytes(t, &Job{Name: "bulk", ID: fmt.Sprintf("d%05d", i), EnqueuedAt: 1}))
	}
	rdo(t, pool, "LPUSH", list...)
	rdo(t, pool, "ZADD", set...)
	for _, id := range []string{"q00000", "q01234", "q02499", "d00000", "d02499"} {
		loc, err := c.FindJob(id)
		if err != nil || loc.Job.ID != id {
			t.Errorf("FindJob(%q) = %+v, %v", id, loc, err)
		}
	}
	if loc, _ := c.FindJob("d01000"); loc == nil || loc.Score != 1000 {
		t.Errorf("dead job score: %+v", loc)
	}
}

func TestClientDeleteQueuedJobRemovesOnlyThatJobAndFreesItsLock(t *testing.T) {
	t.Parallel()
	c, pool, ks := newTestClient(t)
	lock, err := ks.Unique("mail", Q{"to": "a"})
	if err != nil {
		t.Fatal(err)
	}
	u := clientJobBytes(t, &Job{Name: "mail", ID: "u", EnqueuedAt: 1, Args: Q{"to": "a"}, Unique: true, UniqueKey: lock})
	a := clientJobBytes(t, &Job{Name: "mail", ID: "a", EnqueuedAt: 1})
	b := clientJobBytes(t, &Job{Name: "mail", ID: "b", EnqueuedAt: 1})
	rdo(t, pool, "LPUSH", ks.Jobs("mail"), a, u, b)
	rdo(t, pool, "SET", lock, "1", "EX", 86400)

	if err := c.DeleteQueuedJob("mail", "a"); err != nil {
		t.Fatal(err)
	}
	if got := rStrings(t, pool, "LRANGE", ks.Jobs("mail"), 0, -1); !reflect.DeepEqual(got, []string{string(b), string(u)}) {
		t.Errorf("queue after delete: %q", got)
	}
	if rInt(t, pool, "EXISTS", lock) != 1 {
		t.Error("deleting a job that is not unique freed a lock")
	}
	if err := c.DeleteQueuedJob("mail", "u"); err != nil {
		t.Fatal(err)
	}
	if rInt(t, pool, "EXISTS", lock) != 0 {
		t.Error("the unique job's lock was not freed")
	}
	rdo(t, pool, "SET", lock, "1", "EX", 86400) // a newer job's lock
	for _, tc := range []struct{ name, id string }{{"mail", "u"}, {"mail", "a"}, {"other", "b"}, {"mail", "nope"}} {
		if err := c.DeleteQueuedJob(tc.name, tc.id); !errors.Is(err, ErrNotDeleted) {
			t.Errorf("DeleteQueuedJob(%q, %q): got %v, want ErrNotDeleted", tc.name, tc.id, err)
		}
	}
	if rInt(t, pool, "EXISTS", lock) != 1 {
		t.Error("a delete that matched nothing freed a newer job's lock")
	}
	if got := rStrings(t, pool, "LRANGE", ks.Jobs("mail"), 0, -1); !reflect.DeepEqual(got, []string{string(b)}) {
		t.Errorf("queue at the end: %q", got)
	}
	if c.DeleteQueuedJob("", "b") == nil || c.DeleteQueuedJob("mail", "") == nil {
		t.Error("an empty job name or ID must be refused")
	}
}

func TestClientRetryDeadJobsByNameMovesOnlyThatNameInOrder(t *testing.T) {
	t.Parallel()
	c, pool, ks := newTestClient(t)
	const n = 2400
	args := []interface{}{ks.Dead()}
	for i := 0; i < n; i++ {
		name := []string{"alpha", "bravo", "charlie"}[i%3]
		j := &Job{Name: name, ID: fmt.Sprintf("j%04d", i), EnqueuedAt: 1, Args: Q{"i": i}, Fails: 4, LastErr: "x", FailedAt: int64(i)}
		args = append(args, 10000+i, clientJobBytes(t, j))
	}
	raw := fmt.Sprintf(`{"name":"bravo","id":"r","t":1,"args":null,"err":"malformed","failed_at":5,"raw_payload":%q}`,
		base64.StdEncoding.EncodeToString([]byte("opaque")))
	args = append(args, 9999, raw, 10002, "junk")
	rdo(t, pool, "ZADD", args...)

	moved, err := c.RetryDeadJobsByName("bravo")
	if err != nil {
		t.Fatal(err)
	}
	if moved != n/3+1 {
		t.Errorf("moved %d jobs, want %d", moved, n/3+1)
	}
	q := rStrings(t, pool, "LRANGE", ks.Jobs("bravo"), 0, -1)
	if len(q) != n/3+1 || q[len(q)-1] != "opaque" {
		t.Fatalf("bravo queue holds %d jobs (tail %q), want %d with the raw payload first in line", len(q), q[len(q)-1], n/3+1)
	}
	for k := 0; k < n/3; k++ {
		j, err := decodeJob([]byte(q[len(q)-2-k]))
		if err != nil {
			t.Fatal(err)
		}
		if j.Name != "bravo" || j.Fails != 0 || j.ArgInt64("i") != int64(3*k+1) {
			t.Fatalf("bravo queue position %d: %+v", k, j)
		}
	}
	if left := rInt(t, pool, "ZCARD", ks.Dead()); left != 2*n/3+1 {
		t.Errorf("dead set holds %d members, want %d", left, 2*n/3+1)
	}
	if rInt(t, pool, "EXISTS", ks.Jobs("alpha")) != 0 {
		t.Error("another name was retried")
	}
	if moved, err := c.RetryDeadJobsByName("bravo"); moved != 0 || err != nil {
		t.Errorf("second call: %d, %v", moved, err)
	}
	if _, err := c.RetryDeadJobsByName(""); err == nil {
		t.Error("an empty job name must be refused")
	}
}

func TestClientDeleteDeadJobsByNameDeletesOnlyThatName(t *testing.T) {
	t.Parallel()
	c, pool, ks := newTestClient(t)
	const n = 2100
	args := []interface{}{ks.Dead()}
	for i := 0; i < n; i++ {
		name := []string{"alpha", "bravo"}[i%2]
		args = append(args, i, clientJobBytes(t, &Job{Name: name, ID: fmt.Sprintf("j%04d", i), EnqueuedAt: 1}))
	}
	args = append(args, 5, "junk", 7, `{"name":"alpha","id":"odd","t":"not a number"}`)
	rdo(t, pool, "ZADD", args...)
	deleted, err := c.DeleteDeadJobsByName("alpha")
	if err != nil {
		t.Fatal(err)
	}
	if deleted != n/2+1 {
		t.Errorf("deleted %d, want %d", deleted, n/2+1)
	}
	left := rStrings(t, pool, "ZRANGE", ks.Dead(), 0, -1)
	if len(left) != n/2+1 {
		t.Fatalf("dead set holds %d members, want %d", len(left), n/2+1)
	}
	for _, m := range left {
		if m != "junk" && !strings.Contains(m, `"name":"bravo"`) {
			t.Fatalf("left %q", m)
		}
	}
	if deleted, err := c.DeleteDeadJobsByName("alpha"); deleted != 0 || err != nil {
		t.Errorf("second call: %d, %v", deleted, err)
	}
	if _, err := c.DeleteDeadJobsByName(""); err == nil {
		t.Error("an empty job name must be refused")
	}
}

func TestClientRunScheduledAndRetryJobsNow(t *testing.T) {
	t.Parallel()
	c, pool, ks := newTestClient(t)
	s := clientJobBytes(t, &Job{Name: "mail", ID: "s", EnqueuedAt: 1})
	r := clientJobBytes(t, &Job{Name: "mail", ID: "r", EnqueuedAt: 1, Fails: 2, LastErr: "x", FailedAt: 3})
	rdo(t, pool, "ZADD", ks.Scheduled(), 9999999999, s, 5, "junk")
	rdo(t, pool, "ZADD", ks.Retry(), 9999999999, r)
	if err := c.RunScheduledJobNow(9999999999, "s"); err != nil {
		t.Fatal(err)
	}
	if err := c.RunRetryJobNow(9999999999, "r"); err != nil {
		t.Fatal(err)
	}
	if got := rStrings(t, pool, "LRANGE", ks.Jobs("mail"), 0, -1); !reflect.DeepEqual(got, []string{string(r), string(s)}) {
		t.Errorf("queue %q: want both payloads verbatim, the scheduled one first in line", got)
	}
	if err := c.RunScheduledJobNow(9999999999, "s"); !errors.Is(err, ErrNotRetried) {
		t.Errorf("second run: got %v, want ErrNotRetried", err)
	}
	if err := c.RunScheduledJobNow(5, ""); !errors.Is(err, ErrNotRetried) {
		t.Errorf("undecodable member: got %v, want ErrNotRetried", err)
	}
	if err := c.RunRetryJobNow(1, "r"); !errors.Is(err, ErrNotRetried) {
		t.Errorf("wrong score: got %v, want ErrNotRetried", err)
	}
}

func TestClientSearchJobsFiltersByNameOrIDAndPages(t *testing.T) {
	t.Parallel()
	c, pool, ks := newTestClient(t)
	args := []interface{}{ks.Dead()}
	for i := 0; i < 1100; i++ {
		name := "other"
		if i%25 == 0 {
			name = "Send_Email"
		}
		args = append(args, i, clientJobBytes(t, &Job{Name: name, ID: fmt.Sprintf("id%04d", i), EnqueuedAt: 1, Args: Q{"note": "send_email"}}))
	}
	args = append(args, 2000, "garbage")
	rdo(t, pool, "ZADD", args...)

	locs, total, err := c.SearchJobs(JobStateDead, "send_email", 1)
	if err != nil {
		t.Fatal(err)
	}
	if total != 44 || len(locs) != 20 {
		t.Fatalf("got %d of %d, want 20 of 44 (args must not match)", len(locs), total)
	}
	for i, l := range locs {
		if l.Job.Name != "Send_Email" || l.Score != int64(25*i) || l.State != JobStateDead || !l.Decoded {
			t.Fatalf("result %d: %+v", i, l)
		}
	}
	locs, _, _ = c.SearchJobs(JobStateDead, "send_email", 3)
	if len(locs) != 4 || locs[3].Score != 1075 {
		t.Errorf("page 3: %d results", len(locs))
	}
	locs, total, _ = c.SearchJobs(JobStateDead, "ID1099", 0)
	if total != 1 || len(locs) != 1 || locs[0].Job.ID != "id1099" {
		t.Errorf("by ID: %d results of %d", len(locs), total)
	}
	if _, total, _ := c.SearchJobs(JobStateDead, "", 1); total != 1101 {
		t.Errorf("empty query: total %d, want every member", total)
	}
	if locs, total, err := c.SearchJobs(JobStateRetry, "x", 1); err != nil || total != 0 || locs == nil {
		t.Errorf("empty set: %v, %d, %v", locs, total, err)
	}
	if _, _, err := c.SearchJobs(JobStateQueued, "x", 1); err == nil {
		t.Error("searching queued jobs must be refused")
	}
}

func TestClientFindsMembersWithFractionalAndInfiniteScores(t *testing.T) {
	t.Parallel()
	c, pool, ks := newTestClient(t)
	job := func(id string) string { return fmt.Sprintf(`{"name":"d","id":%q,"t":1,"args":{}}`, id) }
	scores := map[string]string{"frac": "5.75", "negfrac": "-3.5", "zero": "0.25", "far": "1e18", "inf": "+inf", "minf": "-inf", "plain": "7"}
	for id, sc := range scores {
		rdo(t, pool, "ZADD", ks.Dead(), sc, job(id))
	}
	jobs, total, err := c.DeadJobs(1)
	if err != nil || total != int64(len(scores)) {
		t.Fatalf("DeadJobs: %d, %v", total, err)
	}
	listed := map[string]int64{}
	for _, j := range jobs {
		listed[j.ID] = j.DiedAt
	}
	want := map[string]int64{"frac": 5, "negfrac": -3, "zero": 0, "far": 1e18, "inf": math.MaxInt64, "minf": math.MinInt64, "plain": 7}
	if !reflect.DeepEqual(listed, want) {
		t.Errorf("listed scores %v, want %v", listed, want)
	}
	// Each is found again by the score it was listed with, and only by that.
	for id, sc := range want {
		if err := c.DeleteDeadJob(sc+1, id); sc != math.MaxInt64 && !errors.Is(err, ErrNotDeleted) {
			t.Errorf("%s found at the wrong score %d: %v", id, sc+1, err)
		}
		if id == "plain" {
			continue
		}
		if err := c.RetryDeadJob(sc, id); err != nil {
			t.Errorf("RetryDeadJob(%d, %q): %v", sc, id, err)
		}
	}
	// RetryAllDeadJobs reaches a member scored +inf.
	rdo(t, pool, "ZADD", ks.Dead(), "+inf", job("inf2"), "1", job("one"))
	if err := c.RetryAllDeadJobs(); err != nil {
		t.Fatal(err)
	}
	if n := rInt(t, pool, "ZCARD", ks.Dead()); n != 0 {
		t.Errorf("%d dead jobs left, want 0", n)
	}
	if n := rInt(t, pool, "LLEN", ks.Jobs("d")); n != 9 {
		t.Errorf("%d jobs queued, want 9", n)
	}
}

func TestClientDeletesOnlyUniqueLocksNeverTheKeyAPayloadNames(t *testing.T) {
	t.Parallel()
	c, pool, ks := newTestClient(t)
	victim := ks.Jobs("victim")
	rdo(t, pool, "LPUSH", victim, "precious")
	crafted := func(id string) []byte {
		return clientJobBytes(t, &Job{Name: "u", ID: id, EnqueuedAt: 1, Unique: true, UniqueKey: victim})
	}
	rdo(t, pool, "ZADD", ks.Scheduled(), 10, crafted("s"))
	rdo(t, pool, "LPUSH", ks.Jobs("u"), crafted("q"))
	if err := c.DeleteScheduledJob(10, "s"); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteQueuedJob("u", "q"); err != nil {
		t.Fatal(err)
	}
	if n := rInt(t, pool, "LLEN", victim); n != 1 {
		t.Errorf("deleting jobs whose unique_key names another key deleted it")
	}
}
