// Package searchattrs checks and registers the Ralph search attributes
// (workflows.SearchAttributes) on a namespace: one home for the worker's
// start-up check, the local servers and the tests.
package searchattrs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/ralph-temporal/ralph/internal/wait"
	"github.com/ralph-temporal/ralph/workflows"
)

// searchAttributesVisible bounds how long the worker waits for attributes it
// created to show up (SQL visibility applies them asynchronously).
const searchAttributesVisible = 30 * time.Second

// Error says which Ralph search attributes a namespace lacks
// and the command that creates them.
type Error struct {
	Namespace string
	Missing   []workflows.SearchAttribute
	Wrong     []string // present with another type
	Cause     error
}

func (e *Error) Error() string {
	var b strings.Builder
	if len(e.Wrong) > 0 {
		fmt.Fprintf(&b, "namespace %s has search attributes of the wrong type: %s; ", e.Namespace, strings.Join(e.Wrong, ", "))
	}
	if len(e.Missing) > 0 {
		names := make([]string, len(e.Missing))
		for i, sa := range e.Missing {
			names[i] = sa.Name
		}
		fmt.Fprintf(&b, "namespace %s lacks the search attributes %s and the worker may not create them (%v); create them with:\n  %s\n",
			e.Namespace, strings.Join(names, ", "), e.Cause, CreateCommand(e.Namespace, e.Missing))
	}
	b.WriteString("or start the worker with RALPH_SEARCH_ATTRIBUTES=false to run without them")
	return b.String()
}

// CreateCommand is the temporal CLI command that registers attrs.
func CreateCommand(namespace string, attrs []workflows.SearchAttribute) string {
	cmd := "temporal operator search-attribute create --namespace " + namespace
	for _, sa := range attrs {
		cmd += " --name " + sa.Name + " --type " + sa.Type
	}
	return cmd
}

// Types is workflows.SearchAttributes() as the operator service takes it.
func Types() map[string]enumspb.IndexedValueType {
	types := map[string]enumspb.IndexedValueType{}
	for _, sa := range workflows.SearchAttributes() {
		types[sa.Name] = indexedType(sa)
	}
	return types
}

// indexedType maps a declared type name (Keyword, Int) to the API's enum;
// the names come from the workflow's own fixed list.
func indexedType(sa workflows.SearchAttribute) enumspb.IndexedValueType {
	t, err := enumspb.IndexedValueTypeFromString(sa.Type)
	if err != nil {
		panic(fmt.Sprintf("search attribute %s has an unknown type %q", sa.Name, sa.Type))
	}
	return t
}

// Ensure checks that namespace has every Ralph search
// attribute with its type, creates the missing ones where the credentials
// allow it, and otherwise fails with a *Error naming them
// and the command that creates them.
func Ensure(ctx context.Context, c client.Client, namespace string, logger *slog.Logger) error {
	missing, wrong, err := Missing(ctx, c, namespace)
	if err != nil {
		return fmt.Errorf("list the search attributes of namespace %s: %w", namespace, err)
	}
	if len(wrong) > 0 {
		return &Error{Namespace: namespace, Wrong: wrong}
	}
	if len(missing) == 0 {
		return nil
	}
	add := &operatorservice.AddSearchAttributesRequest{Namespace: namespace, SearchAttributes: map[string]enumspb.IndexedValueType{}}
	for _, sa := range missing {
		add.SearchAttributes[sa.Name] = indexedType(sa)
	}
	if _, err := c.OperatorService().AddSearchAttributes(ctx, add); err != nil {
		var exists *serviceerror.AlreadyExists
		if !errors.As(err, &exists) {
			return &Error{Namespace: namespace, Missing: missing, Cause: err}
		}
	}
	logger.Info("created the Ralph search attributes", "namespace", namespace, "count", len(missing))
	var still []workflows.SearchAttribute
	err = wait.For(ctx, searchAttributesVisible, 200*time.Millisecond, func(ctx context.Context) error {
		var err error
		if still, _, err = Missing(ctx, c, namespace); err == nil && len(still) > 0 {
			err = errors.New("not visible yet")
		}
		return err
	})
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return &Error{Namespace: namespace, Missing: still,
		Cause: fmt.Errorf("created, but still not visible after %s", searchAttributesVisible)}
}

// Missing lists the Ralph search attributes namespace lacks, and those it
// has with another type.
func Missing(ctx context.Context, c client.Client, namespace string) ([]workflows.SearchAttribute, []string, error) {
	resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return nil, nil, err
	}
	var missing []workflows.SearchAttribute
	var wrong []string
	for _, sa := range workflows.SearchAttributes() {
		got, ok := resp.GetCustomAttributes()[sa.Name]
		switch {
		case !ok:
			missing = append(missing, sa)
		case got != indexedType(sa):
			wrong = append(wrong, fmt.Sprintf("%s is %s, want %s", sa.Name, got, sa.Type))
		}
	}
	return missing, wrong, nil
}
