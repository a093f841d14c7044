// Command copylocks copies the library's values the way gocraft/work's users did (Harbor's job
// service reads a pool's ID with reflect.ValueOf(*pool)), so that go vet's copylocks check, run on
// it by TestValuesHoldNoLocks, fails if one of them comes to hold a lock by value.
package main

import (
	"fmt"
	"reflect"

	"github.com/workqueue/work"
)

func main() {
	var pool *work.WorkerPool
	var client *work.Client
	var job *work.Job
	if pool != nil {
		fmt.Println(reflect.ValueOf(*pool).FieldByName("workerPoolID").String())
	}
	if client != nil {
		c := *client
		fmt.Println(c)
	}
	if job != nil {
		j := *job
		fmt.Println(j.Name)
	}
}
