package deploy

import (
	"context"
	"errors"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// The kueue layout's objects, named after the release "arbiter".
const (
	kueueDeployment     = "arbiter-kueue"
	kueueContainer      = "arbiter-kueue"
	kueueAccount        = "arbiter-kueue"
	kueueRole           = "arbiter-kueue"
	kueueUsageCM        = "arbiter-kueue-usage"
	kueueLease          = "arbiter-kueue"
	kueueMetrics        = "arbiter-kueue-metrics"
	kueueCheck          = "time-aware"
	kueueControllerName = "arbiter.dev/time-aware"
	kueueServerTarget   = "dns:///arbiter-server-grpc.arbiter-system.svc.cluster.local:50051"
)

// kueueLayouts are the renderings with kueue.enabled=true: the chart and the kustomize overlay.
func kueueLayouts() []struct {
	name string
	objs func(*testing.T) []object
} {
	return []struct {
		name string
		objs func(*testing.T) []object
	}{
		{"Chart", func(t *testing.T) []object { return chartObjects(t, kueueValues) }},
		{"KustomizeOverlay", func(t *testing.T) []object { return kustomizeObjects(t, kueueOverlayDir) }},
	}
}

func kueueArgs(t *testing.T, objs []object) []string {
	t.Helper()
	return container(t, find[*appsv1.Deployment](t, objs, kueueDeployment), kueueContainer).Args
}

// TestKustomizeOverlayKueueIsTheChartWithKueue keeps kustomize/overlays/kueue identical to the
// chart rendered with kueue.enabled=true: the base plus the templates that render only with
// kueue on. Run with -update to rewrite it.
func TestKustomizeOverlayKueueIsTheChartWithKueue(t *testing.T) {
	if *update {
		writeOverlay(t, kueueOverlay)
	}
	objs := kustomizeObjects(t, kueueOverlayDir)
	checkUnique(t, objs)
	compareLayouts(t, chartObjects(t, kueueValues), objs, "kueue overlay")
	for _, o := range objs {
		if a, _ := meta.Accessor(o.obj); isNamespaced(o.obj) && a.GetNamespace() != namespace {
			t.Errorf("%s is not in namespace %s", o.key(), namespace)
		}
	}
}

func TestKueueDeployment(t *testing.T) {
	for _, layout := range kueueLayouts() {
		t.Run(layout.name, func(t *testing.T) {
			objs := layout.objs(t)
			d := find[*appsv1.Deployment](t, objs, kueueDeployment)
			// One replica, replaced only after it stopped: the old pod saves the usage ledger and
			// releases the Lease before the new one starts.
			if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
				t.Errorf("replicas %v, strategy %q: want 1 and Recreate", d.Spec.Replicas, d.Spec.Strategy.Type)
			}
			spec := d.Spec.Template.Spec
			if spec.ServiceAccountName != kueueAccount {
				t.Errorf("service account = %q, want %s", spec.ServiceAccountName, kueueAccount)
			}
			if len(spec.Containers) != 1 {
				t.Fatalf("containers = %d, want arbiter-kueue alone", len(spec.Containers))
			}
			c := container(t, d, kueueContainer)
			checkHardened(t, d, c)
			if c.Image != "arbiter/arbiter-kueue:0.1.0" {
				t.Errorf("image = %s", c.Image)
			}
			if len(c.Args) == 0 || c.Args[0] != "check" {
				t.Fatalf("args %v do not start with the command check", c.Args)
			}
			for _, want := range []string{
				"--server=" + kueueServerTarget,
				"--namespace=$(POD_NAMESPACE)",
				"--usage-configmap=" + kueueUsageCM,
				"--lease-name=" + kueueLease,
				"--controller-name=" + kueueControllerName,
				"--k-value=1",
				"--usage-half-life=0s",
				"--period=1s",
				"--usage-save-interval=30s",
				"--retry-after=0s",
				"--handover-grace=60s",
				"--http-addr=:8080",
				"--log-level=info",
			} {
				if !slices.Contains(c.Args, want) {
					t.Errorf("args %v lack %s", c.Args, want)
				}
			}
			if len(c.Env) != 1 || c.Env[0].Name != "POD_NAMESPACE" || c.Env[0].ValueFrom == nil ||
				c.Env[0].ValueFrom.FieldRef == nil || c.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.namespace" {
				t.Errorf("env = %+v, want POD_NAMESPACE from metadata.namespace", c.Env)
			}

			// /healthz and /metrics are served on --http-addr: the port the probes and the
			// metrics Service use.
			port := strings.TrimPrefix(flagValue(t, c.Args, "http-addr"), ":")
			if len(c.Ports) != 1 || c.Ports[0].Name != "http" || c.Ports[0].ContainerPort != 8080 || port != "8080" {
				t.Errorf("ports %+v, --http-addr=:%s: want port http = 8080", c.Ports, port)
			}
			for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
				if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port.String() != "http" {
					t.Errorf("%s probe = %+v, want /healthz on port http", name, p)
				}
			}
			svc := find[*corev1.Service](t, objs, kueueMetrics)
			if diff := cmp.Diff(d.Spec.Selector.MatchLabels, svc.Spec.Selector); diff != "" {
				t.Errorf("%s selects other pods than the Deployment (-deployment +service):\n%s", kueueMetrics, diff)
			}
			if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 8080 || svc.Spec.Ports[0].TargetPort.String() != "http" {
				t.Errorf("%s ports = %+v", kueueMetrics, svc.Spec.Ports)
			}

			// The usage ConfigMap ships empty, so that arbiter-kueue never needs to create it.
			usage := find[*corev1.ConfigMap](t, objs, kueueUsageCM)
			if len(usage.Data) != 0 || len(usage.BinaryData) != 0 {
				t.Errorf("%s ships with data %v", kueueUsageCM, usage.Data)
			}
		})
	}
}

