package config

import (
	"io"
	"strings"
	"testing"
)

// Under the Worker Controller the worker's version is the controller's:
// its deployment name (namespace/name) and build id, unless the RALPH_
// settings or flags name others.
func TestVersioningFromWorkerController(t *testing.T) {
	t.Parallel()
	controller := MapEnv{EnvControllerDeploymentName: "ralph-prod/ralph-worker", EnvControllerBuildID: "v1-2-3-5d4f"}
	cases := []struct {
		name string
		env  MapEnv
		args []string
		want Versioning
	}{
		{"controller", controller, nil,
			Versioning{Mode: VersioningOn, DeploymentName: "ralph-prod/ralph-worker", BuildID: "v1-2-3-5d4f", SetCurrent: SetCurrentIfNone, Behavior: BehaviorAutoUpgrade}},
		{"RALPH_ settings win", MapEnv{EnvControllerDeploymentName: "ralph-prod/ralph-worker", EnvControllerBuildID: "v1-2-3-5d4f",
			"RALPH_DEPLOYMENT_NAME": "mine", "RALPH_BUILD_ID": "b7"}, nil,
			Versioning{Mode: VersioningOn, DeploymentName: "mine", BuildID: "b7", SetCurrent: SetCurrentIfNone, Behavior: BehaviorAutoUpgrade}},
		{"flags win", controller, []string{"--deployment-name", "flagged", "--build-id", "f1"},
			Versioning{Mode: VersioningOn, DeploymentName: "flagged", BuildID: "f1", SetCurrent: SetCurrentIfNone, Behavior: BehaviorAutoUpgrade}},
		{"no controller", MapEnv{}, nil,
			Versioning{Mode: VersioningOn, DeploymentName: DefaultDeploymentName, SetCurrent: SetCurrentIfNone, Behavior: BehaviorAutoUpgrade}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			env := MapEnv{"RALPH_WORKSPACE_ROOT": t.TempDir() + "/ws", "RALPH_SESSION_DIR": t.TempDir() + "/s"}
			for k, v := range c.env { // cases share the controller's map
				env[k] = v
			}
			w, err := LoadWorker(c.args, env, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if w.Versioning != c.want {
				t.Errorf("versioning = %+v, want %+v", w.Versioning, c.want)
			}
		})
	}
}

func TestControllerBuildIDIsChecked(t *testing.T) {
	t.Parallel()
	env := MapEnv{EnvControllerBuildID: ".bad", "RALPH_WORKSPACE_ROOT": t.TempDir() + "/ws", "RALPH_SESSION_DIR": t.TempDir() + "/s"}
	_, err := LoadWorker(nil, env, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `RALPH_BUILD_ID=".bad"`) {
		t.Errorf("err = %v, want the build id check", err)
	}
}
