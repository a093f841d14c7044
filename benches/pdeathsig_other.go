//go:build !linux

package main

import "os/exec"

// setParentDeathSignal is a no-op outside Linux: the server is stopped by the harness's own cleanup.
func setParentDeathSignal(cmd *exec.Cmd) {}