// TestKueueArgsAreFlagsOfArbiterKueueCheck runs the arbiter-kueue binary, built from
// clients/go, with the container's arguments and a kubeconfig that does not exist. The command
// exits 2 on a bad command line (an unknown flag, a value that does not parse, a negative k, an
// unknown preemption strategy or log level) and 1 when it fails after that, here at reading the
// kubeconfig; so exit 1 means that every argument was accepted.
func TestKueueArgsAreFlagsOfArbiterKueueCheck(t *testing.T) {
	bin := buildArbiterKueue(t)
	run := func(t *testing.T, args []string) (int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		full := make([]string, 0, len(args)+1)
		for _, a := range args {
			full = append(full, strings.ReplaceAll(a, "$(POD_NAMESPACE)", namespace))
		}
		full = append(full, "--kubeconfig="+filepath.Join(t.TempDir(), "no-kubeconfig"))
		out, err := exec.CommandContext(ctx, bin, full...).CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("arbiter-kueue %v: %v (want it to exit with an error)\n%s", full, err, out)
		}
		return exit.ExitCode(), string(out)
	}

	tests := []struct {
		name   string
		values map[string]any
	}{
		{"Defaults", kueueValues},
		{"KZero", map[string]any{"kueue": map[string]any{"enabled": true, "kValue": 0}}},
		{"EverySetting", map[string]any{
			"tls": map[string]any{"enabled": true},
			"kueue": map[string]any{
				"enabled":              true,
				"controllerName":       "example.com/time-aware",
				"kValue":               0.5,
				"usageHalfLife":        "168h",
				"usageWindow":          "720h",
				"period":               "2s",
				"usageSaveInterval":    "1m",
				"retryAfter":           "5s",
				"preemptionStrategies": "LessThanOrEqualToFinalShare,LessThanInitialShare",
				"httpPort":             9090,
				"logLevel":             "debug",
				"dumpSnapshots":        true,
				"extraArgs":            []any{"--timeout=10s"},
			},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := kueueArgs(t, chartObjects(t, tc.values))
			if code, out := run(t, args); code != 1 || !strings.Contains(out, "kubernetes config") {
				t.Errorf("arbiter-kueue %v: exit %d, want 1 at the kubeconfig:\n%s", args, code, out)
			}
		})
	}
	// The same run tells a bad command line apart.
	args := kueueArgs(t, chartObjects(t, kueueValues))
	for _, bad := range []string{"--k-value=-1", "--usage-half-life=1day", "--no-such-flag"} {
		if code, out := run(t, append(slices.Clone(args), bad)); code != 2 {
			t.Errorf("with %s: exit %d, want 2:\n%s", bad, code, out)
		}
	}
}

