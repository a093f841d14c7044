package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work/internal/redistest"
)

var testRedisAddr = redistest.Addr

func TestEnqueuesOneJob(t *testing.T) {
	ns := fmt.Sprintf("workenqueue-test-%d", os.Getpid())
	c, err := redis.Dial("tcp", testRedisAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	defer c.Do("DEL", ns+":jobs:mail", ns+":known_jobs")

	var out, errb bytes.Buffer
	code := run([]string{"-redis", testRedisAddr(), "-ns", ns, "-job", "mail", "-args", `{"to":"a@b.c","n":12345678901234567890}`}, &out, &errb)
	if code != 0 || len(strings.TrimSpace(out.String())) != 24 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	q, _ := redis.Strings(c.Do("LRANGE", ns+":jobs:mail", 0, -1))
	if len(q) != 1 || !strings.Contains(q[0], `"n":12345678901234567890`) || !strings.Contains(q[0], strings.TrimSpace(out.String())) {
		t.Errorf("queue %q", q)
	}
	code = run([]string{"-redis", testRedisAddr(), "-ns", ns, "-job", "mail", "-payload", `{"x":1}`}, &out, &errb)
	if n, _ := redis.Int(c.Do("LLEN", ns+":jobs:mail")); code != 0 || n != 2 {
		t.Errorf("-payload: exit %d, %d jobs", code, n)
	}
	// gocraft/work's command exits with 1 without -job or with -args not an object; the flag
	// package's errors exit with 2.
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"-ns", ns}, 1},
		{[]string{"-job", "x", "-args", "[1]"}, 1},
		{[]string{"-job", "x", "-redis", "ftp://x"}, 2},
		{[]string{"-nope"}, 2},
	} {
		errb.Reset()
		if code := run(tc.args, &out, &errb); code != tc.code || errb.Len() == 0 {
			t.Errorf("%q: exit %d, want %d; stderr %q", tc.args, code, tc.code, errb.String())
		}
	}
	if code := run([]string{"-redis", "127.0.0.1:1", "-job", "x"}, &out, &errb); code != 1 {
		t.Errorf("unreachable Redis: exit %d", code)
	}
}
