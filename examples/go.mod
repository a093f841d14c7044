module github.com/workqueue/work/examples

go 1.22

require (
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/gomodule/redigo v1.9.3
	github.com/workqueue/work v0.1.0
)

require (
	github.com/robfig/cron/v3 v3.0.1 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
)
