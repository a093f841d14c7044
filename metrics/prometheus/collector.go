// Package workprom exports the state of a work namespace and the outcomes of its jobs as Prometheus
// metrics.
//
// A Collector does two things:
//
//   - its OnOutcome method, given to a WorkerPool as WorkerPoolOptions.OnOutcome, counts the jobs this
//     process runs by what became of them, and times them, per job name;
//   - at every scrape it reads the namespace from Redis through work.Client: queue sizes and latencies,
//     paused queues, the scheduled, retry and dead sets, worker pools and busy or idle workers, the
//     pending bursts of debounced enqueues, the groups of grouped jobs, and the backlogs that relays
//     report.
//
// Registering it is one line, and wiring the pool another:
//
//	m := workprom.NewCollector("my_app", redisPool)
//	prometheus.MustRegister(m)
//	wp := work.NewWorkerPoolWithOptions(Context{}, 10, "my_app", redisPool,
//		work.WorkerPoolOptions{OnOutcome: m.OnOutcome})
//	http.Handle("/metrics", promhttp.Handler())
//
// # Metrics
//
// Every metric has the constant label namespace, so collectors of several namespaces can share a
// registry. Counted from the pool's outcomes, in this process only (sum them over your instances):
//
//	work_jobs_processed_total{job_name}       runs that ended, successful or not
//	work_jobs_failed_total{job_name}          runs that failed: an error, a panic, a timeout, a cancel
//	work_jobs_retried_total{job_name}         failed runs whose job went to the retry set
//	work_jobs_dead_total{job_name}            failed runs whose job went to the dead set or was dropped
//	work_jobs_snoozed_total{job_name}         runs that returned work.Snooze (not failures)
//	work_job_duration_seconds{job_name}       histogram of run durations, middleware to handler end
//
// Read from Redis at scrape time, for the whole namespace (every instance reports the same values:
// aggregate them with max, not sum, or use WithoutNamespaceMetrics on all instances but one):
//
//	work_queue_jobs{job_name}                 jobs waiting in the queue
//	work_queue_latency_seconds{job_name}      age of the oldest waiting job
//	work_queue_paused{job_name}               1 when the queue is paused
//	work_scheduled_jobs                       jobs in the scheduled set
//	work_retry_jobs                           failed jobs waiting for a retry
//	work_dead_jobs                            jobs in the dead set
//	work_worker_pools                         worker pools with a heartbeat
//	work_workers{state="busy"|"idle"}         workers of those pools
//	work_jobs_running{job_name}               busy workers by the job they run
//	work_dead_jobs_trimmed_total              dead jobs trimmed under DeadMaxJobs and DeadMaxAge
//	work_scrape_success                       1 when every read from Redis succeeded
//
// Keyed jobs (EnqueueOptions.Key), per job name that has had some, summed over its keys: there is no
// label per key, whose number has no bound (Client.Keys lists the keys themselves):
//
//	work_keyed_jobs_waiting{job_name}         keyed jobs waiting, over all keys
//	work_keyed_keys_waiting{job_name}         keys with jobs waiting
//	work_keyed_keys_running{job_name}         keys with jobs running
//	work_keyed_largest_backlog_jobs{job_name} jobs waiting for the key with the most of them
//	work_keyed_keys_paused{job_name}          keys paused with Client.PauseKey
//
// Debounced enqueues (EnqueueOptions.Debounce), per job name with a burst whose job has not run yet,
// as Client.PendingBursts lists them (the work.MaxPendingBursts soonest to run at most):
//
//	work_debounced_pending{job_name}          bursts whose job has not run yet
//	work_debounced_oldest_seconds{job_name}   how long the oldest of them has been open (since its
//	                                          first enqueue): a burst that keeps growing up to its
//	                                          MaxWait, or one without a MaxWait, shows here
//
// Grouped jobs (EnqueueOptions.Group), per job name with a group that has jobs waiting, as
// Client.Groups lists them: there is no label per group key, whose number has no bound:
//
//	work_group_jobs{job_name}                 jobs waiting in groups, over all groups
//	work_groups{job_name}                     groups with jobs waiting
//	work_group_oldest_seconds{job_name}       age of the oldest job waiting in a group: one far past
//	                                          the name's MaxDelay means no running pool flushes them
//
// Backlogs that relays report (Enqueuer.ReportBacklog): jobs waiting in another store, such as a
// transactional outbox, to be enqueued into the namespace, per source:
//
//	work_backlog_jobs{source}                 jobs waiting in the source, as last reported
//	work_backlog_oldest_age_seconds{source}   age of the oldest of them when reported
//	work_backlog_report_age_seconds{source}   time since the last report: a growing one means no
//	                                          relay moves the source's jobs any more
//
// The metric prefix "work" can be changed with WithPrefix.
package workprom

