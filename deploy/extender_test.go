package deploy

import (
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	schedconfigv1 "k8s.io/kube-scheduler/config/v1"
)

// The extender layout's objects, named after the release "arbiter".
const (
	extDeployment    = "arbiter-kube-scheduler"
	extConfigMap     = "arbiter-kube-scheduler"
	extConfigKey     = "kube-scheduler.yaml"
	extLease         = "arbiter-kube-scheduler"
	extAccount       = "arbiter-kube-scheduler"
	extUsageCM       = "arbiter-extender-usage"
	extQueuesCM      = "arbiter-queues"
	extSchedulerName = "arbiter-extended"
)

// extenderLayouts are the renderings with the extender on: the chart (bind verb off and on) and
// the kustomize overlay.
func extenderLayouts() []struct {
	name string
	bind bool
	objs func(*testing.T) []object
} {
	withBind := map[string]any{"extender": map[string]any{"enabled": true, "bindGangs": true}}
	return []struct {
		name string
		bind bool
		objs func(*testing.T) []object
	}{
		{"Chart", false, func(t *testing.T) []object { return chartObjects(t, extenderValues) }},
		{"ChartBindGangs", true, func(t *testing.T) []object { return chartObjects(t, withBind) }},
		{"KustomizeOverlay", false, func(t *testing.T) []object { return kustomizeObjects(t, extenderOverlayDir) }},
	}
}

// schedulerConfigScheme knows kubescheduler.config.k8s.io/v1 only, so that the decoder refuses
// any other kind as well as unknown and duplicate fields.
func decodeSchedulerConfig(data []byte) (*schedconfigv1.KubeSchedulerConfiguration, error) {
	scheme := runtime.NewScheme()
	if err := schedconfigv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	obj, _, err := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer().Decode(data, nil, nil)
	if err != nil {
		return nil, err
	}
	cfg, ok := obj.(*schedconfigv1.KubeSchedulerConfiguration)
	if !ok {
		return nil, &unexpectedKind{obj}
	}
	return cfg, nil
}

type unexpectedKind struct{ obj runtime.Object }

func (e *unexpectedKind) Error() string {
	return "not a KubeSchedulerConfiguration: " + e.obj.GetObjectKind().GroupVersionKind().String()
}

func schedulerConfig(t *testing.T, objs []object) *schedconfigv1.KubeSchedulerConfiguration {
	t.Helper()
	cm := find[*corev1.ConfigMap](t, objs, extConfigMap)
	cfg, err := decodeSchedulerConfig([]byte(cm.Data[extConfigKey]))
	if err != nil {
		t.Fatalf("ConfigMap %s key %s does not decode strictly as kubescheduler.config.k8s.io/v1: %v\n%s",
			extConfigMap, extConfigKey, err, cm.Data[extConfigKey])
	}
	return cfg
}

// flagValue returns the value of --name=value in args.
func flagValue(t *testing.T, args []string, name string) string {
	t.Helper()
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	t.Fatalf("args %v lack --%s", args, name)
	return ""
}

