module github.com/workqueue/work/goredis

go 1.22

require (
	github.com/gomodule/redigo v1.9.3
	github.com/redis/go-redis/v9 v9.14.1
	github.com/workqueue/work v0.1.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
	github.com/robfig/cron/v3 v3.0.1 // indirect
)
