package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// mountPoint is a cgroup file system mount of this process's view.
type mountPoint struct {
	dir, root string // where it is mounted, and which group it shows as its root
	v2        bool
	opts      []string
}

func mounts() ([]mountPoint, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mountPoint
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent dev root mountpoint opts [optional...] - fstype source superopts
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		a, b := strings.Fields(pre), strings.Fields(post)
		if len(a) < 5 || len(b) < 3 || (b[0] != "cgroup" && b[0] != "cgroup2") {
			continue
		}
		out = append(out, mountPoint{dir: unescape(a[4]), root: unescape(a[3]), v2: b[0] == "cgroup2", opts: strings.Split(b[2], ",")})
	}
	return out, sc.Err()
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ownGroups maps each v1 controller (and "" for v2) to this process's group.
func ownGroups() (map[string]string, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out, nil
}

// dirOf is where group lives under mount m (false when m does not show it).
func dirOf(m mountPoint, group string) (string, bool) {
	rel, err := filepath.Rel(m.root, group)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return "", false
	}
	return filepath.Join(m.dir, rel), true
}

// Detect finds out which limits this process can enforce on its commands
// (trying to create a group is the only real test). It returns nil and the
// reason when it can enforce none.
func Detect(lim Limits) (*Manager, string) {
	ms, err := mounts()
	if err != nil {
		return nil, "reading /proc/self/mountinfo: " + err.Error()
	}
	own, err := ownGroups()
	if err != nil {
		return nil, "reading /proc/self/cgroup: " + err.Error()
	}
	m := &Manager{lim: lim, prefix: Prefix(os.Getpid())}
	var why []string
	if v2, reason := detectV2(ms, own); v2 != "" {
		m.version, m.v2Dir = 2, v2
		m.enforced = []string{Memory, Pids}
	} else {
		if reason != "" {
			why = append(why, reason)
		}
		m.version = 1
		for _, c := range []string{Memory, Pids} {
			dir, reason := detectV1(ms, own, c)
			if dir == "" {
				why = append(why, reason)
				continue
			}
			if c == Memory {
				m.memDir = dir
			} else {
				m.pidsDir = dir
			}
			m.enforced = append(m.enforced, c)
		}
	}
	if len(m.enforced) == 0 {
		return nil, strings.Join(why, "; ")
	}
	if m.version == 1 {
		// Not a limit: it lets the worker stop a command whole (Freeze).
		m.frzDir, _ = detectV1(ms, own, "freezer")
	}
	for _, dir := range []string{m.v2Dir, m.memDir, m.pidsDir, m.frzDir} {
		removeStale(dir)
	}
	return m, strings.Join(why, "; ")
}

func detectV1(ms []mountPoint, own map[string]string, controller string) (string, string) {
	group, ok := own[controller]
	if !ok {
		return "", "no cgroup v1 " + controller + " hierarchy"
	}
	for _, m := range ms {
		if m.v2 || !slices.Contains(m.opts, controller) {
			continue
		}
		dir, ok := dirOf(m, group)
		if !ok {
			continue
		}
		if err := probeDir(dir); err != nil {
			return "", fmt.Sprintf("cgroup v1 %s hierarchy %s is not writable: %v", controller, dir, err)
		}
		return dir, ""
	}
	return "", "the cgroup v1 " + controller + " hierarchy is not mounted"
}

// detectV2 returns the directory to create command groups in, when this
// process's v2 group offers memory and pids and may delegate them.
func detectV2(ms []mountPoint, own map[string]string) (string, string) {
	group, ok := own[""]
	if !ok {
		return "", ""
	}
	for _, m := range ms {
		if !m.v2 {
			continue
		}
		dir, ok := dirOf(m, group)
		if !ok {
			continue
		}
		ctl, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
		if err != nil {
			return "", "cgroup v2: " + err.Error()
		}
		have := strings.Fields(string(ctl))
		if !slices.Contains(have, Memory) || !slices.Contains(have, Pids) {
			if len(have) == 0 {
				return "", "" // a hybrid machine's empty v2 tree: the v1 hierarchies decide
			}
			return "", fmt.Sprintf("cgroup v2 group %s does not offer the memory and pids controllers (it offers %q)", dir, have)
		}
		if err := enableV2(dir); err != nil {
			return "", fmt.Sprintf("cgroup v2 group %s: cannot delegate memory and pids to command groups: %v", dir, err)
		}
		if err := probeDir(dir); err != nil {
			return "", fmt.Sprintf("cgroup v2 group %s is not writable: %v", dir, err)
		}
		return dir, ""
	}
	return "", ""
}

