package temporalserver

import (
	"context"
	"fmt"
	"strings"

	"go.temporal.io/sdk/client"

	"github.com/ralph-temporal/ralph/app/searchattrs"
)

// SearchAttributesRegistered checks that namespace has every Ralph search
// attribute with its type, and names what is missing or mistyped.
func SearchAttributesRegistered(ctx context.Context, c client.Client, namespace string) error {
	missing, wrong, err := searchattrs.Missing(ctx, c, namespace)
	if err != nil {
		return fmt.Errorf("list the search attributes of namespace %s: %w", namespace, err)
	}
	for _, sa := range missing {
		wrong = append(wrong, sa.Name+" (missing)")
	}
	if len(wrong) > 0 {
		return fmt.Errorf("namespace %s lacks search attributes: %s", namespace, strings.Join(wrong, ", "))
	}
	return nil
}
