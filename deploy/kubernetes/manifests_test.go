package kubernetes

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	kyamlutil "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/json"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/ralph-temporal/ralph/app/config"
	"github.com/ralph-temporal/ralph/app/workerapp"
)

// built is one overlay, every object strictly decoded into its own type.
type built struct {
	names            []string // kind/name, sorted
	deployment       *appsv1.Deployment
	workerDeployment *workerDeployment
	connection       *connection
	scaledObject     *kedav1alpha1.ScaledObject
	pdb              *policyv1.PodDisruptionBudget
	networkPolicy    *networkingv1.NetworkPolicy
	serviceAccount   *corev1.ServiceAccount
	volumeClaim      *corev1.PersistentVolumeClaim
}

// strict decodes one object: unknown and duplicate fields are errors.
func strict(data []byte, into any) error {
	errs, err := json.UnmarshalStrict(data, into)
	if err != nil {
		return err
	}
	if len(errs) > 0 {
		return fmt.Errorf("%v", errs)
	}
	return nil
}

// decodeInto picks the Go type of one object by its apiVersion and kind.
func (b *built) decodeInto(apiVersion, kind string) (any, error) {
	switch apiVersion + " " + kind {
	case "apps/v1 Deployment":
		b.deployment = &appsv1.Deployment{}
		return b.deployment, nil
	case "temporal.io/v1alpha1 WorkerDeployment":
		b.workerDeployment = &workerDeployment{}
		return b.workerDeployment, nil
	case "temporal.io/v1alpha1 Connection":
		b.connection = &connection{}
		return b.connection, nil
	case "keda.sh/v1alpha1 ScaledObject":
		b.scaledObject = &kedav1alpha1.ScaledObject{}
		return b.scaledObject, nil
	case "policy/v1 PodDisruptionBudget":
		b.pdb = &policyv1.PodDisruptionBudget{}
		return b.pdb, nil
	case "networking.k8s.io/v1 NetworkPolicy":
		b.networkPolicy = &networkingv1.NetworkPolicy{}
		return b.networkPolicy, nil
	case "v1 ServiceAccount":
		b.serviceAccount = &corev1.ServiceAccount{}
		return b.serviceAccount, nil
	case "v1 PersistentVolumeClaim":
		b.volumeClaim = &corev1.PersistentVolumeClaim{}
		return b.volumeClaim, nil
	}
	return nil, fmt.Errorf("no Go type for %s %s", apiVersion, kind)
}

// build runs kustomize on one directory as `kubectl apply -k` would.
func build(t *testing.T, dir string) *built {
	t.Helper()
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	b := &built{}
	for _, r := range res.Resources() {
		data, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		into, err := b.decodeInto(r.GetApiVersion(), r.GetKind())
		if err != nil {
			t.Fatalf("%s: %s %s: %v", dir, r.GetKind(), r.GetName(), err)
		}
		if err := strict(data, into); err != nil {
			t.Fatalf("%s: %s %s does not decode strictly into its Go type: %v", dir, r.GetKind(), r.GetName(), err)
		}
		b.names = append(b.names, r.GetKind()+"/"+r.GetName())
	}
	sort.Strings(b.names)
	return b
}

func (b *built) podTemplate(t *testing.T) corev1.PodTemplateSpec {
	t.Helper()
	switch {
	case b.deployment != nil && b.workerDeployment == nil:
		return b.deployment.Spec.Template
	case b.workerDeployment != nil && b.deployment == nil:
		return b.workerDeployment.Spec.Template
	}
	t.Fatalf("want exactly one of a Deployment and a WorkerDeployment, got %v", b.names)
	return corev1.PodTemplateSpec{}
}

var common = []string{"NetworkPolicy/ralph-worker", "PersistentVolumeClaim/ralph-data", "PodDisruptionBudget/ralph-worker", "ServiceAccount/ralph-worker"}