import (
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/workqueue/work"
)

// DefaultBuckets are the upper bounds, in seconds, of the job duration histogram: from 5 ms to
// 10 minutes, for background jobs that range from a cache write to an export.
var DefaultBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// Option configures a Collector.
type Option func(*config)

type config struct {
	prefix         string
	buckets        []float64
	namespaceStats bool
}

// WithPrefix sets the metric name prefix (default "work"): WithPrefix("jobs") exports
// jobs_jobs_processed_total and so on.
func WithPrefix(prefix string) Option { return func(c *config) { c.prefix = prefix } }

// WithBuckets sets the upper bounds, in seconds, of the job duration histogram (default
// DefaultBuckets).
func WithBuckets(buckets []float64) Option {
	return func(c *config) { c.buckets = append([]float64(nil), buckets...) }
}

// WithoutNamespaceMetrics leaves out the metrics read from Redis at scrape time, keeping only the
// ones counted from outcomes. Use it on all but one of many instances that serve the same namespace,
// or where scrapes must not touch Redis.
func WithoutNamespaceMetrics() Option { return func(c *config) { c.namespaceStats = false } }

// Collector is a prometheus.Collector for one work namespace, and the outcome hook that feeds its job
// counters. Create it with NewCollector; it is safe for concurrent use.
type Collector struct {
	namespace  string
	pool       *redis.Pool
	client     *work.Client
	namespaced bool

	processed *prometheus.CounterVec
	failed    *prometheus.CounterVec
	retried   *prometheus.CounterVec
	dead      *prometheus.CounterVec
	snoozed   *prometheus.CounterVec
	duration  *prometheus.HistogramVec

	queueJobs     *prometheus.Desc
	queueLatency  *prometheus.Desc
	queuePaused   *prometheus.Desc
	scheduledJobs *prometheus.Desc
	retryJobs     *prometheus.Desc
	deadJobs      *prometheus.Desc
	workerPools   *prometheus.Desc
	workers       *prometheus.Desc
	jobsRunning   *prometheus.Desc
	deadTrimmed   *prometheus.Desc
	scrapeSuccess *prometheus.Desc

	keyedJobsWaiting *prometheus.Desc
	keyedKeysWaiting *prometheus.Desc
	keyedKeysRunning *prometheus.Desc
	keyedLargest     *prometheus.Desc
	keyedKeysPaused  *prometheus.Desc

	backlogJobs      *prometheus.Desc
	backlogOldestAge *prometheus.Desc
	backlogReportAge *prometheus.Desc

	debouncedPending *prometheus.Desc
	debouncedOldest  *prometheus.Desc

	groupJobs   *prometheus.Desc
	groups      *prometheus.Desc
	groupOldest *prometheus.Desc
}

