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

	exportOpts := work.JobOptions{MaxFails: 2}
	metrics := workprom.NewCollector("my_app", pool, workprom.WithJobOptions("export", exportOpts))
	prometheus.MustRegister(metrics)

	wp := work.NewWorkerPool(struct{}{}, 10, "my_app", pool)
	wp.Middleware(metrics.Middleware) // first, so that it times the other middleware too
	wp.JobWithOptions("export", exportOpts, func(job *work.Job) error { return nil })
	wp.Start()
	defer wp.Stop()

	http.Handle("/metrics", promhttp.Handler())
	_ = http.ListenAndServe(":2112", nil)
}
