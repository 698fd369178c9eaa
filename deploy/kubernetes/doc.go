// Package kubernetes holds the worker's Kubernetes manifests (a kustomize
// base and its overlays) and their structure test. It is a module of its
// own so that the Kubernetes, kustomize and KEDA modules the test needs stay
// out of the worker's build.
package kubernetes
