// Package browsertest drives the web UI in a headless Chromium: a real worker pool fills a namespace,
// and the test reads the pages and clicks their buttons as a user would. It is a module of its own so
// that the browser-automation library it needs stays out of the requirements of
// github.com/workqueue/work. It has no API: run it with go test. Without Chromium the test is
// skipped, unless CI is set (scripts/ensure-chromium.sh installs one).
package browsertest
