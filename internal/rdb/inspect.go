package rdb

import "context"

// The Client's walks over the layout's sets and lists, a chunk a round trip: the caller decodes and
// matches the members, the store reads them. A walk stops when its callback returns false (or an
// error), and reads no further than it must.

// ChunkSize bounds the members one round trip of a walk reads (and a bulk repair moves).
const ChunkSize = 1000

// EachAtScore calls fn with the members of the sorted set at whose score reads as score (as the
// pages list it: see ParseScore), a chunk at a time, until fn returns false or none is left.
func (s *Store) EachAtScore(ctx context.Context, at Place, score int64, fn func([]Zmember) bool) error {
	lo, hi := ScoreBounds(score)
	for offset := 0; ; offset += ChunkSize {
		members, err := s.ZsetByScore(ctx, at, lo, hi, offset, ChunkSize)
		if err != nil {
			return err
		}
		if !fn(members) || len(members) < ChunkSize {
			return nil
		}
	}
}

// WalkSet walks the sorted set at in score order, up to its highest score when the walk began (so
// that members added meanwhile cannot keep it going), a chunk at a time. act gets each chunk,
// removes some of its members from the set, and returns how many it left there, which the walk then
// skips. A member removed by someone else during the walk may make it skip as many members again:
// those stay for a later walk.
func (s *Store) WalkSet(ctx context.Context, at Place, act func([]Zmember) (left int, err error)) error {
	last, ok, err := s.ZsetMaxBound(ctx, at)
	if err != nil || !ok {
		return err
	}
	offset := 0 // members left behind ahead of the next chunk
	for {
		members, err := s.ZsetByScore(ctx, at, "-inf", last, offset, ChunkSize)
		if err != nil || len(members) == 0 {
			return err
		}
		left, err := act(members)
		if err != nil {
			return err
		}
		offset += left
		if len(members) < ChunkSize {
			return nil
		}
	}
}

// ScanSet calls fn with the members of the sorted set at that match the glob pattern, a ZSCAN step
// at a time, until fn returns false or the scan ends. A member that moves during the scan may be
// missed or seen twice.
func (s *Store) ScanSet(ctx context.Context, at Place, pattern string, fn func([]Zmember) bool) error {
	cursor := "0"
	for {
		next, members, err := s.Zscan(ctx, at, cursor, pattern, ChunkSize)
		if err != nil {
			return err
		}
		if !fn(members) || next == "0" {
			return nil
		}
		cursor = next
	}
}

// EachSetChunk calls fn with the members of the sorted set at in score order, a chunk at a time by
// rank, until fn returns false or the set ends.
func (s *Store) EachSetChunk(ctx context.Context, at Place, fn func([]Zmember) bool) error {
	for start := int64(0); ; start += ChunkSize {
		members, _, err := s.ZsetPage(ctx, at, start, start+ChunkSize-1)
		if err != nil {
			return err
		}
		if !fn(members) || len(members) < ChunkSize {
			return nil
		}
	}
}

// EachListChunk calls fn with the list at from its head (the newest job), a chunk at a time, until fn
// returns false or the list ends. Reading by index from the head, a job pushed meanwhile only shifts
// the jobs not yet read further on, so none is skipped. The entries of a keyed in-progress list are
// handed over as the jobs' payloads (see SplitKeyedEntry).
func (s *Store) EachListChunk(ctx context.Context, at Place, fn func([][]byte) bool) error {
	for start := int64(0); ; start += ChunkSize {
		chunk, err := s.ListRange(ctx, at, start, start+ChunkSize-1)
		if err != nil {
			return err
		}
		n := len(chunk)
		if at.kind == placeKeyedInProgress {
			for i, entry := range chunk {
				_, chunk[i] = SplitKeyedEntry(entry)
			}
		}
		if !fn(chunk) || n < ChunkSize {
			return nil
		}
	}
}
