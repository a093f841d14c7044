package redistest

import "testing"

func TestSlot(t *testing.T) {
	// Values from the Redis Cluster specification and CLUSTER KEYSLOT.
	for key, want := range map[string]int{"123456789": 12739, "foo": 12182, "{user1000}.following": 3443, "{user1000}.followers": 3443, "foo{}{bar}": 8363, "{}x": 10595} {
		if got := Slot(key); got != want {
			t.Errorf("Slot(%q) = %d, want %d", key, got, want)
		}
	}
}
