module github.com/workqueue/work

go 1.22

require (
	github.com/gomodule/redigo v1.9.3
	github.com/robfig/cron/v3 v3.0.1
	go.uber.org/goleak v1.3.0
)
