package temporalserver

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/ralph-temporal/ralph/internal/proc"
)

// TestClusterLifecycle runs the real cluster: PostgreSQL and the Temporal
// server come up with the namespace and search attributes, a workflow
// survives a SIGKILL and a SIGTERM restart of the server, and Stop leaves
// no process, port or directory behind.
func TestClusterLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and the Temporal server (make unit passes -short; make test runs it)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute) // a cold build is slow
	defer cancel()
	s, err := StartCluster(ctx, ClusterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	if !strings.Contains(strings.Join(s.Args(), " "), "--env temporal-postgres") {
		t.Errorf("args = %q", s.Args())
	}
	c, err := s.Dial(ctx, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := SearchAttributesRegistered(ctx, c, s.Namespace); err != nil {
		t.Fatal(err)
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "cluster-smoke", TaskQueue: "nobody"}, "Nothing")
	if err != nil {
		t.Fatal(err)
	}

	firstPID := s.PID()
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	if proc.Alive(firstPID) {
		t.Fatalf("server pid %d alive after Kill", firstPID)
	}
	if err := s.Restart(ctx); err != nil {
		t.Fatalf("restart after kill: %v", err)
	}
	if err := s.Restart(ctx); err != nil {
		t.Fatalf("restart (SIGTERM): %v", err)
	}
	if s.PID() == firstPID || s.PID() == 0 {
		t.Errorf("pid after restarts = %d (first %d)", s.PID(), firstPID)
	}
	d, err := c.DescribeWorkflow(ctx, "cluster-smoke", run.GetRunID())
	if err != nil {
		t.Fatalf("workflow lost across restarts: %v", err)
	}
	if d.Status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		t.Errorf("status after restarts = %s", d.Status)
	}

	serverPID, pgPID := s.PID(), s.pg.proc.Pid()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	for name, pid := range map[string]int{"server": serverPID, "PostgreSQL": pgPID} {
		if proc.Alive(pid) {
			t.Errorf("%s pid %d alive after Stop", name, pid)
		}
	}
	if !PortFree(s.Address) {
		t.Errorf("port %s still taken after Stop", s.Address)
	}
	if _, err := os.Stat(s.Dir); !os.IsNotExist(err) {
		t.Errorf("state dir %s still there after Stop (%v)", s.Dir, err)
	}
	if err := s.Restart(ctx); err == nil {
		t.Error("Restart after Stop succeeded")
	}
}

func TestStateDirMustBeEmpty(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/x", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := stateDir(dir); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("stateDir(non-empty) = %v", err)
	}
}

func TestMissingPostgresIsNamed(t *testing.T) {
	_, err := startPostgres(context.Background(), postgresConfig{bin: t.TempDir(), dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "apt-get install postgresql-15") || !strings.Contains(err.Error(), EnvPGBin) {
		t.Fatalf("err = %v", err)
	}
}
