package config

import "slices"

// temporalClientVars are the standard Temporal client variables the worker
// honours (go.temporal.io/sdk/contrib/envconfig reads them).
func temporalClientVars() []string {
	return append([]string{
		"TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_TLS", "TEMPORAL_TLS_SERVER_CA_CERT_PATH",
		"TEMPORAL_TLS_SERVER_CA_CERT_DATA", "TEMPORAL_TLS_SERVER_NAME", "TEMPORAL_TLS_DISABLE_HOST_VERIFICATION",
		"TEMPORAL_CLIENT_AUTHORITY", "TEMPORAL_PROFILE", "TEMPORAL_CONFIG_FILE",
	}, credentialVars()...)
}

// EnvNames lists every environment variable the worker reads by name: its
// settings (the table in docs/reference.md), the standard Temporal client
// variables, the Worker Controller's and the OTEL_* ones. The Kubernetes
// manifests' structure test (deploy/kubernetes) holds what they set to it.
func EnvNames() []string {
	var names []string
	for _, s := range workerSettings() {
		if s.env != "" {
			names = append(names, s.env)
		}
	}
	names = append(names, temporalClientVars()...)
	names = append(names, EnvControllerDeploymentName, EnvControllerBuildID,
		EnvOTLPEndpoint, EnvOTLPTracesEndpoint, EnvOTLPProtocol, EnvOTLPTracesProtocol, EnvOTelServiceName, EnvOTelResourceAttrs, EnvCaptureContent)
	slices.Sort(names)
	return slices.Compact(names)
}
