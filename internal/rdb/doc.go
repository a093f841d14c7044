// Package rdb is the library's one layer that knows Redis: the key names of the documented layout
// (Keyspace, Place), the Lua scripts that move a job from one state to the next (lua/, one file per
// script with a header of its KEYS, ARGV and reply, embedded by scripts.go), the subscriptions, and
// the Store, whose named operations the root package calls for every transition and every read. No
// file outside this package builds a key or sends a command (the root's boundary_test.go checks it).
//
// The files, by family of state: store.go (the keyspace, enqueue, the exchange of outcomes and
// fetches, heartbeats, the reaper, due work), admin.go (the Client's reads and repairs of the sets
// and queues), inspect.go (its walks over them, a chunk a round trip), keyed.go (keyed jobs),
// workflow.go (batches, dependencies, job records), progress.go (observations and progress),
// schedules.go (run-time schedules), places.go (where a job is, without its key), subscribe.go
// (wake-ups and job ends), unique.go (unique locks), errors.go (what Redis or a script refused) and
// backend.go (the connection).
//
// Every script touches only keys of one namespace, so a namespace written with a hash tag ("{app}")
// keeps every script on one Redis Cluster slot. Scripts never re-encode job JSON: payload bytes are
// copied as opaque strings, and any new payload (a retry, a dead-letter record) is encoded by the
// caller.
package rdb
