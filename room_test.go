package work

import (
	"sync"
	"testing"
	"time"
)

// The room's limit follows the mean run time, a hand-back stops fetching ahead until a job ends, and
// releases from many goroutines (the acker's submits) are all counted.
func TestRoomReservesAndReleases(t *testing.T) {
	r := newRoom(4)
	if got := r.limit(); got != 4 {
		t.Fatalf("limit %d before any job ran, want one per worker (4)", got)
	}
	r.meanRun.Store(int64(aheadWait))
	if got := r.limit(); got != 8 {
		t.Fatalf("limit %d for jobs of aheadWait, want 8", got)
	}
	r.handedBack()
	if got := r.limit(); got != 4 {
		t.Fatalf("limit %d after a hand-back, want 4", got)
	}
	const jobs = 100
	for range jobs {
		r.reserve()
	}
	if got := r.free(); got != 4-jobs {
		t.Fatalf("free %d with %d held, want %d", got, jobs, 4-jobs)
	}
	var wg sync.WaitGroup
	for range jobs {
		wg.Add(1)
		go func() { defer wg.Done(); r.release() }()
	}
	wg.Wait()
	if held, releases := r.held.Load(), r.releases.Load(); held != 0 || releases != jobs {
		t.Fatalf("held %d, releases %d after releasing every job, want 0 and %d", held, releases, jobs)
	}
	if got := r.limit(); got != 8 {
		t.Fatalf("limit %d once a job ended after a hand-back, want 8 again", got)
	}
}

// A fetcher waiting for room hears of a release; a release while no one waits costs no notice.
func TestRoomFreedWakesAWaitingFetcher(t *testing.T) {
	r := newRoom(1)
	r.reserve()
	r.release() // not watched: nothing is kept for a later wait
	select {
	case <-r.freed.wait():
		t.Fatal("a release no one watched left a notice")
	default:
	}
	r.reserve()
	r.freed.watch(true)
	go r.release()
	select {
	case <-r.freed.wait():
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting fetcher never heard of the release")
	}
	r.freed.watch(false)
	if r.free() != 1 {
		t.Fatalf("free %d after the release, want 1", r.free())
	}
}
