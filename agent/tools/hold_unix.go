//go:build unix

package tools

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// holdProcess stops the command's processes: its cgroup frozen where the
// groups have a freezer, else every process of it SIGSTOPped.
func (x *execution) holdProcess() (func(), error) {
	if x.run.Freezable() {
		if err := x.run.Freeze(); err != nil {
			_ = x.run.Thaw()
			return nil, err
		}
		return func() { _ = x.run.Thaw() }, nil
	}
	pids := stopTree(x.cmd.Process.Pid, x.pgid)
	return func() {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}, nil
}

// stopTree SIGSTOPs root, its descendants and the members of group until a
// pass finds no new one (a process forking meanwhile is caught by the next
// pass), then waits until each is stopped. It returns the pids stopped.
func stopTree(root, group int) []int {
	stopped := map[int]bool{}
	var order []int
	for range 50 {
		found := false
		for _, pid := range treeOf(root, group) {
			if !stopped[pid] && syscall.Kill(pid, syscall.SIGSTOP) == nil {
				stopped[pid], order, found = true, append(order, pid), true
			}
		}
		if !found {
			break
		}
	}
	deadline := time.Now().Add(time.Second)
	for _, pid := range order {
		for s := procState(pid); strings.ContainsAny(s, "RSD") && time.Now().Before(deadline); s = procState(pid) {
			time.Sleep(time.Millisecond)
		}
	}
	return order
}

// treeOf is root, every process descending from it and every member of
// process group group, from /proc.
func treeOf(root, group int) []int {
	entries, _ := os.ReadDir("/proc")
	parent, pgrp := map[int]int{}, map[int]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp, pg, ok := statOf(pid); ok {
			parent[pid], pgrp[pid] = pp, pg
		}
	}
	in := map[int]bool{root: true}
	for changed := true; changed; {
		changed = false
		for pid, pp := range parent {
			if !in[pid] && (in[pp] || pgrp[pid] == group) {
				in[pid], changed = true, true
			}
		}
	}
	out := make([]int, 0, len(in))
	for pid := range in {
		out = append(out, pid)
	}
	return out
}

// statOf is a process's parent and process group.
func statOf(pid int) (ppid, pgrp int, ok bool) {
	f := statFields(pid)
	if len(f) < 3 {
		return 0, 0, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	return ppid, pgrp, err1 == nil && err2 == nil
}

// procState is a process's state letter ("" when it is gone).
func procState(pid int) string {
	if f := statFields(pid); len(f) > 0 {
		return f[0]
	}
	return ""
}

// statFields are the fields of /proc/<pid>/stat after the command name.
func statFields(pid int) []string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+1:])
}