func TestExtenderSchedulerConfiguration(t *testing.T) {
	for _, layout := range extenderLayouts() {
		t.Run(layout.name, func(t *testing.T) {
			objs := layout.objs(t)
			cfg := schedulerConfig(t, objs)
			if len(cfg.Extenders) != 1 {
				t.Fatalf("extenders = %+v, want arbiter-extender only", cfg.Extenders)
			}
			got := cfg.Extenders[0]
			want := schedconfigv1.Extender{
				URLPrefix:        "http://localhost:8888",
				FilterVerb:       "filter",
				PrioritizeVerb:   "prioritize",
				PreemptVerb:      "preempt",
				Weight:           100,
				NodeCacheCapable: true,
				Ignorable:        false,
				HTTPTimeout:      got.HTTPTimeout,
				ManagedResources: []schedconfigv1.ExtenderManagedResource{{Name: "nvidia.com/gpu"}},
			}
			if layout.bind {
				want.BindVerb = "bind"
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("extender (-want +got):\n%s", diff)
			}

			// The profile is the scheduler name the extender decides for, and the Lease is the
			// one the Role grants.
			if len(cfg.Profiles) != 1 || cfg.Profiles[0].SchedulerName == nil || *cfg.Profiles[0].SchedulerName != extSchedulerName {
				t.Errorf("profiles = %+v, want one named %s", cfg.Profiles, extSchedulerName)
			}
			le := cfg.LeaderElection
			if le.LeaderElect == nil || !*le.LeaderElect || le.ResourceLock != "leases" ||
				le.ResourceNamespace != namespace || le.ResourceName != extLease {
				t.Errorf("leaderElection = %+v, want Lease %s/%s", le, namespace, extLease)
			}

			d := find[*appsv1.Deployment](t, objs, extDeployment)
			ext := container(t, d, "arbiter-extender")
			if got := flagValue(t, ext.Args, "scheduler-name"); got != *cfg.Profiles[0].SchedulerName {
				t.Errorf("the extender decides for %q, kube-scheduler's profile is %q", got, *cfg.Profiles[0].SchedulerName)
			}
			if port := strings.TrimPrefix(flagValue(t, ext.Args, "addr"), ":"); got.URLPrefix != "http://localhost:"+port {
				t.Errorf("urlPrefix %s does not reach the extender's --addr=:%s", got.URLPrefix, port)
			}
			if slices.Contains(ext.Args, "--bind") != (got.BindVerb != "") {
				t.Errorf("bindVerb %q but extender args %v: --bind and bindVerb go together", got.BindVerb, ext.Args)
			}
			gangWait, err := time.ParseDuration(flagValue(t, ext.Args, "gang-wait"))
			if err != nil {
				t.Fatal(err)
			}
			if got.HTTPTimeout.Duration <= gangWait {
				t.Errorf("httpTimeout %v must exceed --gang-wait %v, or kube-scheduler gives up on a held bind", got.HTTPTimeout.Duration, gangWait)
			}
		})
	}
}

func TestExtenderSchedulerConfigurationFromValues(t *testing.T) {
	objs := chartObjects(t, map[string]any{"extender": map[string]any{
		"enabled":          true,
		"schedulerName":    "default-scheduler",
		"httpTimeout":      "45s",
		"managedResources": []any{map[string]any{"name": "example.com/fpga", "ignoredByScheduler": true}, map[string]any{"name": "nvidia.com/gpu"}},
	}})
	cfg := schedulerConfig(t, objs)
	want := []schedconfigv1.ExtenderManagedResource{{Name: "example.com/fpga", IgnoredByScheduler: true}, {Name: "nvidia.com/gpu"}}
	if diff := cmp.Diff(want, cfg.Extenders[0].ManagedResources); diff != "" {
		t.Errorf("managedResources (-want +got):\n%s", diff)
	}
	if cfg.Extenders[0].HTTPTimeout.Duration != 45*time.Second {
		t.Errorf("httpTimeout = %v, want 45s", cfg.Extenders[0].HTTPTimeout.Duration)
	}
	if *cfg.Profiles[0].SchedulerName != "default-scheduler" {
		t.Errorf("profile = %s, want default-scheduler", *cfg.Profiles[0].SchedulerName)
	}
	ext := container(t, find[*appsv1.Deployment](t, objs, extDeployment), "arbiter-extender")
	if got := flagValue(t, ext.Args, "scheduler-name"); got != "default-scheduler" {
		t.Errorf("--scheduler-name=%s, want default-scheduler", got)
	}

	// An empty list sends the extender every pod: the field is left out, not written empty.
	cfg = schedulerConfig(t, chartObjects(t, map[string]any{"extender": map[string]any{"enabled": true, "managedResources": []any{}}}))
	if cfg.Extenders[0].ManagedResources != nil {
		t.Errorf("managedResources = %+v, want none", cfg.Extenders[0].ManagedResources)
	}
}

