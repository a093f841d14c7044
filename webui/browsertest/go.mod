module github.com/workqueue/work/webui/browsertest

go 1.22

require (
	github.com/chromedp/cdproto v0.0.0-20240801214329-3f85d328b335
	github.com/chromedp/chromedp v0.10.0
	github.com/gomodule/redigo v1.9.3
	github.com/workqueue/work v0.1.0
)

require (
	github.com/chromedp/sysutil v1.0.0 // indirect
	github.com/gobwas/httphead v0.1.0 // indirect
	github.com/gobwas/pool v0.2.1 // indirect
	github.com/gobwas/ws v1.4.0 // indirect
	github.com/josharian/intern v1.0.0 // indirect
	github.com/mailru/easyjson v0.7.7 // indirect
	github.com/robfig/cron/v3 v3.0.1 // indirect
	golang.org/x/sys v0.22.0 // indirect
)
