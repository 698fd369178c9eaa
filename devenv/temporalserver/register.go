package temporalserver

import (
	"context"
	"errors"
	"fmt"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ralph-temporal/ralph/app/searchattrs"
	"github.com/ralph-temporal/ralph/workflows"
)

// probeTaskQueue is where the search-attribute probe workflow is started;
// no worker polls it, and the probe is deleted at once.
const (
	probeTaskQueue          = "ralph-cluster-probe"
	searchAttrProbeWorkflow = "ralph-cluster-search-attribute-probe"
)

// register creates the namespace and Ralph's search attributes on a fresh
// cluster and waits until a workflow can be started with them.
func (s *Server) register(ctx context.Context) error {
	c, err := s.Dial(ctx, client.Options{})
	if err != nil {
		return fmt.Errorf("dial the cluster: %w", err)
	}
	defer c.Close()
	_, err = c.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace:                        s.Namespace,
		Description:                      "Ralph (devenv/temporalserver)",
		WorkflowExecutionRetentionPeriod: durationpb.New(namespaceRetention),
	})
	var exists *serviceerror.NamespaceAlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("register namespace %s: %w", s.Namespace, err)
	}
	proc := s.process()
	if err := s.waitServes(ctx, proc, s.namespaceServed); err != nil {
		return err
	}
	if _, err := c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: s.Namespace, SearchAttributes: searchattrs.Types(),
	}); err != nil {
		return fmt.Errorf("add search attributes to namespace %s: %w", s.Namespace, err)
	}
	// The frontend knows new attributes only once its namespace cache has
	// refreshed; until then a start that sets them is refused.
	return s.waitServes(ctx, proc, s.searchAttributesUsable)
}

// searchAttributesUsable starts a probe workflow that sets every search
// attribute, then deletes it.
func (s *Server) searchAttributesUsable(ctx context.Context, c client.Client) error {
	var updates []temporal.SearchAttributeUpdate
	for _, sa := range workflows.SearchAttributes() {
		switch sa.Type {
		case "Keyword":
			updates = append(updates, temporal.NewSearchAttributeKeyKeyword(sa.Name).ValueSet(probeTaskQueue))
		case "Int":
			updates = append(updates, temporal.NewSearchAttributeKeyInt64(sa.Name).ValueSet(0))
		default:
			return fmt.Errorf("search attribute %s: type %s is not handled by the cluster probe", sa.Name, sa.Type)
		}
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: searchAttrProbeWorkflow, TaskQueue: probeTaskQueue,
		TypedSearchAttributes:    temporal.NewSearchAttributes(updates...),
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING,
	}, "RalphClusterProbe")
	if err != nil {
		return fmt.Errorf("start a workflow with Ralph's search attributes: %w", err)
	}
	_, err = c.WorkflowService().DeleteWorkflowExecution(ctx, &workflowservice.DeleteWorkflowExecutionRequest{
		Namespace:         s.Namespace,
		WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: run.GetID(), RunId: run.GetRunID()},
	})
	if err != nil {
		return fmt.Errorf("delete the probe workflow: %w", err)
	}
	return nil
}