func TestOverlaysBuildIntoTheirTypes(t *testing.T) {
	for _, c := range []struct {
		dir  string
		want []string
	}{
		{"base", append([]string{"Deployment/ralph-worker"}, common...)},
		{"keda", append([]string{"Deployment/ralph-worker", "ScaledObject/ralph-worker"}, common...)},
		{"workercontroller", append([]string{"Connection/ralph-temporal", "WorkerDeployment/ralph-worker"}, common...)},
	} {
		t.Run(c.dir, func(t *testing.T) {
			b := build(t, c.dir)
			sort.Strings(c.want)
			if !slices.Equal(b.names, c.want) {
				t.Errorf("objects = %v, want %v", b.names, c.want)
			}
			checkPod(t, b.podTemplate(t))
			checkSelectors(t, b)
		})
	}
}

// workerEnv is the environment the container starts with: literal values,
// and a stand-in for each value read from a Secret.
func workerEnv(t *testing.T, c corev1.Container) config.MapEnv {
	t.Helper()
	known := config.EnvNames()
	env := config.MapEnv{}
	for _, e := range c.Env {
		if !slices.Contains(known, e.Name) {
			t.Errorf("env %s is not a setting the worker reads (docs/reference.md)", e.Name)
		}
		switch {
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			env[e.Name] = "from-secret-" + e.ValueFrom.SecretKeyRef.Name
		case e.ValueFrom != nil:
			t.Errorf("env %s: only literal values and secretKeyRef are used", e.Name)
		default:
			env[e.Name] = e.Value
		}
	}
	return env
}

func port(t *testing.T, address string) int32 {
	t.Helper()
	_, p, err := net.SplitHostPort(address)
	if err != nil {
		t.Fatalf("address %q: %v", address, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("address %q: %v", address, err)
	}
	return int32(n)
}

func containerPort(t *testing.T, c corev1.Container, name string) int32 {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	t.Fatalf("container %s has no port named %q", c.Name, name)
	return 0
}

func probePort(t *testing.T, c corev1.Container, p intstr.IntOrString) int32 {
	t.Helper()
	if p.Type == intstr.String {
		return containerPort(t, c, p.StrVal)
	}
	return p.IntVal
}

// checkPod holds the pod template to the worker it runs: its settings
// parse, the probes hit the health server, the grace period outlasts the
// drain, and the security settings are the ones docs/security.md explains.
func checkPod(t *testing.T, tmpl corev1.PodTemplateSpec) {
	t.Helper()
	spec := tmpl.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("containers = %d, want the worker only", len(spec.Containers))
	}
	c := spec.Containers[0]
	env := workerEnv(t, c)
	cfg, err := config.LoadWorker(nil, env, io.Discard)
	if err != nil {
		t.Fatalf("the worker refuses the manifests' settings: %v", err)
	}
	if err := cfg.CheckModel(); err != nil {
		t.Error(err)
	}

	if cfg.HealthAddress == "" || cfg.MetricsAddress == "" {
		t.Fatalf("RALPH_HEALTH_ADDRESS=%q RALPH_METRICS_ADDRESS=%q: both must be set", cfg.HealthAddress, cfg.MetricsAddress)
	}
	for _, p := range []struct {
		what  string
		probe *corev1.Probe
		path  string
	}{{"liveness", c.LivenessProbe, workerapp.LivePath}, {"readiness", c.ReadinessProbe, workerapp.ReadyPath}} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("%s probe: want an httpGet probe", p.what)
			continue
		}
		if got, want := p.probe.HTTPGet.Path, p.path; got != want {
			t.Errorf("%s probe path = %s, want %s", p.what, got, want)
		}
		if got, want := probePort(t, c, p.probe.HTTPGet.Port), port(t, cfg.HealthAddress); got != want {
			t.Errorf("%s probe port = %d, want RALPH_HEALTH_ADDRESS's %d", p.what, got, want)
		}
	}
	if got, least := time.Duration(c.ReadinessProbe.TimeoutSeconds)*time.Second, workerapp.ReadyCheckTimeout; got <= least {
		t.Errorf("readiness timeoutSeconds = %s, want more than /readyz's own bound %s", got, least)
	}
	if got, want := containerPort(t, c, "metrics"), port(t, cfg.MetricsAddress); got != want {
		t.Errorf("metrics port = %d, want RALPH_METRICS_ADDRESS's %d", got, want)
	}
	if got, want := tmpl.Annotations["prometheus.io/port"], strconv.Itoa(int(port(t, cfg.MetricsAddress))); got != want {
		t.Errorf("prometheus.io/port = %q, want %q", got, want)
	}

	switch g := spec.TerminationGracePeriodSeconds; {
	case g == nil:
		t.Errorf("terminationGracePeriodSeconds is unset, want more than the worker's stop timeout %s", cfg.StopTimeout)
	case time.Duration(*g)*time.Second <= cfg.StopTimeout:
		t.Errorf("terminationGracePeriodSeconds = %d, want more than the worker's stop timeout %s", *g, cfg.StopTimeout)
	}
	checkSecurity(t, spec, c)
}

