package rdb

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gomodule/redigo/redis"
)

// The errors the store's operations return for what Redis or a script refused. The root package
// exports each under the same name (errors.go there documents them for callers).
var (
	ErrNotReplicated     = errors.New("work: the job was not acknowledged by enough replicas")
	ErrKeyFull           = errors.New("work: too many jobs of the key waiting")
	ErrDamagedSchedule   = errors.New("work: damaged schedule record")
	ErrBatchNotFound     = errors.New("work: batch not found")
	ErrBatchComplete     = errors.New("work: batch already complete")
	ErrBatchEmpty        = errors.New("work: batch has no members")
	ErrBatchExists       = errors.New("work: batch already exists")
	ErrUnknownDependency = errors.New("work: unknown dependency")
	ErrWrongType         = errors.New("work: the namespace holds a key of another type")
)

// wrongType wraps Redis's WRONGTYPE reply (a key that another program overwrote with a value of
// another type) as ErrWrongType, keeping the reply for errors.As; other errors pass unchanged.
func wrongType(err error) error {
	var re redis.Error
	if errors.As(err, &re) && strings.HasPrefix(string(re), "WRONGTYPE") && !errors.Is(err, ErrWrongType) {
		return fmt.Errorf("%w: %w", ErrWrongType, err)
	}
	return err
}

// batchError turns the batch scripts' refusals into the package's errors.
func batchError(err error) error {
	var re redis.Error
	if !errors.As(err, &re) {
		return err
	}
	switch msg := string(re); {
	case strings.HasPrefix(msg, "WORKBATCH exists"):
		return ErrBatchExists
	case strings.HasPrefix(msg, "WORKBATCH unknown"):
		return ErrBatchNotFound
	case strings.HasPrefix(msg, "WORKBATCH complete"):
		return ErrBatchComplete
	case strings.HasPrefix(msg, "WORKBATCH empty"):
		return ErrBatchEmpty
	}
	return err
}

// dependencyError turns the refusal of a dependency without a record into ErrUnknownDependency,
// naming it without its kind prefix ("j:" or "b:").
func dependencyError(err error) error {
	var re redis.Error
	if errors.As(err, &re) && strings.HasPrefix(string(re), "WORKDEP unknown ") {
		dep := strings.TrimPrefix(string(re), "WORKDEP unknown ")
		if len(dep) > 2 {
			dep = dep[2:]
		}
		return fmt.Errorf("%w: %s", ErrUnknownDependency, dep)
	}
	return err
}
