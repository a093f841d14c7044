module github.com/workqueue/work/cmd

go 1.22

require (
	github.com/gomodule/redigo v1.9.3
	github.com/spf13/cobra v1.10.2
	github.com/workqueue/work v0.1.0
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/robfig/cron/v3 v3.0.1 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
)
