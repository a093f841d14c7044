package main

import "github.com/workqueue/work"

// enqueueBatch is work's EnqueueBatch, which gocraft/work does not have: it lives outside
// lib_work.go, so the generated gocraft/work driver has no batch enqueue (the million workload then
// uses single Enqueue calls from many goroutines, as for asynq).
func (p *workProducer) enqueueBatch(names []string, start, count int) error {
	jobs := make([]work.BatchJob, count)
	for i := range jobs {
		jobs[i].Name = names[(start+i)%len(names)]
	}
	_, err := p.e.EnqueueBatch(jobs)
	return err
}

// enqueueKeyed enqueues jobs start..start+count-1 of a job name in one EnqueueBatch call, job i with
// the key keyOf(i) ("": none) and args of kind a.
func (p *workProducer) enqueueKeyed(name string, start, count int, keyOf func(int) string, a args) error {
	jobs := make([]work.BatchJob, count)
	for i := range jobs {
		jobs[i] = work.BatchJob{Name: name, Key: keyOf(start + i), Args: workArgs(a)}
	}
	_, err := p.e.EnqueueBatch(jobs)
	return err
}