// buildArbiterKueue builds clients/go/cmd/arbiter-kueue into the test's temporary directory.
func buildArbiterKueue(t *testing.T) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command builds arbiter-kueue: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "arbiter-kueue")
	cmd := exec.Command(gobin, "build", "-o", bin, "./cmd/arbiter-kueue")
	cmd.Dir = filepath.Join("..", "clients", "go")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/arbiter-kueue: %v\n%s", err, out)
	}
	return bin
}

// TestKueueRBAC pins every permission of arbiter-kueue check. Its rules are what package
// clients/go/k8s/kueue/timeaware's Checker and the command use: the informers' list and watch of Kueue's
// ClusterQueues, Cohorts, LocalQueues, Workloads and AdmissionChecks and of namespaces; the
// status updates of Workloads (the check's state) and AdmissionChecks (Active); get and update of
// its usage ConfigMap (shipped by the chart, so no create); and its leader Lease. Nothing is
// granted with a wildcard. Adding a rule must be a deliberate change of this test.
func TestKueueRBAC(t *testing.T) {
	for _, layout := range kueueLayouts() {
		t.Run(layout.name, func(t *testing.T) {
			objs := layout.objs(t)
			wantCluster := []rbacv1.PolicyRule{
				{APIGroups: []string{"kueue.x-k8s.io"}, Resources: []string{"resourceflavors", "clusterqueues", "cohorts", "localqueues", "workloads", "admissionchecks"}, Verbs: []string{"list", "watch"}},
				{APIGroups: []string{"kueue.x-k8s.io"}, Resources: []string{"workloads/status", "admissionchecks/status"}, Verbs: []string{"update"}},
				{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"list", "watch"}},
			}
			if diff := cmp.Diff(wantCluster, find[*rbacv1.ClusterRole](t, objs, kueueRole).Rules); diff != "" {
				t.Errorf("ClusterRole %s rules (-want +got):\n%s", kueueRole, diff)
			}
			wantRole := []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{kueueUsageCM}, Verbs: []string{"get", "update"}},
				{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
				{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{kueueLease}, Verbs: []string{"get", "update"}},
			}
			role := find[*rbacv1.Role](t, objs, kueueRole)
			if diff := cmp.Diff(wantRole, role.Rules); diff != "" {
				t.Errorf("Role %s rules (-want +got):\n%s", kueueRole, diff)
			}

			// Every binding of the ServiceAccount, and the roles it binds: these two, and no
			// wildcard in them.
			subjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: kueueAccount, Namespace: namespace}}
			type binding struct{ kind, namespace, role string }
			wantBindings := map[string]binding{
				"ClusterRoleBinding " + kueueRole: {"ClusterRole", "", kueueRole},
				"RoleBinding " + kueueRole:        {"Role", namespace, kueueRole},
			}
			got := map[string]binding{}
			for _, o := range objs {
				switch b := o.obj.(type) {
				case *rbacv1.ClusterRoleBinding:
					if slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool { return s.Name == kueueAccount }) {
						got["ClusterRoleBinding "+b.Name] = binding{b.RoleRef.Kind, "", b.RoleRef.Name}
						if diff := cmp.Diff(subjects, b.Subjects); diff != "" {
							t.Errorf("ClusterRoleBinding %s subjects (-want +got):\n%s", b.Name, diff)
						}
					}
				case *rbacv1.RoleBinding:
					if slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool { return s.Name == kueueAccount }) {
						got["RoleBinding "+b.Name] = binding{b.RoleRef.Kind, b.Namespace, b.RoleRef.Name}
						if diff := cmp.Diff(subjects, b.Subjects); diff != "" {
							t.Errorf("RoleBinding %s subjects (-want +got):\n%s", b.Name, diff)
						}
					}
				}
			}
			if diff := cmp.Diff(wantBindings, got, cmp.AllowUnexported(binding{})); diff != "" {
				t.Errorf("bindings of %s (-want +got):\n%s", kueueAccount, diff)
			}
			for _, rules := range [][]rbacv1.PolicyRule{find[*rbacv1.ClusterRole](t, objs, kueueRole).Rules, role.Rules} {
				for _, r := range rules {
					for _, field := range [][]string{r.APIGroups, r.Resources, r.ResourceNames, r.Verbs, r.NonResourceURLs} {
						if slices.ContainsFunc(field, func(s string) bool { return strings.Contains(s, "*") }) {
							t.Errorf("rule %+v has a wildcard", r)
						}
					}
				}
			}

			// The ConfigMap and the Lease the command is told to use are the ones the Role names,
			// in the namespace it runs in (--namespace=$(POD_NAMESPACE)).
			d := find[*appsv1.Deployment](t, objs, kueueDeployment)
			args := kueueArgs(t, objs)
			if u, l := flagValue(t, args, "usage-configmap"), flagValue(t, args, "lease-name"); u != kueueUsageCM || l != kueueLease {
				t.Errorf("arbiter-kueue uses ConfigMap %s and Lease %s, its Role grants %s and %s", u, l, kueueUsageCM, kueueLease)
			}
			if flagValue(t, args, "namespace") != "$(POD_NAMESPACE)" || role.Namespace != d.Namespace {
				t.Errorf("Role in %s, Deployment in %s, --namespace=%s", role.Namespace, d.Namespace, flagValue(t, args, "namespace"))
			}
		})
	}
}

