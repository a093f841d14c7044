module github.com/workqueue/work/interop

go 1.22

require (
	github.com/gocraft/work v0.5.1
	github.com/gomodule/redigo v1.9.3
	github.com/workqueue/work v0.1.0
)

require (
	github.com/robfig/cron v1.2.0 // indirect
	github.com/robfig/cron/v3 v3.0.1 // indirect
)