// NewCollector returns a Collector for the namespace, reading Redis through pool at scrape time.
// Register it with a prometheus.Registerer and give its OnOutcome to the namespace's WorkerPool. It
// panics when pool is nil.
func NewCollector(namespace string, pool *redis.Pool, opts ...Option) *Collector {
	if pool == nil {
		panic("workprom: NewCollector needs a non-nil *redis.Pool")
	}
	cfg := config{prefix: "work", buckets: DefaultBuckets, namespaceStats: true}
	for _, o := range opts {
		o(&cfg)
	}
	constLabels := prometheus.Labels{"namespace": namespace}
	name := func(s string) string { return prometheus.BuildFQName(cfg.prefix, "", s) }
	desc := func(s, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name(s), help, labels, constLabels)
	}
	c := &Collector{
		namespace:  namespace,
		pool:       pool,
		client:     work.NewClient(namespace, pool),
		namespaced: cfg.namespaceStats,
		processed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: name("jobs_processed_total"), ConstLabels: constLabels,
			Help: "Job runs in this process that ended, successful or not.",
		}, []string{"job_name"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: name("jobs_failed_total"), ConstLabels: constLabels,
			Help: "Job runs in this process that failed: an error, a panic, a timeout or a cancel.",
		}, []string{"job_name"}),
		retried: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: name("jobs_retried_total"), ConstLabels: constLabels,
			Help: "Failed job runs in this process whose job went to the retry set.",
		}, []string{"job_name"}),
		dead: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: name("jobs_dead_total"), ConstLabels: constLabels,
			Help: "Failed job runs in this process whose job went to the dead set, or was dropped with SkipDead.",
		}, []string{"job_name"}),
		snoozed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: name("jobs_snoozed_total"), ConstLabels: constLabels,
			Help: "Job runs in this process that returned work.Snooze: run again later, no failure counted.",
		}, []string{"job_name"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: name("job_duration_seconds"), ConstLabels: constLabels, Buckets: cfg.buckets,
			Help: "Duration of job runs in this process.",
		}, []string{"job_name"}),
		queueJobs:     desc("queue_jobs", "Jobs waiting in the queue of a job name.", "job_name"),
		queueLatency:  desc("queue_latency_seconds", "Age of the oldest job waiting in the queue of a job name.", "job_name"),
		queuePaused:   desc("queue_paused", "1 when the queue of a job name is paused, else 0.", "job_name"),
		scheduledJobs: desc("scheduled_jobs", "Jobs in the scheduled set."),
		retryJobs:     desc("retry_jobs", "Failed jobs waiting for a retry."),
		deadJobs:      desc("dead_jobs", "Jobs in the dead set."),
		workerPools:   desc("worker_pools", "Worker pools registered in the namespace."),
		workers:       desc("workers", "Workers of the registered worker pools, busy or idle.", "state"),
		jobsRunning:   desc("jobs_running", "Busy workers of the namespace by the job name they run.", "job_name"),
		deadTrimmed:   desc("dead_jobs_trimmed_total", "Dead jobs removed under WorkerPoolOptions.DeadMaxJobs and DeadMaxAge since the namespace began."),
		scrapeSuccess: desc("scrape_success", "1 when every read from Redis of the last scrape succeeded, else 0."),

		keyedJobsWaiting: desc("keyed_jobs_waiting", "Keyed jobs of a job name waiting, over all its keys.", "job_name"),
		keyedKeysWaiting: desc("keyed_keys_waiting", "Keys of a job name with jobs waiting.", "job_name"),
		keyedKeysRunning: desc("keyed_keys_running", "Keys of a job name with jobs running.", "job_name"),
		keyedLargest:     desc("keyed_largest_backlog_jobs", "Jobs waiting for the key of a job name that has the most of them.", "job_name"),
		keyedKeysPaused:  desc("keyed_keys_paused", "Keys of a job name paused with Client.PauseKey.", "job_name"),

		backlogJobs:      desc("backlog_jobs", "Jobs waiting in a source to be enqueued, as its relay last reported.", "source"),
		backlogOldestAge: desc("backlog_oldest_age_seconds", "Age of the oldest job waiting in a source when its relay last reported, 0 when none waited.", "source"),
		backlogReportAge: desc("backlog_report_age_seconds", "Time since the relay of a source last reported its backlog.", "source"),

		debouncedPending: desc("debounced_pending", "Bursts of debounced enqueues of a job name whose job has not run yet.", "job_name"),
		debouncedOldest:  desc("debounced_oldest_seconds", "Time since the first enqueue of the oldest pending burst of a job name.", "job_name"),

		groupJobs:   desc("group_jobs", "Jobs of a job name waiting in groups to be flushed into calls.", "job_name"),
		groups:      desc("groups", "Groups of a job name with jobs waiting.", "job_name"),
		groupOldest: desc("group_oldest_seconds", "Age of the oldest job of a job name waiting in a group.", "job_name"),
	}
	return c
}

