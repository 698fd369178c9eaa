package workflows

import (
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// upsertVisibility publishes phase, round, workspace and (once finished) the
// outcome as search attributes, when the deployment has them on (recorded in
// the limits, so replay never depends on a worker's setting). They carry no
// objective or report text, so they stay harmless with encrypted payloads.
func (l *loop) upsertVisibility(ctx workflow.Context) {
	if !l.limits.SearchAttributes {
		return
	}
	updates := []temporal.SearchAttributeUpdate{
		temporal.NewSearchAttributeKeyKeyword(SearchAttrPhase).ValueSet(l.status.Phase),
		temporal.NewSearchAttributeKeyInt64(SearchAttrRound).ValueSet(int64(l.status.Round)),
	}
	if l.workspace != "" {
		updates = append(updates, temporal.NewSearchAttributeKeyKeyword(SearchAttrWorkspace).ValueSet(l.workspace))
	}
	if l.status.Outcome != "" {
		updates = append(updates, temporal.NewSearchAttributeKeyKeyword(SearchAttrOutcome).ValueSet(l.status.Outcome))
	}
	// An upsert only fails for attributes the namespace lacks; the worker
	// checks them at start, so a failure here is logged, not fatal.
	if err := workflow.UpsertTypedSearchAttributes(ctx, updates...); err != nil {
		workflow.GetLogger(ctx).Warn("Upserting the Ralph search attributes failed", "error", err)
	}
}
