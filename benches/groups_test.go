package main

import (
	"testing"

	"github.com/hibiken/asynq"
)

// TestPackTasks checks that the aggregated task's handler counts every member, empty payloads too.
func TestPackTasks(t *testing.T) {
	var tasks []*asynq.Task
	for _, p := range []string{"", "a", "", "longer payload"} {
		tasks = append(tasks, asynq.NewTask(groupedJobName, []byte(p)))
	}
	agg := packTasks("g0", tasks)
	if agg.Type() != aggregatedTask {
		t.Fatalf("type %q", agg.Type())
	}
	k, err := countPacked(agg.Payload())
	if err != nil || k != len(tasks) {
		t.Fatalf("countPacked = %d, %v; want %d", k, err, len(tasks))
	}
	if _, err := countPacked([]byte{5, 'a'}); err == nil {
		t.Fatal("a truncated member was counted")
	}
}