// enableV2 turns memory and pids on for dir's children. A group that holds
// processes cannot (unless it is the real root): then its processes — this
// worker, and a container's init beside it — move into a leaf first, the
// usual shape of a delegated subtree.
func enableV2(dir string) error {
	ctl := filepath.Join(dir, "cgroup.subtree_control")
	if err := os.WriteFile(ctl, []byte("+memory +pids"), 0); err == nil {
		return nil
	}
	leaf := filepath.Join(dir, fmt.Sprintf("ralph-worker-%d", os.Getpid()))
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
		return fmt.Errorf("moving the worker into %s: %w", leaf, err)
	}
	for _, pid := range readPids(filepath.Join(dir, "cgroup.procs")) {
		_ = os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
	}
	return os.WriteFile(ctl, []byte("+memory +pids"), 0)
}

// probeDir creates and removes a group in dir.
func probeDir(dir string) error {
	p := filepath.Join(dir, fmt.Sprintf("ralph-probe-%d", os.Getpid()))
	if err := os.Mkdir(p, 0o755); err != nil {
		return err
	}
	return os.Remove(p)
}

var seq atomic.Int64

// Group is one command's set of groups (one per v1 hierarchy, or one v2 group).
type Group struct {
	dirs   []string
	procs  []string
	memDir string
	frzDir string // v1: the group in the freezer hierarchy ("": none)
	v2     bool
	dirFD  int // v2: the group's directory, for starting a process in it; -1 otherwise
	// peakBase and oomBase are the memory use and the OOM kill count at
	// the last Reset: a reused group's peak and kills are its own since.
	peakBase int64
	oomBase  int
}

// FD is a descriptor on the (v2) group's directory: a process started with
// it (SysProcAttr.UseCgroupFD) is born inside the group, so no step of the
// command has to move itself in.
func (g *Group) FD() (int, bool) {
	if g == nil || g.dirFD < 0 {
		return -1, false
	}
	return g.dirFD, true
}

