package work

import (
	"sync"
	"testing"
)

// A notice is kept (once) between a give and the wait for it, so that a waiter that watches, then
// checks, then waits loses none; many givers at once leave one.
func TestNoticeKeepsOneWhileWatched(t *testing.T) {
	n := newNotice()
	n.give()
	if len(n.wait()) != 0 {
		t.Fatal("a notice given while not watched was kept")
	}
	n.watch(true)
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() { defer wg.Done(); n.give() }()
	}
	wg.Wait()
	if len(n.wait()) != 1 {
		t.Fatalf("%d notices kept after 10 gives, want 1", len(n.wait()))
	}
	<-n.wait()
	n.watch(false)
	n.give()
	if len(n.wait()) != 0 {
		t.Fatal("a notice given after the watch ended was kept")
	}
}
