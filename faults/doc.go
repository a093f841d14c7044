// Package faults holds the crash and fault tests of package work. It has no API: its tests start
// their own redis-server processes (append-only file on), run worker pools in separate OS processes
// (the program in internal/worker), enqueue tens of thousands of jobs and then kill, stop, freeze and
// restart things while the jobs run. At the end every job must be accounted for: completed, or in the
// dead set when it was meant to die, never lost, never stuck in an in-progress list.
//
// Run them with
//
//	go test -race -count=1 -v ./faults/
//
// They need redis-server on PATH (they skip otherwise) and the go command (to build the worker
// program). WORK_FAULTS_JOBS=N changes the number of jobs per scenario (default 20000);
// WORK_FAULTS_SOAK=1, or the -soak flag, runs every scenario for longer with five times the jobs.
// WORK_FAULTS_WORKER_RACE=1 builds the worker program with the race detector.
package faults