// checkSecurity: the least the sandbox needs, nothing privileged.
func checkSecurity(t *testing.T, spec corev1.PodSpec, c corev1.Container) {
	t.Helper()
	if spec.HostUsers == nil || *spec.HostUsers {
		t.Error("hostUsers: want false (the pod's own user namespace)")
	}
	if spec.HostNetwork || spec.HostPID || spec.HostIPC {
		t.Error("the pod shares a host namespace")
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Error("automountServiceAccountToken: want false")
	}
	psc, sc := spec.SecurityContext, c.SecurityContext
	if psc == nil || sc == nil {
		t.Fatal("want pod and container security contexts")
	}
	if psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Error("want runAsNonRoot and a non-zero runAsUser")
	}
	if sc.Privileged == nil || *sc.Privileged {
		t.Error("privileged: want false, set explicitly")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("allowPrivilegeEscalation: want false")
	}
	if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
		t.Errorf("capabilities = %+v, want drop [ALL] and nothing added", sc.Capabilities)
	}
	if sc.ProcMount == nil || *sc.ProcMount != corev1.UnmaskedProcMount {
		t.Error("procMount: want Unmasked (bubblewrap mounts a fresh /proc)")
	}
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			t.Errorf("volume %s is a hostPath", v.Name)
		}
	}
}

// checkSelectors: the budget and the policy select the worker's pods, the
// policy opens the metrics port, and the scaler and the controller point at
// objects of the same build.
func checkSelectors(t *testing.T, b *built) {
	t.Helper()
	tmpl := b.podTemplate(t)
	labels := tmpl.Labels
	for what, sel := range map[string]map[string]string{
		"PodDisruptionBudget": b.pdb.Spec.Selector.MatchLabels, "NetworkPolicy": b.networkPolicy.Spec.PodSelector.MatchLabels,
	} {
		if len(sel) == 0 {
			t.Errorf("%s selects every pod", what)
		}
		for k, v := range sel {
			if labels[k] != v {
				t.Errorf("%s selects %s=%s, the pods carry %q", what, k, v, labels[k])
			}
		}
	}
	if b.deployment != nil && !slices.Equal(sortedKeys(b.deployment.Spec.Selector.MatchLabels), sortedKeys(b.pdb.Spec.Selector.MatchLabels)) {
		t.Errorf("Deployment selector %v, budget selector %v", b.deployment.Spec.Selector.MatchLabels, b.pdb.Spec.Selector.MatchLabels)
	}
	if got := tmpl.Spec.ServiceAccountName; got != b.serviceAccount.Name {
		t.Errorf("serviceAccountName = %q, want %q", got, b.serviceAccount.Name)
	}
	c := tmpl.Spec.Containers[0]
	metrics := false
	for _, r := range b.networkPolicy.Spec.Ingress {
		for _, p := range r.Ports {
			metrics = metrics || probePort(t, c, *p.Port) == containerPort(t, c, "metrics")
		}
	}
	if !metrics {
		t.Error("the NetworkPolicy lets nothing reach the metrics port")
	}
	env := workerEnv(t, c)
	if so := b.scaledObject; so != nil {
		if ref := so.Spec.ScaleTargetRef; ref.Kind != "Deployment" || ref.Name != b.deployment.Name {
			t.Errorf("ScaledObject scales %s/%s, want Deployment/%s", ref.Kind, ref.Name, b.deployment.Name)
		}
		if len(so.Spec.Triggers) != 1 || so.Spec.Triggers[0].Type != "temporal" {
			t.Fatalf("triggers = %+v, want one temporal trigger", so.Spec.Triggers)
		}
		m := so.Spec.Triggers[0].Metadata
		if m["taskQueue"] != env["RALPH_TASK_QUEUE"] || m["endpoint"] != env["TEMPORAL_ADDRESS"] || m["namespace"] != env["TEMPORAL_NAMESPACE"] {
			t.Errorf("trigger %v does not watch the workers' queue %s on %s/%s", m, env["RALPH_TASK_QUEUE"], env["TEMPORAL_ADDRESS"], env["TEMPORAL_NAMESPACE"])
		}
	}
	if wd := b.workerDeployment; wd != nil {
		checkWorkerController(t, wd, b.connection, env)
	}
}

