package agent

import (
	"maps"
	"slices"

	"github.com/ralph-temporal/ralph/agent/tools"
)

// everything protects every path: a reviewer whose commands cannot get a
// read-only workspace (no bubblewrap) has all its changes restored instead.
var everything = []string{"**"}

// open opens the session's workspace with opts and the protected path
// sets, and takes the snapshot the restore check compares against; each
// role (role.go) chooses its options and sets.
func open(req Request, cfg Config, opts []tools.Option, sets [][]string) (*tools.Workspace, *tools.ProtectedSnapshot, error) {
	prot, err := tools.ParseProtected(sets...)
	if err != nil {
		return nil, nil, err
	}
	ws, err := tools.OpenWorkspace(req.Workspace, cfg.ToolLimits, append(opts, tools.WithProtected(prot))...)
	if err != nil {
		return nil, nil, err
	}
	snap, err := ws.SnapshotProtected()
	if err != nil {
		ws.Close()
		return nil, nil, err
	}
	return ws, snap, nil
}

// restoreProtected brings back every protected path the session changed
// and remembers which.
func (r *round) restoreProtected() ([]string, error) {
	paths, err := r.ws.RestoreProtected(r.snap)
	if len(paths) > 0 {
		if r.restored == nil {
			r.restored = map[string]bool{}
		}
		for _, p := range paths {
			r.restored[p] = true
		}
		r.emit(Event{Kind: EventProtectedRestored, Paths: paths})
	}
	return paths, err
}

// restoredList is every path restored in this session, sorted; [] when none.
func (r *round) restoredList() []string {
	if len(r.restored) == 0 {
		return []string{}
	}
	return slices.Sorted(maps.Keys(r.restored))
}

// protectedRefusal restores the protected paths a report's session changed
// and returns the refusal of that submit_report call ("" when nothing
// changed). It is no repair: the model reports again, honestly.
func (r *round) protectedRefusal() (string, error) {
	paths, err := r.restoreProtected()
	if err != nil || len(paths) == 0 {
		return "", err
	}
	return render(textProtected, struct{ Paths []string }{paths})
}
