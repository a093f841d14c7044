package rdb

import (
	"errors"
	"testing"

	"github.com/gomodule/redigo/redis"
)

// A pipelined script call that the server refuses for lacking the script is told from any other
// error, as a reply or as an error.
func TestNoScript(t *testing.T) {
	missing := redis.Error("NOSCRIPT No matching script. Please use EVAL.")
	for _, c := range []struct {
		v    interface{}
		err  error
		want bool
	}{
		{nil, missing, true},
		{missing, nil, true},
		{nil, redis.Error("ERR something else"), false},
		{redis.Error("WRONGTYPE Operation against a key"), nil, false},
		{int64(1), nil, false},
		{nil, errors.New("NOSCRIPT, but not from Redis"), false},
	} {
		if got := noScript(c.v, c.err); got != c.want {
			t.Errorf("noScript(%v, %v) = %v, want %v", c.v, c.err, got, c.want)
		}
	}
}
