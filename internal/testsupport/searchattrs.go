package testsupport

import (
	"context"
	"fmt"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/ralph-temporal/ralph/workflows"
)

// SearchAttributesRegistered checks that namespace has every search
// attribute of workflows.SearchAttributes() with its type, and names what
// is missing or mistyped.
func SearchAttributesRegistered(ctx context.Context, c client.Client, namespace string) error {
	resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("list the search attributes of namespace %s: %w", namespace, err)
	}
	var wrong []string
	for _, sa := range workflows.SearchAttributes() {
		got, ok := resp.GetCustomAttributes()[sa.Name]
		if !ok {
			wrong = append(wrong, sa.Name+" (missing)")
			continue
		}
		want, err := enumspb.IndexedValueTypeFromString(sa.Type)
		if err != nil {
			return fmt.Errorf("search attribute %s: %w", sa.Name, err)
		}
		if got != want {
			wrong = append(wrong, fmt.Sprintf("%s (%s, want %s)", sa.Name, got, want))
		}
	}
	if len(wrong) > 0 {
		return fmt.Errorf("namespace %s lacks search attributes: %s", namespace, strings.Join(wrong, ", "))
	}
	return nil
}
