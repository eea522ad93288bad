package ctrdtest

import "syscall"

// newProcessGroup puts a child in its own process group.
func newProcessGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