// TestSchedulerConfigDecodingIsStrict makes sure the decoder above would catch a misspelt field.
func TestSchedulerConfigDecodingIsStrict(t *testing.T) {
	cm := find[*corev1.ConfigMap](t, chartObjects(t, extenderValues), extConfigMap)
	text := cm.Data[extConfigKey]
	for _, bad := range []struct{ from, to string }{
		{"nodeCacheCapable:", "nodeCachCapable:"},
		{"kind: KubeSchedulerConfiguration", "kind: KubeSchedulerConfig"},
		{"ignorable: false", "ignorable: false\n        ignorable: true"},
	} {
		if !strings.Contains(text, bad.from) {
			t.Fatalf("configuration lacks %q", bad.from)
		}
		if _, err := decodeSchedulerConfig([]byte(strings.Replace(text, bad.from, bad.to, 1))); err == nil {
			t.Errorf("replacing %q by %q still decodes", bad.from, bad.to)
		}
	}
}

func TestExtenderDeployment(t *testing.T) {
	for _, layout := range extenderLayouts() {
		t.Run(layout.name, func(t *testing.T) {
			objs := layout.objs(t)
			d := find[*appsv1.Deployment](t, objs, extDeployment)
			spec := d.Spec.Template.Spec
			if spec.ServiceAccountName != extAccount {
				t.Errorf("service account = %q, want %s", spec.ServiceAccountName, extAccount)
			}
			var names []string
			for _, c := range spec.Containers {
				names = append(names, c.Name)
				checkHardened(t, d, c)
				if c.LivenessProbe == nil || c.ReadinessProbe == nil {
					t.Errorf("%s: liveness %+v, readiness %+v: want both", c.Name, c.LivenessProbe, c.ReadinessProbe)
				}
			}
			if diff := cmp.Diff([]string{"kube-scheduler", "arbiter-extender", "arbiter-server"}, names); diff != "" {
				t.Errorf("containers (-want +got):\n%s", diff)
			}

			ks := container(t, d, "kube-scheduler")
			if ks.Image != "registry.k8s.io/kube-scheduler:v1.37.2" {
				t.Errorf("kube-scheduler image = %s", ks.Image)
			}
			for name, p := range map[string]*corev1.Probe{"/livez": ks.LivenessProbe, "/readyz": ks.ReadinessProbe} {
				if p.HTTPGet == nil || p.HTTPGet.Path != name || p.HTTPGet.Scheme != corev1.URISchemeHTTPS || p.HTTPGet.Port.String() != "sched-https" {
					t.Errorf("kube-scheduler probe %+v, want HTTPS %s on its secure port", p.HTTPGet, name)
				}
			}
			// --config names the ConfigMap's key, mounted from the ConfigMap.
			config := flagValue(t, ks.Args, "config")
			mounted := false
			for _, m := range ks.VolumeMounts {
				for _, v := range spec.Volumes {
					if v.Name == m.Name && v.ConfigMap != nil && v.ConfigMap.Name == extConfigMap &&
						path.Join(m.MountPath, extConfigKey) == config {
						mounted = true
					}
				}
			}
			if !mounted {
				t.Errorf("--config=%s is not key %s of ConfigMap %s as mounted (%+v, %+v)", config, extConfigKey, extConfigMap, ks.VolumeMounts, spec.Volumes)
			}

			ext := container(t, d, "arbiter-extender")
			for _, want := range []string{
				"--server=localhost:50051",
				"--addr=:8888",
				"--scheduler-name=" + extSchedulerName,
				"--queue-configmap=" + extQueuesCM,
				"--usage-configmap=" + extUsageCM,
			} {
				if !slices.Contains(ext.Args, want) {
					t.Errorf("extender args %v lack %s", ext.Args, want)
				}
			}
			for name, p := range map[string]*corev1.Probe{"/healthz": ext.LivenessProbe, "/readyz": ext.ReadinessProbe} {
				if p.HTTPGet == nil || p.HTTPGet.Path != name || p.HTTPGet.Port.String() != "extender" {
					t.Errorf("extender probe %+v, want %s on its port", p.HTTPGet, name)
				}
			}
			server := container(t, d, "arbiter-server")
			if p := server.ReadinessProbe; p.GRPC == nil || p.GRPC.Port != 50051 {
				t.Errorf("server readiness probe = %+v, want gRPC on 50051", p)
			}
			// The usage ConfigMap ships empty, so that the extender never needs to create it.
			usage := find[*corev1.ConfigMap](t, objs, extUsageCM)
			if len(usage.Data) != 0 || len(usage.BinaryData) != 0 {
				t.Errorf("%s ships with data %v", extUsageCM, usage.Data)
			}
			find[*corev1.ConfigMap](t, objs, extQueuesCM)
		})
	}
}