// checkWorkerController: the controller owns the version, the promotion and
// the connection, so the template leaves them to it.
func checkWorkerController(t *testing.T, wd *workerDeployment, conn *connection, env config.MapEnv) {
	t.Helper()
	if wd.Spec.WorkerOptions.ConnectionRef.Name != conn.Name {
		t.Errorf("connectionRef %q, the Connection is %q", wd.Spec.WorkerOptions.ConnectionRef.Name, conn.Name)
	}
	if !slices.Contains([]string{"Manual", "AllAtOnce", "Progressive"}, wd.Spec.Rollout.Strategy) {
		t.Errorf("rollout strategy %q", wd.Spec.Rollout.Strategy)
	}
	for _, name := range []string{"TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_API_KEY", "RALPH_DEPLOYMENT_NAME", "RALPH_BUILD_ID"} {
		if _, ok := env[name]; ok {
			t.Errorf("the template sets %s, which the controller sets on each version", name)
		}
	}
	if env["RALPH_VERSIONING"] != config.VersioningOn || env["RALPH_SET_CURRENT"] != config.SetCurrentNever {
		t.Errorf("RALPH_VERSIONING=%q RALPH_SET_CURRENT=%q, want on and never", env["RALPH_VERSIONING"], env["RALPH_SET_CURRENT"])
	}
	// The worker joins the controller's version: what the controller sets
	// on a pod becomes the worker's deployment name and build id.
	env[config.EnvControllerDeploymentName], env[config.EnvControllerBuildID] = "ralph/"+wd.Name, "ralph-worker-5d4f8c"
	cfg, err := config.LoadWorker(nil, env, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := (cfg.Versioning), (config.Versioning{Mode: config.VersioningOn, DeploymentName: "ralph/" + wd.Name, BuildID: "ralph-worker-5d4f8c", SetCurrent: config.SetCurrentNever, Behavior: config.BehaviorAutoUpgrade}); got != want {
		t.Errorf("versioning under the controller = %+v, want %+v", got, want)
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// The example Secrets are the ones the manifests read, with the keys they read.
func TestExampleSecretsAreTheOnesReferenced(t *testing.T) {
	data, err := os.ReadFile("examples/secrets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	have := map[string][]string{}
	dec := kyamlutil.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := dec.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			t.Fatal(err)
		}
		var s corev1.Secret
		if err := strict(j, &s); err != nil {
			t.Fatalf("examples/secrets.yaml: %v", err)
		}
		have[s.Name] = sortedKeys(s.StringData)
	}
	want := map[string][]string{}
	for _, e := range build(t, "base").deployment.Spec.Template.Spec.Containers[0].Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			ref := e.ValueFrom.SecretKeyRef
			want[ref.Name] = append(want[ref.Name], ref.Key)
		}
	}
	if fmt.Sprint(have) != fmt.Sprint(want) {
		t.Errorf("examples/secrets.yaml has %v, the manifests read %v", have, want)
	}
}