// New creates a command's groups with the limits set.
func (m *Manager) New() (*Group, error) {
	if m == nil {
		return nil, nil
	}
	name := m.prefix + strconv.FormatInt(seq.Add(1), 10)
	g := &Group{v2: m.version == 2, dirFD: -1}
	mk := func(parent string, files [][2]string) (string, error) {
		dir := filepath.Join(parent, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return "", fmt.Errorf("cgroup: creating %s: %w", dir, err)
		}
		g.dirs = append(g.dirs, dir)
		for _, f := range files {
			err := os.WriteFile(filepath.Join(dir, f[0]), []byte(f[1]), 0)
			if err != nil {
				return "", fmt.Errorf("cgroup: setting %s in %s: %w", f[0], dir, err)
			}
		}
		procs := filepath.Join(dir, "cgroup.procs")
		if m.owner != nil && !g.v2 {
			// The command's first process moves itself in as its own uid.
			if err := os.Chown(procs, m.owner[0], m.owner[1]); err != nil {
				return "", fmt.Errorf("cgroup: giving %s to uid %d: %w", procs, m.owner[0], err)
			}
		}
		g.procs = append(g.procs, procs)
		return dir, nil
	}
	mem, pids := strconv.FormatInt(m.lim.MemoryBytes, 10), strconv.Itoa(m.lim.Pids)
	var err error
	switch {
	case m.version == 2:
		g.memDir, err = mk(m.v2Dir, [][2]string{{"memory.max", mem}, {"pids.max", pids}})
		if err == nil {
			// Swap would let a command exceed its memory quietly; not every
			// kernel has swap accounting, so this one may fail.
			_ = os.WriteFile(filepath.Join(g.memDir, "memory.swap.max"), []byte("0"), 0)
			g.dirFD, err = syscall.Open(g.memDir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
			if err != nil {
				err = fmt.Errorf("cgroup: opening %s: %w", g.memDir, err)
			}
		}
	default:
		if m.memDir != "" {
			g.memDir, err = mk(m.memDir, [][2]string{{"memory.limit_in_bytes", mem}})
			if err == nil {
				_ = os.WriteFile(filepath.Join(g.memDir, "memory.memsw.limit_in_bytes"), []byte(mem), 0)
			}
		}
		if err == nil && m.pidsDir != "" {
			_, err = mk(m.pidsDir, [][2]string{{"pids.max", pids}})
		}
		if err == nil && m.frzDir != "" {
			g.frzDir, err = mk(m.frzDir, nil)
		}
	}
	if err != nil {
		g.Close()
		return nil, err
	}
	return g, nil
}

// OOMKilled reports whether the kernel killed a process of the group for
// exceeding its memory limit (since the last Reset).
func (g *Group) OOMKilled() bool {
	return g.oomKills() > g.oomBase
}

// oomKills is the kernel's count of the group's OOM kills (0 when it does
// not say).
func (g *Group) oomKills() int {
	if g == nil || g.memDir == "" {
		return 0
	}
	file := "memory.oom_control"
	if g.v2 {
		file = "memory.events"
	}
	data, err := os.ReadFile(filepath.Join(g.memDir, file))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == "oom_kill" {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// Close kills whatever is still in the groups and removes them.
func (g *Group) Close() {
	if g == nil {
		return
	}
	if g.dirFD >= 0 {
		_ = syscall.Close(g.dirFD)
		g.dirFD = -1
	}
	_ = g.Thaw() // a frozen process does not die of SIGKILL until thawed
	deadline := time.Now().Add(5 * time.Second)
	for _, dir := range slices.Backward(g.dirs) {
		if g.v2 {
			_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
		}
		for {
			pids := readPids(filepath.Join(dir, "cgroup.procs"))
			for _, pid := range pids {
				// A worker's thread that could not leave the group (Enter)
				// lists the worker itself until the thread ends.
				if pid != os.Getpid() {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			err := os.Remove(dir)
			if err == nil || errors.Is(err, os.ErrNotExist) || time.Now().After(deadline) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

func readPids(file string) []int {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(data)) {
		if n, err := strconv.Atoi(f); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

// removeStale removes the empty command groups of workers that died
// without removing them (kill -9): their names carry the dead pid.
func removeStale(dir string) {
	if dir == "" {
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "ralph-")
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid == os.Getpid() || syscall.Kill(pid, 0) == nil || errors.Is(syscall.Kill(pid, 0), syscall.EPERM) {
			continue
		}
		_ = os.Remove(filepath.Join(dir, e.Name())) // fails, harmlessly, unless empty
	}
}

// freezeWait bounds how long a group may take to freeze: a process in an
// uninterruptible sleep delays it.
const freezeWait = 10 * time.Second

// Frozen is whether Freeze can stop the group (false: no freezer).
func (g *Group) Frozen() bool { return g != nil && (g.v2 || g.frzDir != "") }

// Freeze stops every process of the group and returns once the kernel
// says all are stopped; nothing in it runs until Thaw.
func (g *Group) Freeze() error {
	switch {
	case g == nil || !g.Frozen():
		return errors.New("cgroup: the command's group has no freezer")
	case g.v2:
		return setAndWait(filepath.Join(g.memDir, "cgroup.freeze"), "1", filepath.Join(g.memDir, "cgroup.events"), "frozen 1")
	}
	state := filepath.Join(g.frzDir, "freezer.state")
	return setAndWait(state, "FROZEN", state, "FROZEN")
}

// Thaw lets the group's processes go on.
func (g *Group) Thaw() error {
	switch {
	case g == nil || !g.Frozen():
		return nil
	case g.v2:
		return os.WriteFile(filepath.Join(g.memDir, "cgroup.freeze"), []byte("0"), 0)
	}
	return os.WriteFile(filepath.Join(g.frzDir, "freezer.state"), []byte("THAWED"), 0)
}

// setAndWait writes value to file, then waits until a line of watch is
// want. v1 moves through FREEZING, and each write retries a freeze that
// stalled on a process being created.
func setAndWait(file, value, watch, want string) error {
	deadline := time.Now().Add(freezeWait)
	for {
		if err := os.WriteFile(file, []byte(value), 0); err != nil {
			return fmt.Errorf("cgroup: freezing: %w", err)
		}
		data, err := os.ReadFile(watch)
		if err != nil {
			return fmt.Errorf("cgroup: freezing: %w", err)
		}
		if slices.Contains(strings.Split(strings.TrimSpace(string(data)), "\n"), want) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup: %s did not freeze within %s", filepath.Dir(file), freezeWait)
		}
		time.Sleep(time.Millisecond)
	}
}

// PeakBytes is the highest memory use the group's processes reached (0
// when the kernel does not say: v2 before Linux 5.19, or no memory group);
// after a Reset, how far it rose above the use it was reset at.
func (g *Group) PeakBytes() int64 {
	return max(0, g.memoryValue("memory.max_usage_in_bytes", "memory.peak")-g.peakBase)
}

// memoryValue is the number in the group's memory file v1 (v2 on cgroup
// v2); 0 when there is none or the kernel does not say.
func (g *Group) memoryValue(v1, v2 string) int64 {
	if g == nil || g.memDir == "" {
		return 0
	}
	file := v1
	if g.v2 {
		file = v2
	}
	data, err := os.ReadFile(filepath.Join(g.memDir, file))
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	return n
}
