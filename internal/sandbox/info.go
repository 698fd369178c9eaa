package sandbox

import (
	"encoding/json"
	"fmt"
	"io"
)

// bwrapInfo is what bwrap writes to --info-fd once its namespaces exist.
type bwrapInfo struct {
	ChildPID int `json:"child-pid"`
}

// InitPID reads bwrap's --info-fd report: the pid (in the worker's PID
// namespace) of the sandbox's first process. Killing that process ends the
// PID namespace, which takes every process of the command with it, however
// it detached.
func InitPID(r io.Reader) (int, error) {
	var info bwrapInfo
	// Not strict: bwrap adds namespace ids, and newer versions more.
	if err := json.NewDecoder(r).Decode(&info); err != nil {
		return 0, fmt.Errorf("reading bwrap's info: %w", err)
	}
	if info.ChildPID <= 0 {
		return 0, fmt.Errorf("reading bwrap's info: no child-pid")
	}
	return info.ChildPID, nil
}
