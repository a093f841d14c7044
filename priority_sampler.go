package work

import (
	"math"
	"math/rand/v2"
	"sort"
)

// maxCandidates bounds how many queues one fetch names, so a fetch costs the same however many job
// names are registered; queues not named stay ready for the next fetch.
const maxCandidates = 16

// prioritySampler orders ready queues by weighted random sampling without replacement on their
// Priority: a queue with priority 100 out of a total of 1000 comes first about 10% of the time.
type prioritySampler struct {
	priority map[string]uint
	strict   bool        // highest priority first, ties in random order
	keys     []sampleKey // reused buffer; used under the fetcher's lock
}

type sampleKey struct {
	name string
	key  float64
}

func newPrioritySampler(priority map[string]uint, strict bool) prioritySampler {
	return prioritySampler{priority: priority, strict: strict}
}

// order returns up to maxCandidates of the ready names, in sampled order. It draws an exponential
// variate with rate = priority per name and sorts ascending (Efraimidis-Spirakis): O(k log k) in the
// number k of ready queues. In strict mode the order is by priority, highest first.
func (s *prioritySampler) order(ready map[string]bool) []string {
	s.keys = s.keys[:0]
	for name := range ready {
		w := float64(s.priority[name])
		if w <= 0 {
			w = 1
		}
		key := -math.Log(1-rand.Float64()) / w
		if s.strict {
			key = -w - rand.Float64()/2 // whole priorities apart: the random part only breaks ties
		}
		s.keys = append(s.keys, sampleKey{name: name, key: key})
	}
	sort.Slice(s.keys, func(i, j int) bool { return s.keys[i].key < s.keys[j].key })
	n := min(len(s.keys), maxCandidates)
	out := make([]string, n)
	for i := 0; i < n; i++ {
		out[i] = s.keys[i].name
	}
	return out
}
