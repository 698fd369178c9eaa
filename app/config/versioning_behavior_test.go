package config

import (
	"io"
	"strings"
	"testing"
)

// RALPH_VERSIONING_BEHAVIOR is recorded with the limits only where it changes
// what a run does: pinned on a versioned worker.
func TestVersioningBehaviorIsRecordedWithTheLimits(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		env      MapEnv
		behavior string
		upgrade  bool
	}{
		{"default", MapEnv{}, BehaviorAutoUpgrade, false},
		{"pinned", MapEnv{"RALPH_VERSIONING_BEHAVIOR": "pinned"}, BehaviorPinned, true},
		{"pinned unversioned", MapEnv{"RALPH_VERSIONING_BEHAVIOR": "pinned", "RALPH_VERSIONING": "off"}, BehaviorPinned, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.env["RALPH_WORKSPACE_ROOT"], c.env["RALPH_SESSION_DIR"] = t.TempDir()+"/ws", t.TempDir()+"/s"
			w, err := LoadWorker(nil, c.env, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if w.Versioning.Behavior != c.behavior || w.Activities.Limits.UpgradeOnTargetChange != c.upgrade {
				t.Errorf("behavior %q, upgradeOnTargetChange %v; want %q, %v", w.Versioning.Behavior,
					w.Activities.Limits.UpgradeOnTargetChange, c.behavior, c.upgrade)
			}
		})
	}
}

func TestVersioningBehaviorRefusesOtherValues(t *testing.T) {
	t.Parallel()
	env := MapEnv{"RALPH_VERSIONING_BEHAVIOR": "sticky", "RALPH_WORKSPACE_ROOT": t.TempDir() + "/ws", "RALPH_SESSION_DIR": t.TempDir() + "/s"}
	_, err := LoadWorker(nil, env, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "RALPH_VERSIONING_BEHAVIOR") || !strings.Contains(err.Error(), "auto-upgrade") {
		t.Errorf("err = %v, want one naming RALPH_VERSIONING_BEHAVIOR and its values", err)
	}
}
