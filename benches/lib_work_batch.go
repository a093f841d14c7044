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