// TestExtenderSidecarServerIgnoresTLS: arbiter-extender dials its sidecar in plain text on
// localhost, so the server beside it must not demand client certificates.
func TestExtenderSidecarServerIgnoresTLS(t *testing.T) {
	objs := chartObjects(t, map[string]any{"tls": map[string]any{"enabled": true}, "extender": map[string]any{"enabled": true}})
	d := find[*appsv1.Deployment](t, objs, extDeployment)
	for _, a := range container(t, d, "arbiter-server").Args {
		if strings.HasPrefix(a, "--tls") {
			t.Errorf("the extender's sidecar server has %s", a)
		}
	}
	// The server Deployment keeps TLS.
	if !slices.Contains(container(t, find[*appsv1.Deployment](t, objs, "arbiter-server"), "arbiter-server").Args,
		"--tls-client-ca=/etc/arbiter/tls/ca.crt") {
		t.Error("tls.enabled no longer reaches the server Deployment")
	}
}

// TestExtenderRBAC pins every permission of the extender layout. The extender's own rules are
// what package clients/go/k8s/extender and the shim's Decide use: the informers' reads (pods,
// nodes, disruption budgets, the queue ConfigMap, and KAI's queues when shim.Config.KAIQueues is
// set), the usage ledger's get and update, and bindings when it serves the bind verb. Nothing
// writes pod status, events or evictions: kube-scheduler does. Adding a rule must be a
// deliberate change of this test.
func TestExtenderRBAC(t *testing.T) {
	for _, layout := range extenderLayouts() {
		t.Run(layout.name, func(t *testing.T) {
			objs := layout.objs(t)
			wantCluster := []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"pods", "nodes"}, Verbs: []string{"get", "list", "watch"}},
				{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: []string{"get", "list", "watch"}},
			}
			if layout.bind {
				wantCluster = append(wantCluster, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/binding"}, Verbs: []string{"create"}})
			}
			wantCluster = append(wantCluster, rbacv1.PolicyRule{APIGroups: []string{"scheduling.run.ai"}, Resources: []string{"queues"}, Verbs: []string{"get", "list", "watch"}})
			if diff := cmp.Diff(wantCluster, find[*rbacv1.ClusterRole](t, objs, "arbiter-extender").Rules); diff != "" {
				t.Errorf("extender ClusterRole rules (-want +got):\n%s", diff)
			}
			wantRole := []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{extQueuesCM}, Verbs: []string{"get", "list", "watch"}},
				{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{extUsageCM}, Verbs: []string{"get", "update"}},
			}
			if diff := cmp.Diff(wantRole, find[*rbacv1.Role](t, objs, "arbiter-extender").Rules); diff != "" {
				t.Errorf("extender Role rules (-want +got):\n%s", diff)
			}
			wantLease := []rbacv1.PolicyRule{
				{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
				{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{extLease}, Verbs: []string{"get", "update"}},
			}
			if diff := cmp.Diff(wantLease, find[*rbacv1.Role](t, objs, "arbiter-kube-scheduler").Rules); diff != "" {
				t.Errorf("kube-scheduler lease Role rules (-want +got):\n%s", diff)
			}

			// Every binding gives its role to the pod's ServiceAccount and nothing else.
			subjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: extAccount, Namespace: namespace}}
			type binding struct{ kind, namespace, role string }
			wantBindings := map[string]binding{
				"ClusterRoleBinding arbiter-kube-scheduler":        {"ClusterRole", "", "system:kube-scheduler"},
				"ClusterRoleBinding arbiter-kube-scheduler-volume": {"ClusterRole", "", "system:volume-scheduler"},
				"ClusterRoleBinding arbiter-extender":              {"ClusterRole", "", "arbiter-extender"},
				"RoleBinding arbiter-kube-scheduler-auth-reader":   {"Role", "kube-system", "extension-apiserver-authentication-reader"},
				"RoleBinding arbiter-kube-scheduler":               {"Role", namespace, "arbiter-kube-scheduler"},
				"RoleBinding arbiter-extender":                     {"Role", namespace, "arbiter-extender"},
			}
			got := map[string]binding{}
			for _, o := range objs {
				switch b := o.obj.(type) {
				case *rbacv1.ClusterRoleBinding:
					if slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool { return s.Name == extAccount }) {
						got["ClusterRoleBinding "+b.Name] = binding{b.RoleRef.Kind, "", b.RoleRef.Name}
						if diff := cmp.Diff(subjects, b.Subjects); diff != "" {
							t.Errorf("ClusterRoleBinding %s subjects (-want +got):\n%s", b.Name, diff)
						}
					}
				case *rbacv1.RoleBinding:
					if slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool { return s.Name == extAccount }) {
						got["RoleBinding "+b.Name] = binding{b.RoleRef.Kind, b.Namespace, b.RoleRef.Name}
						if diff := cmp.Diff(subjects, b.Subjects); diff != "" {
							t.Errorf("RoleBinding %s subjects (-want +got):\n%s", b.Name, diff)
						}
					}
				}
			}
			if diff := cmp.Diff(wantBindings, got, cmp.AllowUnexported(binding{})); diff != "" {
				t.Errorf("bindings of %s (-want +got):\n%s", extAccount, diff)
			}

			// The ConfigMaps the extender is told to use are the ones its Role names.
			ext := container(t, find[*appsv1.Deployment](t, objs, extDeployment), "arbiter-extender")
			if q, u := flagValue(t, ext.Args, "queue-configmap"), flagValue(t, ext.Args, "usage-configmap"); q != extQueuesCM || u != extUsageCM {
				t.Errorf("extender uses ConfigMaps %s and %s, its Role grants %s and %s", q, u, extQueuesCM, extUsageCM)
			}
		})
	}
}

