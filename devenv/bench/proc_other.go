//go:build !linux

package bench

import "syscall"

func childSysProcAttr() *syscall.SysProcAttr { return nil }
