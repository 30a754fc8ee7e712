package deploy

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"arbiter.dev/clients/go/k8s/translate"
)

// find returns the typed object of kind T named name.
func find[T any](t *testing.T, objs []object, name string) T {
	t.Helper()
	for _, o := range objs {
		if typed, ok := o.obj.(T); ok {
			if a, ok := any(typed).(interface{ GetName() string }); ok && a.GetName() == name {
				return typed
			}
		}
	}
	var zero T
	t.Fatalf("no %T named %s", zero, name)
	return zero
}

func container(t *testing.T, d *appsv1.Deployment, name string) corev1.Container {
	t.Helper()
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("deployment %s has no container %s", d.Name, name)
	return corev1.Container{}
}

// checkHardened asserts the security and resource settings every arbiter container has.
func checkHardened(t *testing.T, d *appsv1.Deployment, c corev1.Container) {
	t.Helper()
	pod := d.Spec.Template.Spec.SecurityContext
	if pod == nil || pod.RunAsNonRoot == nil || !*pod.RunAsNonRoot || pod.RunAsUser == nil || *pod.RunAsUser == 0 {
		t.Errorf("%s: pod must run as a non-root user, got %+v", d.Name, pod)
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("%s/%s: want a read-only root filesystem, no privilege escalation, all capabilities dropped; got %+v", d.Name, c.Name, sc)
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := c.Resources.Requests[r]; !ok {
			t.Errorf("%s/%s: no %s request", d.Name, c.Name, r)
		}
		if _, ok := c.Resources.Limits[r]; !ok {
			t.Errorf("%s/%s: no %s limit", d.Name, c.Name, r)
		}
	}
}

func TestServerDeploymentIsProductionReady(t *testing.T) {
	for _, layout := range []struct {
		name string
		objs func(*testing.T) []object
	}{{"Chart", func(t *testing.T) []object { return chartObjects(t, nil) }},
		{"KustomizeBase", func(t *testing.T) []object { return kustomizeObjects(t, baseDir) }}} {
		t.Run(layout.name, func(t *testing.T) {
			objs := layout.objs(t)
			d := find[*appsv1.Deployment](t, objs, "arbiter-server")
			if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
				t.Errorf("replicas = %v, want 2", d.Spec.Replicas)
			}
			c := container(t, d, "arbiter-server")
			for name, probe := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
				if probe == nil || probe.GRPC == nil || probe.GRPC.Port != 50051 {
					t.Errorf("%s probe = %+v, want a gRPC health probe on 50051", name, probe)
				}
			}
			if !slices.Contains(c.Args, "--port=50051") || !slices.Contains(c.Args, "--metrics-port=9464") {
				t.Errorf("args = %v, want the gRPC and metrics ports", c.Args)
			}
			checkHardened(t, d, c)
			checkDrain(t, d, c)
			if a := d.Spec.Template.Spec.AutomountServiceAccountToken; a == nil || *a {
				t.Error("the server needs no API access: automountServiceAccountToken must be false")
			}
		})
	}
}

// checkDrain: on SIGTERM the server keeps answering for --drain-seconds while health says
// NOT_SERVING; the readiness probe must take the pod out of the Services within that time, and
// the pod must be given the drain plus the grace for calls in flight before it is killed.
func checkDrain(t *testing.T, d *appsv1.Deployment, c corev1.Container) {
	t.Helper()
	flags := map[string]int64{}
	for _, arg := range c.Args {
		for _, name := range []string{"--drain-seconds", "--shutdown-grace-seconds"} {
			if v, ok := strings.CutPrefix(arg, name+"="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					t.Fatalf("%s: %v", arg, err)
				}
				flags[name] = n
			}
		}
	}
	drain, okDrain := flags["--drain-seconds"]
	grace, okGrace := flags["--shutdown-grace-seconds"]
	if !okDrain || !okGrace || !slices.Contains(c.Args, "--log-level=info") {
		t.Fatalf("args = %v, want --drain-seconds, --shutdown-grace-seconds and --log-level=info", c.Args)
	}
	if p := c.ReadinessProbe; p == nil || int64(p.PeriodSeconds)*int64(p.FailureThreshold) > drain {
		t.Errorf("readiness probe %+v does not notice NOT_SERVING within the %d s drain", p, drain)
	}
	period := d.Spec.Template.Spec.TerminationGracePeriodSeconds
	if period == nil || *period < drain+grace {
		t.Errorf("terminationGracePeriodSeconds = %v, want at least %d (drain %d + grace %d)",
			period, drain+grace, drain, grace)
	}
}

func TestServicesExposeHeadlessGRPCAndMetrics(t *testing.T) {
	objs := chartObjects(t, nil)
	grpc := find[*corev1.Service](t, objs, "arbiter-server-grpc")
	if grpc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("gRPC Service clusterIP = %q, want None (headless, for client-side balancing)", grpc.Spec.ClusterIP)
	}
	if len(grpc.Spec.Ports) != 1 || grpc.Spec.Ports[0].Port != 50051 || grpc.Spec.Ports[0].AppProtocol == nil || *grpc.Spec.Ports[0].AppProtocol != "grpc" {
		t.Errorf("gRPC Service ports = %+v", grpc.Spec.Ports)
	}
	server := find[*appsv1.Deployment](t, objs, "arbiter-server")
	for _, svc := range []*corev1.Service{grpc, find[*corev1.Service](t, objs, "arbiter-server-metrics")} {
		if diff := cmp.Diff(server.Spec.Selector.MatchLabels, svc.Spec.Selector); diff != "" {
			t.Errorf("%s selects other pods than the server Deployment (-deployment +service):\n%s", svc.Name, diff)
		}
	}
	metrics := find[*corev1.Service](t, objs, "arbiter-server-metrics")
	if len(metrics.Spec.Ports) != 1 || metrics.Spec.Ports[0].Port != 9464 {
		t.Errorf("metrics Service ports = %+v", metrics.Spec.Ports)
	}
	shim := find[*appsv1.Deployment](t, objs, "arbiter-k8s")
	shimMetrics := find[*corev1.Service](t, objs, "arbiter-k8s-metrics")
	if diff := cmp.Diff(shim.Spec.Selector.MatchLabels, shimMetrics.Spec.Selector); diff != "" {
		t.Errorf("arbiter-k8s-metrics selects other pods (-deployment +service):\n%s", diff)
	}
}

