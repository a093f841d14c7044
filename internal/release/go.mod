module github.com/workqueue/work/internal/release

go 1.22.0

require golang.org/x/mod v0.22.0