// TestExtenderSwitch: off (the default), the chart renders nothing of the extender; on, it adds
// the extender's objects and leaves every other object as it was, which is what lets the overlay
// be the base plus files.
func TestExtenderSwitch(t *testing.T) {
	defaults := chartObjects(t, nil)
	off := chartObjects(t, map[string]any{"extender": map[string]any{"enabled": false, "bindGangs": true}})
	keys := func(objs []object) []string {
		var out []string
		for _, o := range objs {
			out = append(out, o.key())
		}
		slices.Sort(out)
		return out
	}
	if diff := cmp.Diff(keys(defaults), keys(off)); diff != "" {
		t.Errorf("extender.enabled=false renders other objects than the defaults (-defaults +off):\n%s", diff)
	}
	for _, k := range keys(defaults) {
		if strings.Contains(k, "extender") || strings.Contains(k, "kube-scheduler") {
			t.Errorf("%s rendered with the extender off", k)
		}
	}

	on := map[string]runtime.Object{}
	for _, o := range chartObjects(t, extenderValues) {
		on[o.key()] = o.obj
	}
	for _, o := range defaults {
		if !equality.Semantic.DeepEqual(o.obj, on[o.key()]) {
			t.Errorf("%s changes when the extender is turned on", o.key())
		}
		delete(on, o.key())
	}
	want := []string{
		"ClusterRole /arbiter-extender",
		"ClusterRoleBinding /arbiter-extender",
		"ClusterRoleBinding /arbiter-kube-scheduler",
		"ClusterRoleBinding /arbiter-kube-scheduler-volume",
		"ConfigMap arbiter-system/arbiter-extender-usage",
		"ConfigMap arbiter-system/arbiter-kube-scheduler",
		"Deployment arbiter-system/arbiter-kube-scheduler",
		"Role arbiter-system/arbiter-extender",
		"Role arbiter-system/arbiter-kube-scheduler",
		"RoleBinding arbiter-system/arbiter-extender",
		"RoleBinding arbiter-system/arbiter-kube-scheduler",
		"RoleBinding kube-system/arbiter-kube-scheduler-auth-reader",
		"ServiceAccount arbiter-system/arbiter-kube-scheduler",
	}
	if diff := cmp.Diff(want, sortedKeys(on)); diff != "" {
		t.Errorf("objects the extender adds (-want +got):\n%s", diff)
	}
}