func TestSchedulerDeployment(t *testing.T) {
	objs := chartObjects(t, nil)
	d := find[*appsv1.Deployment](t, objs, "arbiter-k8s")
	c := container(t, d, "arbiter-k8s")
	want := []string{
		"--scheduler-name=arbiter",
		"--server=dns:///arbiter-server-grpc.arbiter-system.svc.cluster.local:50051",
		"--queue-configmap=arbiter-queues",
		"--usage-configmap=arbiter-usage",
		"--lease-name=arbiter-k8s",
	}
	for _, arg := range want {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("args %v lack %s", c.Args, arg)
		}
	}
	if d.Spec.Template.Spec.ServiceAccountName != "arbiter-k8s" {
		t.Errorf("service account = %q", d.Spec.Template.Spec.ServiceAccountName)
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" ||
		c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("probes = %+v / %+v, want /healthz and /readyz", c.LivenessProbe, c.ReadinessProbe)
	}
	checkHardened(t, d, c)
}

func TestSidecarLayoutRunsTheServerInTheSchedulerPod(t *testing.T) {
	objs := chartObjects(t, map[string]any{
		"server":    map[string]any{"enabled": false},
		"scheduler": map[string]any{"sidecarServer": true},
	})
	d := find[*appsv1.Deployment](t, objs, "arbiter-k8s")
	if !slices.Contains(container(t, d, "arbiter-k8s").Args, "--server=localhost:50051") {
		t.Error("the scheduler does not call the sidecar on localhost")
	}
	checkHardened(t, d, container(t, d, "arbiter-server"))
	for _, o := range objs {
		if strings.HasPrefix(o.key(), "Deployment arbiter-system/arbiter-server") || strings.HasPrefix(o.key(), "Service arbiter-system/arbiter-server") {
			t.Errorf("%s rendered with server.enabled=false", o.key())
		}
	}
}

// TestSchedulerRBACIsLeastPrivilege pins every permission arbiter-k8s has: adding one must be a
// deliberate change of this test.
func TestSchedulerRBACIsLeastPrivilege(t *testing.T) {
	objs := chartObjects(t, nil)
	cluster := find[*rbacv1.ClusterRole](t, objs, "arbiter-k8s")
	wantCluster := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "nodes"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"pods/binding", "pods/eviction"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"pods/status"}, Verbs: []string{"patch"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"patch"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		{APIGroups: []string{"scheduling.run.ai"}, Resources: []string{"queues"}, Verbs: []string{"get", "list", "watch"}},
	}
	if diff := cmp.Diff(wantCluster, cluster.Rules); diff != "" {
		t.Errorf("ClusterRole rules (-want +got):\n%s", diff)
	}
	role := find[*rbacv1.Role](t, objs, "arbiter-k8s")
	wantRole := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"arbiter-queues"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"arbiter-usage"}, Verbs: []string{"get", "update"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{"arbiter-k8s"}, Verbs: []string{"get", "update"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "delete"}},
	}
	if diff := cmp.Diff(wantRole, role.Rules); diff != "" {
		t.Errorf("Role rules (-want +got):\n%s", diff)
	}
	for _, b := range []struct {
		subjects []rbacv1.Subject
		ref      rbacv1.RoleRef
	}{
		{find[*rbacv1.ClusterRoleBinding](t, objs, "arbiter-k8s").Subjects, find[*rbacv1.ClusterRoleBinding](t, objs, "arbiter-k8s").RoleRef},
		{find[*rbacv1.RoleBinding](t, objs, "arbiter-k8s").Subjects, find[*rbacv1.RoleBinding](t, objs, "arbiter-k8s").RoleRef},
	} {
		want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "arbiter-k8s", Namespace: namespace}}
		if diff := cmp.Diff(want, b.subjects); diff != "" || b.ref.Name != "arbiter-k8s" {
			t.Errorf("binding to %s: subjects (-want +got):\n%s", b.ref.Name, diff)
		}
	}
}

// TestQueueConfigMapIsAValidQueueConfig parses the example with the shim's own parser.
func TestQueueConfigMapIsAValidQueueConfig(t *testing.T) {
	cm := find[*corev1.ConfigMap](t, kustomizeObjects(t, baseDir), "arbiter-queues")
	cfg, err := translate.ParseQueueConfig([]byte(cm.Data[translate.QueueConfigKey]))
	if err != nil {
		t.Fatalf("the example queue ConfigMap does not parse: %v", err)
	}
	parents := map[string]string{}
	for _, q := range cfg.Queues {
		parents[q.GetName()] = q.GetParent()
	}
	if diff := cmp.Diff(map[string]string{"research": "", "team-a": "research", "team-b": "research"}, parents); diff != "" {
		t.Errorf("queues (-want +got):\n%s", diff)
	}
}