func TestKueueAdmissionCheck(t *testing.T) {
	for _, layout := range kueueLayouts() {
		t.Run(layout.name, func(t *testing.T) {
			objs := layout.objs(t)
			ac := find[*kueuev1beta2.AdmissionCheck](t, objs, kueueCheck)
			if ac.Namespace != "" || ac.Spec.ControllerName != kueueControllerName || ac.Spec.Parameters != nil {
				t.Errorf("AdmissionCheck %s: namespace %q, spec %+v; want cluster-scoped, controllerName %s",
					ac.Name, ac.Namespace, ac.Spec, kueueControllerName)
			}
			if got := flagValue(t, kueueArgs(t, objs), "controller-name"); got != ac.Spec.ControllerName {
				t.Errorf("arbiter-kueue serves %s, the AdmissionCheck names %s", got, ac.Spec.ControllerName)
			}
		})
	}

	t.Run("FromValues", func(t *testing.T) {
		objs := chartObjects(t, map[string]any{"kueue": map[string]any{
			"enabled":        true,
			"controllerName": "example.com/time-aware",
			"admissionCheck": map[string]any{"name": "fair-over-time"},
		}})
		ac := find[*kueuev1beta2.AdmissionCheck](t, objs, "fair-over-time")
		if got := flagValue(t, kueueArgs(t, objs), "controller-name"); got != "example.com/time-aware" || ac.Spec.ControllerName != got {
			t.Errorf("--controller-name=%s, AdmissionCheck controllerName %s; want example.com/time-aware for both", got, ac.Spec.ControllerName)
		}
	})

	t.Run("NotCreated", func(t *testing.T) {
		objs := chartObjects(t, map[string]any{"kueue": map[string]any{"enabled": true, "admissionCheck": map[string]any{"create": false}}})
		for _, o := range objs {
			if _, ok := o.obj.(*kueuev1beta2.AdmissionCheck); ok {
				t.Errorf("%s rendered with kueue.admissionCheck.create=false", o.key())
			}
		}
		find[*appsv1.Deployment](t, objs, kueueDeployment)
	})
}

// TestKueueCallsTheServerService: arbiter-kueue runs in a pod of its own, so it calls the server
// Deployment's Service, even when arbiter-k8s calls a sidecar server; without the server
// Deployment the chart refuses to render.
func TestKueueCallsTheServerService(t *testing.T) {
	for name, values := range map[string]map[string]any{
		"Defaults":             kueueValues,
		"SchedulerWithSidecar": {"kueue": map[string]any{"enabled": true}, "scheduler": map[string]any{"sidecarServer": true}},
	} {
		t.Run(name, func(t *testing.T) {
			if got := flagValue(t, kueueArgs(t, chartObjects(t, values)), "server"); got != kueueServerTarget {
				t.Errorf("--server=%s, want %s", got, kueueServerTarget)
			}
		})
	}
	_, err := renderChartErr(map[string]any{"kueue": map[string]any{"enabled": true}, "server": map[string]any{"enabled": false}})
	if err == nil || !strings.Contains(err.Error(), "kueue.enabled needs server.enabled") {
		t.Errorf("server.enabled=false with kueue on: err = %v, want the chart to refuse", err)
	}
}

