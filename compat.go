package work

// Calls that gocraft/work accepts with odd inputs, kept working here.

import (
	"errors"
)

// errNoPool is the error of every method of a Client made with a nil *redis.Pool. gocraft/work's
// NewClient took nil (its methods then panicked), so programs build Clients they may never use.
var errNoPool = errors.New("work: the Client has no Redis pool (NewClient was given nil)")
