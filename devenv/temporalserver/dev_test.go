package temporalserver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// TestStartRestartStop runs a real dev server when the temporal CLI is
// installed: health, persistence across Restart, and Stop.
func TestStartRestartStop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a dev server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db := filepath.Join(t.TempDir(), "temporal.db")
	s, err := StartDev(ctx, DevOptions{DBFile: db})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	// The pinned CLI from Ralph's cache, whatever else is on PATH.
	if os.Getenv(EnvTemporalBin) == "" && s.Bin() != filepath.Join(cliBuild.BinDir(DefaultCacheDir()), "temporal") {
		t.Errorf("dev server runs %s, not the cached pinned CLI", s.Bin())
	}
	args := strings.Join(s.Args(), " ")
	for _, want := range []string{"--headless", "--ip 127.0.0.1", "--db-filename " + db, "--dynamic-config-value matching.numTaskqueueReadPartitions=1"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}

	c, err := s.Dial(ctx, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := SearchAttributesRegistered(ctx, c, s.Namespace); err != nil {
		t.Fatal(err)
	}
	// A workflow started before the restart must still be there after it.
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "devserver-smoke", TaskQueue: "nobody"}, "Nothing")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()

	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	c, err = s.Dial(ctx, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	d, err := c.DescribeWorkflow(ctx, "devserver-smoke", run.GetRunID())
	if err != nil {
		t.Fatalf("workflow lost across restart: %v", err)
	}
	if got := d.RawResponse.GetWorkflowExecutionInfo().GetStatus(); got != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		t.Errorf("status after restart = %s", got)
	}

	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if !PortFree(s.Address) {
		t.Errorf("port %s still taken after Stop", s.Address)
	}
}
