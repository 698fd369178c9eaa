package starterapp

import (
	"testing"

	deploymentpb "go.temporal.io/api/deployment/v1"
	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
)

func poller(deployment, build string) *taskqueuepb.PollerInfo {
	if deployment == "" {
		return &taskqueuepb.PollerInfo{Identity: "unversioned"}
	}
	return &taskqueuepb.PollerInfo{Identity: build, DeploymentOptions: &deploymentpb.WorkerDeploymentOptions{
		DeploymentName: deployment, BuildId: build, WorkerVersioningMode: enumspb.WORKER_VERSIONING_MODE_VERSIONED}}
}

// The pre-start check counts only the pollers a new run is routed to: the
// current version's when the deployment has one (an old build still
// polling takes no new run), else unversioned ones.
func TestCountTakers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pollers []*taskqueuepb.PollerInfo
		current map[string]string
		want    queuePollers
	}{
		{"only the old build polls", []*taskqueuepb.PollerInfo{poller("ralph", "old"), poller("ralph", "old")},
			map[string]string{"ralph": "new"}, queuePollers{all: 2, takers: 0, current: "ralph.new"}},
		{"old and current", []*taskqueuepb.PollerInfo{poller("ralph", "old"), poller("ralph", "new")},
			map[string]string{"ralph": "new"}, queuePollers{all: 2, takers: 1, current: "ralph.new"}},
		{"versioned without a current version", []*taskqueuepb.PollerInfo{poller("ralph", "a")},
			map[string]string{"ralph": ""}, queuePollers{all: 1, takers: 0}},
		{"unversioned", []*taskqueuepb.PollerInfo{poller("", "")}, map[string]string{}, queuePollers{all: 1, takers: 1}},
		{"nobody", nil, map[string]string{}, queuePollers{}},
	} {
		if got := countTakers(tc.pollers, tc.current); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