// OnOutcome counts and times one run of a job. Give it to the pool as WorkerPoolOptions.OnOutcome.
func (c *Collector) OnOutcome(o work.JobOutcome) {
	name := o.Job.Name
	c.processed.WithLabelValues(name).Inc()
	c.duration.WithLabelValues(name).Observe(o.Duration.Seconds())
	switch o.Result {
	case work.ResultSnoozed:
		c.snoozed.WithLabelValues(name).Inc()
	case work.ResultRetry:
		c.failed.WithLabelValues(name).Inc()
		c.retried.WithLabelValues(name).Inc()
	case work.ResultDead, work.ResultDropped:
		c.failed.WithLabelValues(name).Inc()
		c.dead.WithLabelValues(name).Inc()
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	c.processed.Describe(ch)
	c.failed.Describe(ch)
	c.retried.Describe(ch)
	c.dead.Describe(ch)
	c.snoozed.Describe(ch)
	c.duration.Describe(ch)
	if !c.namespaced {
		return
	}
	for _, d := range []*prometheus.Desc{c.queueJobs, c.queueLatency, c.queuePaused, c.scheduledJobs,
		c.retryJobs, c.deadJobs, c.workerPools, c.workers, c.jobsRunning, c.deadTrimmed, c.scrapeSuccess,
		c.keyedJobsWaiting, c.keyedKeysWaiting, c.keyedKeysRunning, c.keyedLargest, c.keyedKeysPaused,
		c.backlogJobs, c.backlogOldestAge, c.backlogReportAge, c.debouncedPending, c.debouncedOldest,
		c.groupJobs, c.groups, c.groupOldest} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. It reads the namespace from Redis (unless
// WithoutNamespaceMetrics was given); a failed read leaves out the metrics it would have given and
// sets work_scrape_success to 0.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.processed.Collect(ch)
	c.failed.Collect(ch)
	c.retried.Collect(ch)
	c.dead.Collect(ch)
	c.snoozed.Collect(ch)
	c.duration.Collect(ch)
	if !c.namespaced {
		return
	}
	ok := true
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}

	if queues, err := c.client.Queues(); err != nil {
		ok = false
	} else {
		names := make([]string, len(queues))
		for i, q := range queues {
			names[i] = q.JobName
			gauge(c.queueJobs, float64(q.Count), q.JobName)
			gauge(c.queueLatency, float64(q.Latency), q.JobName)
		}
		if paused, err := c.paused(names); err != nil {
			ok = false
		} else {
			for i, name := range names {
				v := 0.0
				if paused[i] {
					v = 1
				}
				gauge(c.queuePaused, v, name)
			}
		}
	}

	if _, n, err := c.client.ScheduledJobs(1); err != nil {
		ok = false
	} else {
		gauge(c.scheduledJobs, float64(n))
	}
	if _, n, err := c.client.RetryJobs(1); err != nil {
		ok = false
	} else {
		gauge(c.retryJobs, float64(n))
	}
	if _, n, err := c.client.DeadJobs(1); err != nil {
		ok = false
	} else {
		gauge(c.deadJobs, float64(n))
	}

	if n, err := c.client.DeadJobsTrimmed(); err != nil {
		ok = false
	} else {
		ch <- prometheus.MustNewConstMetric(c.deadTrimmed, prometheus.CounterValue, float64(n))
	}

	if hbs, err := c.client.WorkerPoolHeartbeats(); err != nil {
		ok = false
	} else {
		gauge(c.workerPools, float64(len(hbs)))
	}
	if obs, err := c.client.WorkerObservations(); err != nil {
		ok = false
	} else {
		busy, idle := 0, 0
		running := map[string]int{}
		for _, o := range obs {
			if o.IsBusy {
				busy++
				running[o.JobName]++
			} else {
				idle++
			}
		}
		gauge(c.workers, float64(busy), "busy")
		gauge(c.workers, float64(idle), "idle")
		for name, n := range running {
			gauge(c.jobsRunning, float64(n), name)
		}
	}

	if stats, err := c.client.KeyStats(); err != nil {
		ok = false
	} else {
		for _, st := range stats {
			gauge(c.keyedJobsWaiting, float64(st.Waiting), st.JobName)
			gauge(c.keyedKeysWaiting, float64(st.WaitingKeys), st.JobName)
			gauge(c.keyedKeysRunning, float64(st.RunningKeys), st.JobName)
			gauge(c.keyedLargest, float64(st.LargestBacklog), st.JobName)
			gauge(c.keyedKeysPaused, float64(st.PausedKeys), st.JobName)
		}
	}

	if backlogs, err := c.client.Backlogs(); err != nil {
		ok = false
	} else {
		now := time.Now()
		for _, b := range backlogs {
			gauge(c.backlogJobs, float64(b.Waiting), b.Source)
			gauge(c.backlogOldestAge, b.Age().Seconds(), b.Source)
			gauge(c.backlogReportAge, max(now.Sub(b.ReportedAt), 0).Seconds(), b.Source)
		}
	}

	if bursts, err := c.client.PendingBursts(); err != nil {
		ok = false
	} else {
		now := time.Now()
		pending, oldest := map[string]int{}, map[string]time.Time{}
		for _, b := range bursts {
			pending[b.Name]++
			if o, seen := oldest[b.Name]; !seen || b.First.Before(o) {
				oldest[b.Name] = b.First
			}
		}
		for name, n := range pending {
			gauge(c.debouncedPending, float64(n), name)
			gauge(c.debouncedOldest, max(now.Sub(oldest[name]), 0).Seconds(), name)
		}
	}

	if groups, err := c.client.Groups(""); err != nil {
		ok = false
	} else {
		now := time.Now()
		jobs, count, oldest := map[string]int64{}, map[string]int{}, map[string]time.Time{}
		for _, g := range groups {
			jobs[g.Name] += g.Size
			count[g.Name]++
			if o := oldest[g.Name]; !g.Oldest.IsZero() && (o.IsZero() || g.Oldest.Before(o)) {
				oldest[g.Name] = g.Oldest
			}
		}
		for name, n := range count {
			gauge(c.groupJobs, float64(jobs[name]), name)
			gauge(c.groups, float64(n), name)
			if o := oldest[name]; !o.IsZero() {
				gauge(c.groupOldest, max(now.Sub(o), 0).Seconds(), name)
			}
		}
	}

	success := 0.0
	if ok {
		success = 1
	}
	gauge(c.scrapeSuccess, success)
}

// paused reports, for each job name, whether its queue is paused: whether the key
// <ns>:jobs:<name>:paused exists. It reads them all in one round trip.
func (c *Collector) paused(names []string) ([]bool, error) {
	if len(names) == 0 {
		return nil, nil
	}
	conn := c.pool.Get()
	defer conn.Close()
	p := keyPrefix(c.namespace)
	for _, name := range names {
		if err := conn.Send("EXISTS", p+"jobs:"+name+":paused"); err != nil {
			return nil, err
		}
	}
	if err := conn.Flush(); err != nil {
		return nil, err
	}
	out := make([]bool, len(names))
	for i := range names {
		n, err := redis.Int(conn.Receive())
		if err != nil {
			return nil, err
		}
		out[i] = n > 0
	}
	return out, nil
}

// keyPrefix is the prefix of a namespace's keys: the namespace plus ":" unless it already ends in
// ":"; the empty namespace has none.
func keyPrefix(namespace string) string {
	if namespace == "" || namespace[len(namespace)-1] == ':' {
		return namespace
	}
	return namespace + ":"
}
