package rdb

import "strings"

// UniqueLock returns the unique lock of a job: the lock of its name and args (or key map, see
// Keyspace.Unique) and, for a keyed job (key not ""), that lock ending with a newline (added for nil
// args, whose lock has none), then "key:" and the key, so that identical jobs of two keys are not
// duplicates.
func (s *Store) UniqueLock(name string, args map[string]interface{}, key string) (string, error) {
	lock, err := s.Ks.Unique(name, args)
	if err != nil || key == "" {
		return lock, err
	}
	if !strings.HasSuffix(lock, "\n") {
		lock += "\n"
	}
	return lock + "key:" + key, nil
}

// IsUniqueLockOf reports whether lock is a unique lock of the job name: a payload's unique_key is
// trusted only then, so that a crafted payload cannot make the library delete another key.
func (s *Store) IsUniqueLockOf(name, lock string) bool {
	return strings.HasPrefix(lock, s.Ks.UniquePrefix(name))
}