// TestKueueTLSAndSnapshots: with tls.enabled the client certificate comes from its own Secret,
// mounted where the flags point; snapshots go to an emptyDir, since the root filesystem is
// read-only.
func TestKueueTLSAndSnapshots(t *testing.T) {
	objs := chartObjects(t, map[string]any{
		"tls":   map[string]any{"enabled": true},
		"kueue": map[string]any{"enabled": true, "dumpSnapshots": true},
	})
	d := find[*appsv1.Deployment](t, objs, kueueDeployment)
	c := container(t, d, kueueContainer)
	mountedFrom := func(file string) *corev1.Volume {
		for _, m := range c.VolumeMounts {
			if strings.HasPrefix(file, m.MountPath+"/") {
				for i, v := range d.Spec.Template.Spec.Volumes {
					if v.Name == m.Name {
						return &d.Spec.Template.Spec.Volumes[i]
					}
				}
			}
		}
		return nil
	}
	for _, flag := range []string{"tls-ca", "tls-cert", "tls-key"} {
		file := flagValue(t, c.Args, flag)
		if v := mountedFrom(file); v == nil || v.Secret == nil || v.Secret.SecretName != "arbiter-kueue-tls" {
			t.Errorf("--%s=%s is not in Secret arbiter-kueue-tls as mounted (%+v)", flag, file, v)
		}
	}
	if v := mountedFrom(path.Join(flagValue(t, c.Args, "dump-snapshot"), "x.json")); v == nil || v.EmptyDir == nil {
		t.Errorf("--dump-snapshot is not an emptyDir (%+v)", v)
	}
	checkHardened(t, d, c)
}

// TestKueueSwitch: off (the default), the chart renders nothing of arbiter-kueue; on, it adds
// its objects and leaves every other object as it was, which is what lets the overlay be the
// base plus files.
func TestKueueSwitch(t *testing.T) {
	defaults := chartObjects(t, nil)
	off := chartObjects(t, map[string]any{"kueue": map[string]any{"enabled": false, "dumpSnapshots": true}, "tls": map[string]any{"kueueClientSecret": "x"}})
	keys := func(objs []object) []string {
		var out []string
		for _, o := range objs {
			out = append(out, o.key())
		}
		slices.Sort(out)
		return out
	}
	if diff := cmp.Diff(keys(defaults), keys(off)); diff != "" {
		t.Errorf("kueue.enabled=false renders other objects than the defaults (-defaults +off):\n%s", diff)
	}
	for _, k := range keys(off) {
		if strings.Contains(k, "kueue") || strings.HasPrefix(k, "AdmissionCheck ") {
			t.Errorf("%s rendered with kueue off", k)
		}
	}

	on := map[string]runtime.Object{}
	for _, o := range chartObjects(t, kueueValues) {
		on[o.key()] = o.obj
	}
	for _, o := range defaults {
		if !equality.Semantic.DeepEqual(o.obj, on[o.key()]) {
			t.Errorf("%s changes when kueue is turned on", o.key())
		}
		delete(on, o.key())
	}
	want := []string{
		"AdmissionCheck /time-aware",
		"ClusterRole /arbiter-kueue",
		"ClusterRoleBinding /arbiter-kueue",
		"ConfigMap arbiter-system/arbiter-kueue-usage",
		"Deployment arbiter-system/arbiter-kueue",
		"Role arbiter-system/arbiter-kueue",
		"RoleBinding arbiter-system/arbiter-kueue",
		"Service arbiter-system/arbiter-kueue-metrics",
		"ServiceAccount arbiter-system/arbiter-kueue",
	}
	if diff := cmp.Diff(want, sortedKeys(on)); diff != "" {
		t.Errorf("objects kueue adds (-want +got):\n%s", diff)
	}
}
