// Command example runs a worker pool instrumented with workprom, enqueues a few jobs a second, some
// of which fail, and serves the metrics at /metrics.
//
//	go run ./example -redis 127.0.0.1:6379 -listen :2112
//	curl -s localhost:2112/metrics | grep ^work_
package main

import (
	"errors"
	"flag"
	"log"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/workqueue/work"
	workprom "github.com/workqueue/work/metrics/prometheus"
)

func main() {
	addr := flag.String("redis", "127.0.0.1:6379", "Redis address")
	ns := flag.String("ns", "workprom_example", "work namespace")
	listen := flag.String("listen", ":2112", "address to serve /metrics on")
	flag.Parse()

	pool := &redis.Pool{
		MaxActive: 10, MaxIdle: 10, Wait: true,
		Dial: func() (redis.Conn, error) { return redis.Dial("tcp", *addr) },
	}
	defer pool.Close()

	resizeOpts := work.JobOptions{MaxFails: 2}
	metrics := workprom.NewCollector(*ns, pool)
	prometheus.MustRegister(metrics)

	wp := work.NewWorkerPoolWithOptions(struct{}{}, 4, *ns, pool, work.WorkerPoolOptions{OnOutcome: metrics.OnOutcome})
	wp.Job("send_email", func(job *work.Job) error {
		time.Sleep(time.Duration(rand.IntN(50)) * time.Millisecond)
		return nil
	})
	wp.JobWithOptions("resize_image", resizeOpts, func(job *work.Job) error {
		time.Sleep(time.Duration(rand.IntN(300)) * time.Millisecond)
		if rand.IntN(4) == 0 {
			return errors.New("image is corrupt")
		}
		return nil
	})
	wp.Start()
	defer wp.Stop()

	enqueuer := work.NewEnqueuer(*ns, pool)
	go func() {
		for range time.Tick(200 * time.Millisecond) {
			if _, err := enqueuer.Enqueue("send_email", work.Q{"to": "someone@example.com"}); err != nil {
				log.Print(err)
			}
			if _, err := enqueuer.Enqueue("resize_image", work.Q{"id": rand.IntN(1000)}); err != nil {
				log.Print(err)
			}
		}
	}()

	http.Handle("/metrics", promhttp.Handler())
	srv := &http.Server{Addr: *listen, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		log.Printf("serving metrics on http://%s/metrics", *listen)
		if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
			log.Fatal(err)
		}
	}()

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	_ = srv.Close()
}
