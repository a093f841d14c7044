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
	keys     []sampleKey // reused buffer; used under the readiness lock
	cum      []float64   // reused buffer of cumulative weights; used by the pool's loop
}

type sampleKey struct {
	name string
	key  float64
}

func newPrioritySampler(priority map[string]uint, strict bool) prioritySampler {
	return prioritySampler{priority: priority, strict: strict}
}

// order appends to out up to maxCandidates of the ready names, in sampled order, and returns it. It
// draws an exponential variate with rate = priority per name and sorts ascending
// (Efraimidis-Spirakis): O(k log k) in the number k of ready queues. In strict mode the order is by
// priority, highest first.
func (s *prioritySampler) order(ready map[string]bool, out []string) []string {
	s.keys = s.keys[:0]
	for name := range ready {
		w := s.weight(name)
		key := -math.Log(1-rand.Float64()) / w
		if s.strict {
			key = -w - rand.Float64()/2 // whole priorities apart: the random part only breaks ties
		}
		s.keys = append(s.keys, sampleKey{name: name, key: key})
	}
	sort.Slice(s.keys, func(i, j int) bool { return s.keys[i].key < s.keys[j].key })
	n := min(len(s.keys), maxCandidates)
	for i := 0; i < n; i++ {
		out = append(out, s.keys[i].name)
	}
	return out
}

func (s *prioritySampler) weight(name string) float64 {
	if w := float64(s.priority[name]); w > 0 {
		return w
	}
	return 1
}

// shares splits n jobs over the ordered candidates names, appending each one's share to out: each
// job goes to a queue drawn at random by Priority, so a fetch of many jobs keeps the proportions a
// fetch of one would have (a queue of priority 900 next to one of 100 gets about 90% of every
// batch, not all of nine batches in ten). In strict mode all go to the first; what a queue cannot
// give passes down the order when the jobs are fetched.
func (s *prioritySampler) shares(names []string, n int, out []int) []int {
	out = out[:0]
	for range names {
		out = append(out, 0)
	}
	if len(names) == 0 {
		return out
	}
	if s.strict || len(names) == 1 {
		out[0] = n
		return out
	}
	s.cum = s.cum[:0]
	total := 0.0
	for _, name := range names {
		total += s.weight(name)
		s.cum = append(s.cum, total)
	}
	for j := 0; j < n; j++ {
		x := rand.Float64() * total
		i := 0
		for i < len(s.cum)-1 && x >= s.cum[i] {
			i++
		}
		out[i]++
	}
	return out
}
