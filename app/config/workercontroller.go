package config

// The variables Temporal's Worker Controller sets on every pod of a version
// it manages (deploy/kubernetes/workercontroller; docs/operations.md). The
// worker takes its deployment name and build id from them unless
// RALPH_DEPLOYMENT_NAME / RALPH_BUILD_ID (or their flags) say otherwise, so
// that its pollers join exactly the version the controller rolls out.
const (
	EnvControllerDeploymentName = "TEMPORAL_DEPLOYMENT_NAME"
	EnvControllerBuildID        = "TEMPORAL_WORKER_BUILD_ID"
)

// fromWorkerController fills v from the Worker Controller's variables; the
// settings applied after it win.
func (v *Versioning) fromWorkerController(env Env) {
	if name, ok := lookup(env, EnvControllerDeploymentName); ok && name != "" {
		v.DeploymentName = name
	}
	if id, ok := lookup(env, EnvControllerBuildID); ok && id != "" {
		v.BuildID = id
	}
}
