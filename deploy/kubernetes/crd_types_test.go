package kubernetes

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The fields of the Worker Controller's temporal.io/v1alpha1 WorkerDeployment
// and Connection that these manifests may use, as its CRDs (chart 0.26, app
// v1.7 and later) declare them. The controller's own Go module is not served
// by the Go module proxy, so the test decodes into these; the pod template
// is the Kubernetes type itself, decoded strictly like every other object.

type workerDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              workerDeploymentSpec `json:"spec"`
}

type workerDeploymentSpec struct {
	Replicas                *int32                 `json:"replicas,omitempty"`
	Template                corev1.PodTemplateSpec `json:"template"`
	MinReadySeconds         int32                  `json:"minReadySeconds,omitempty"`
	ProgressDeadlineSeconds *int32                 `json:"progressDeadlineSeconds,omitempty"`
	Rollout                 rolloutStrategy        `json:"rollout"`
	Sunset                  sunsetStrategy         `json:"sunset"`
	WorkerOptions           workerOptions          `json:"workerOptions"`
}

type rolloutStrategy struct {
	Strategy string        `json:"strategy"` // Manual, AllAtOnce or Progressive
	Steps    []rolloutStep `json:"steps,omitempty"`
}

type rolloutStep struct {
	RampPercentage int             `json:"rampPercentage"`
	PauseDuration  metav1.Duration `json:"pauseDuration"`
}

type sunsetStrategy struct {
	ScaledownDelay *metav1.Duration `json:"scaledownDelay,omitempty"`
	DeleteDelay    *metav1.Duration `json:"deleteDelay,omitempty"`
}

type workerOptions struct {
	ConnectionRef     objectName `json:"connectionRef"`
	TemporalNamespace string     `json:"temporalNamespace"`
}

type connection struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		HostPort           string                    `json:"hostPort"`
		TLS                *connectionTLS            `json:"tls,omitempty"`
		MutualTLSSecretRef *objectName               `json:"mutualTLSSecretRef,omitempty"`
		APIKeySecretRef    *corev1.SecretKeySelector `json:"apiKeySecretRef,omitempty"`
	} `json:"spec"`
}

type objectName struct {
	Name string `json:"name"`
}

type connectionTLS struct {
	ServerName string `json:"serverName,omitempty"`
}
