package config

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// UnreachableError says that the Temporal server could not be reached.
type UnreachableError struct {
	Address   string
	Namespace string
	Err       error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("the Temporal server at %s is unreachable (%s); start one (for example `temporal server start-dev`) or point TEMPORAL_ADDRESS / --address at yours",
		e.Address, shortCause(e.Err))
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// shortCause keeps the useful end of a gRPC dial error ("connection refused",
// "deadline exceeded") instead of the whole nested chain.
func shortCause(err error) string {
	if err == nil {
		return "unknown error"
	}
	msg := err.Error()
	for _, hint := range []string{"connection refused", "no such host", "i/o timeout", "deadline exceeded", "certificate", "tls:", "Unauthenticated", "PermissionDenied"} {
		if strings.Contains(msg, hint) {
			return hint
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return msg
}

// Dial connects to Temporal with opts and checks the namespace exists, so
// the first real call does not fail with a confusing error. A connection
// failure is an *UnreachableError naming the address.
func Dial(ctx context.Context, opts client.Options) (client.Client, error) {
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, &UnreachableError{Address: opts.HostPort, Namespace: opts.Namespace, Err: err}
	}
	ns := opts.Namespace
	if ns == "" {
		ns = client.DefaultNamespace
	}
	_, err = c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: ns})
	var notFound *serviceerror.NamespaceNotFound
	switch {
	case err == nil:
	case errors.As(err, &notFound):
		c.Close()
		return nil, fmt.Errorf("namespace %q does not exist on the Temporal server at %s; create it (temporal operator namespace create --namespace %s) or set TEMPORAL_NAMESPACE / --namespace",
			ns, opts.HostPort, ns)
	case errors.As(err, new(*serviceerror.Unavailable)) || errors.Is(err, context.DeadlineExceeded):
		c.Close()
		return nil, &UnreachableError{Address: opts.HostPort, Namespace: ns, Err: err}
	default:
		// Some deployments do not let this identity describe the namespace
		// (for example a namespace-scoped API key); that is not fatal.
	}
	return c, nil
}
