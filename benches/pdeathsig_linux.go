package main

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal makes the kernel kill the child when the thread that started it exits.
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
