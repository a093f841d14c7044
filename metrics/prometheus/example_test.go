package workprom_test

import (
	"net/http"

	"github.com/gomodule/redigo/redis"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/workqueue/work"
	workprom "github.com/workqueue/work/metrics/prometheus"
)

func ExampleNewCollector() {
	pool := &redis.Pool{Dial: func() (redis.Conn, error) { return redis.Dial("tcp", ":6379") }}

	metrics := workprom.NewCollector("my_app", pool)
	prometheus.MustRegister(metrics)

	wp := work.NewWorkerPoolWithOptions(struct{}{}, 10, "my_app", pool,
		work.WorkerPoolOptions{OnOutcome: metrics.OnOutcome})
	wp.JobWithOptions("export", work.JobOptions{MaxFails: 2}, func(job *work.Job) error { return nil })
	wp.Start()
	defer wp.Stop()

	http.Handle("/metrics", promhttp.Handler())
	_ = http.ListenAndServe(":2112", nil)
}
