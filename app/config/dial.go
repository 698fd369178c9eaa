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
// failure is an *UnreachableError naming the address; a server that refuses
// the credentials is a *CredentialsError naming where they came from (env is
// what opts were loaded from).
func Dial(ctx context.Context, opts client.Options, env Env) (client.Client, error) {
	ns := opts.Namespace
	if ns == "" {
		ns = client.DefaultNamespace
	}
	c, err := client.DialContext(ctx, opts)
	if refused(err) {
		return nil, &CredentialsError{Address: opts.HostPort, Namespace: ns, Sources: CredentialSources(env), Err: err}
	}
	if err != nil {
		return nil, &UnreachableError{Address: opts.HostPort, Namespace: opts.Namespace, Err: err}
	}
	_, err = c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: ns})
	var notFound *serviceerror.NamespaceNotFound
	switch {
	case err == nil:
	case refused(err):
		// A worker that may not describe its namespace may not poll it
		// either: every poll would fail the same way.
		c.Close()
		return nil, &CredentialsError{Address: opts.HostPort, Namespace: ns, Sources: CredentialSources(env), Err: err}
	case errors.As(err, &notFound):
		c.Close()
		return nil, fmt.Errorf("namespace %q does not exist on the Temporal server at %s; create it (temporal operator namespace create --namespace %s) or set TEMPORAL_NAMESPACE / --namespace",
			ns, opts.HostPort, ns)
	case errors.As(err, new(*serviceerror.Unavailable)) || errors.Is(err, context.DeadlineExceeded):
		c.Close()
		return nil, &UnreachableError{Address: opts.HostPort, Namespace: ns, Err: err}
	default:
		// Anything else (an old server without the call, a transient
		// internal error) is left to the first real call.
	}
	return c, nil
}
