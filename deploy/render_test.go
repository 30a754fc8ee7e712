// Package deploy holds the tests of arbiter's Kubernetes manifests: the Helm chart in
// helm/arbiter, the kustomize base in kustomize/base, which is the chart rendered with its
// default values, and the overlays in kustomize/overlays/extender and kustomize/overlays/kueue,
// which add what the chart renders with extender.enabled=true and kueue.enabled=true. All are
// rendered in-process (Helm SDK, kustomize API) and every object is decoded strictly into its
// typed Kubernetes struct (Kueue's Go types for the AdmissionCheck), so a misspelt field fails a
// test.
package deploy

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

const (
	chartDir           = "helm/arbiter"
	baseDir            = "kustomize/base"
	extenderOverlayDir = "kustomize/overlays/extender"
	kueueOverlayDir    = "kustomize/overlays/kueue"
	releaseName        = "arbiter"
	namespace          = "arbiter-system"
)

// extenderValues are the values kustomize/overlays/extender is rendered with.
var extenderValues = map[string]any{"extender": map[string]any{"enabled": true}}

// kueueValues are the values kustomize/overlays/kueue is rendered with.
var kueueValues = map[string]any{"kueue": map[string]any{"enabled": true}}

var update = flag.Bool("update", false,
	"rewrite kustomize/base and kustomize/overlays/* from the chart's rendering")

// decodeScheme knows client-go's kinds and Kueue's v1beta2 kinds.
var decodeScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(kueuev1beta2.AddToScheme(s))
	return s
}()

// strictDecoder rejects unknown and duplicate fields.
var strictDecoder = serializer.NewCodecFactory(decodeScheme, serializer.EnableStrict).UniversalDeserializer()

// object is one decoded manifest and where it came from.
type object struct {
	source string
	obj    runtime.Object
}

func (o object) key() string {
	a, _ := meta.Accessor(o.obj)
	return fmt.Sprintf("%s %s/%s", o.obj.GetObjectKind().GroupVersionKind().Kind, a.GetNamespace(), a.GetName())
}

// decodeAll splits a multi-document YAML stream and strictly decodes every document.
func decodeAll(t *testing.T, source string, data []byte) []object {
	t.Helper()
	var out []object
	r := utilyaml.NewYAMLReader(bufioReader(data))
	for i := 0; ; i++ {
		doc, err := r.Read()
		if err != nil {
			break
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		obj, _, err := strictDecoder.Decode(doc, nil, nil)
		if err != nil {
			t.Errorf("%s: document %d does not decode strictly: %v\n%s", source, i, err, doc)
			continue
		}
		out = append(out, object{source: source, obj: obj})
	}
	return out
}

// renderChart renders the chart with values (nil: the defaults), template by template.
func renderChart(t *testing.T, values map[string]any) map[string]string {
	t.Helper()
	out, err := renderChartErr(values)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// renderChartErr is renderChart for a rendering that may fail.
func renderChartErr(values map[string]any) (map[string]string, error) {
	chrt, err := loader.Load(chartDir)
	if err != nil {
		return nil, fmt.Errorf("load chart: %w", err)
	}
	vals, err := chartutil.ToRenderValues(chrt, values, chartutil.ReleaseOptions{
		Name: releaseName, Namespace: namespace, Revision: 1, IsInstall: true,
	}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, fmt.Errorf("chart values: %w", err)
	}
	rendered, err := engine.Render(chrt, vals)
	if err != nil {
		return nil, fmt.Errorf("render chart: %w", err)
	}
	out := map[string]string{}
	for name, text := range rendered {
		base := filepath.Base(name)
		if strings.HasPrefix(base, "_") || !strings.HasSuffix(base, ".yaml") {
			continue
		}
		out[base] = text
	}
	return out, nil
}

func chartObjects(t *testing.T, values map[string]any) []object {
	t.Helper()
	var out []object
	rendered := renderChart(t, values)
	for _, name := range sortedKeys(rendered) {
		out = append(out, decodeAll(t, "chart "+name, []byte(rendered[name]))...)
	}
	return out
}

func kustomizeObjects(t *testing.T, dir string) []object {
	t.Helper()
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var out []object
	for _, res := range resources.Resources() {
		y, err := res.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, decodeAll(t, "kustomize "+res.CurId().String(), y)...)
	}
	return out
}

func TestChartRendersStrictlyTypedObjects(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]any
		want   int
	}{
		{name: "Defaults", want: 13},
		{name: "TLSAndSnapshots", values: map[string]any{
			"tls":       map[string]any{"enabled": true},
			"scheduler": map[string]any{"dumpSnapshots": true, "extraArgs": []any{"--log-level=debug"}},
		}, want: 13},
		{name: "SidecarServerOnly", values: map[string]any{
			"server":    map[string]any{"enabled": false},
			"scheduler": map[string]any{"sidecarServer": true, "replicas": 1},
		}, want: 9},
		{name: "Extender", values: extenderValues, want: 26},
		{name: "ExtenderWithBindAndTLS", values: map[string]any{
			"tls":      map[string]any{"enabled": true},
			"extender": map[string]any{"enabled": true, "bindGangs": true, "managedResources": []any{}},
		}, want: 26},
		{name: "ExtenderOnly", values: map[string]any{
			"server":    map[string]any{"enabled": false},
			"scheduler": map[string]any{"enabled": false},
			"extender":  map[string]any{"enabled": true},
		}, want: 14},
		{name: "Kueue", values: kueueValues, want: 22},
		{name: "KueueWithTLSAndSnapshots", values: map[string]any{
			"tls":   map[string]any{"enabled": true},
			"kueue": map[string]any{"enabled": true, "dumpSnapshots": true, "admissionCheck": map[string]any{"create": false}},
		}, want: 21},
		{name: "KueueOnly", values: map[string]any{
			"scheduler": map[string]any{"enabled": false},
			"kueue":     map[string]any{"enabled": true},
		}, want: 13},
		{name: "EveryLayout", values: map[string]any{
			"extender": map[string]any{"enabled": true},
			"kueue":    map[string]any{"enabled": true},
		}, want: 35},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := chartObjects(t, tc.values)
			if len(objs) != tc.want {
				var keys []string
				for _, o := range objs {
					keys = append(keys, o.key())
				}
				t.Errorf("rendered %d objects, want %d: %v", len(objs), tc.want, keys)
			}
			checkUnique(t, objs)
		})
	}
}

func TestKustomizeBaseRendersStrictlyTypedObjects(t *testing.T) {
	objs := kustomizeObjects(t, baseDir)
	if len(objs) == 0 {
		t.Fatal("kustomize base is empty")
	}
	checkUnique(t, objs)
	for _, o := range objs {
		if a, _ := meta.Accessor(o.obj); a.GetNamespace() != namespace && isNamespaced(o.obj) {
			t.Errorf("%s is not in namespace %s", o.key(), namespace)
		}
	}
}

// TestKustomizeBaseIsTheChartWithDefaultValues keeps the two layouts identical: the base is the
// chart rendered with its defaults, plus the Namespace object. Run with -update to rewrite it
// (and the overlays).
func TestKustomizeBaseIsTheChartWithDefaultValues(t *testing.T) {
	if *update {
		writeBase(t)
		writeOverlay(t, extenderOverlay)
		writeOverlay(t, kueueOverlay)
	}
	compareLayouts(t, chartObjects(t, nil), kustomizeObjects(t, baseDir), "kustomize base")
}

// TestKustomizeOverlayExtenderIsTheChartWithTheExtender keeps kustomize/overlays/extender
// identical to the chart rendered with extender.enabled=true: the base plus the templates that
// render only with the extender. Run with -update to rewrite it.
func TestKustomizeOverlayExtenderIsTheChartWithTheExtender(t *testing.T) {
	if *update {
		writeOverlay(t, extenderOverlay)
	}
	objs := kustomizeObjects(t, extenderOverlayDir)
	checkUnique(t, objs)
	compareLayouts(t, chartObjects(t, extenderValues), objs, "extender overlay")
	for _, o := range objs {
		a, _ := meta.Accessor(o.obj)
		if !isNamespaced(o.obj) || a.GetNamespace() == namespace {
			continue
		}
		// kube-scheduler reads kube-system/extension-apiserver-authentication; its RoleBinding
		// is the one object that lives there.
		if o.key() != "RoleBinding kube-system/arbiter-kube-scheduler-auth-reader" {
			t.Errorf("%s is not in namespace %s", o.key(), namespace)
		}
	}
}

// compareLayouts reports every object that differs between the chart's rendering and a
// kustomize layout (whose Namespace object the chart does not render).
func compareLayouts(t *testing.T, chartObjs, layoutObjs []object, layout string) {
	t.Helper()
	chart := map[string]runtime.Object{}
	for _, o := range chartObjs {
		chart[o.key()] = o.obj
	}
	other := map[string]runtime.Object{}
	for _, o := range layoutObjs {
		if o.obj.GetObjectKind().GroupVersionKind().Kind == "Namespace" {
			continue
		}
		other[o.key()] = o.obj
	}
	for _, k := range sortedKeys(chart) {
		b, ok := other[k]
		switch {
		case !ok:
			t.Errorf("%s is in the chart but not in the %s", k, layout)
		case !equality.Semantic.DeepEqual(chart[k], b):
			t.Errorf("%s differs between the chart and the %s (run go test ./... -run TestKustomizeBase -update)", k, layout)
		}
	}
	for _, k := range sortedKeys(other) {
		if _, ok := chart[k]; !ok {
			t.Errorf("%s is in the %s but not in the chart", k, layout)
		}
	}
}

const generatedHint = "# Edit the chart, then run `go test ./... -run TestKustomizeBase -update` in deploy/.\n"

// writeBase rewrites kustomize/base/<template>.yaml from the chart's default rendering.
func writeBase(t *testing.T) {
	t.Helper()
	rendered := renderChart(t, nil)
	for _, name := range sortedKeys(rendered) {
		if len(bytes.TrimSpace(stripComments([]byte(rendered[name])))) == 0 {
			continue // renders nothing with the defaults (the overlays' templates)
		}
		text := strings.TrimLeft(rendered[name], "\n")
		header := "# Generated from deploy/helm/arbiter/templates/" + name + " with the chart's default values.\n" +
			generatedHint
		if err := os.WriteFile(filepath.Join(baseDir, name), []byte(header+text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// overlay is a kustomize overlay generated from the chart: the base plus every template that
// renders only with values.
type overlay struct {
	dir    string
	values map[string]any
	with   string // the values as the generated headers name them
	about  string // the comment that opens kustomization.yaml
}

var extenderOverlay = overlay{
	dir: extenderOverlayDir, values: extenderValues, with: "extender.enabled=true",
	about: "# arbiter as a scheduler extender: the base plus the Helm chart's extender templates, rendered\n" +
		"# with extender.enabled=true (a test keeps them identical). It adds a kube-scheduler Deployment\n" +
		"# with arbiter-extender and arbiter-server as sidecars, its configuration and its RBAC.\n",
}

var kueueOverlay = overlay{
	dir: kueueOverlayDir, values: kueueValues, with: "kueue.enabled=true",
	about: "# arbiter-kueue check, the controller of Kueue's time-aware AdmissionCheck: the base plus the\n" +
		"# Helm chart's kueue templates, rendered with kueue.enabled=true (a test keeps them identical).\n" +
		"# It adds the arbiter-kueue Deployment, its RBAC, usage ConfigMap and metrics Service, and the\n" +
		"# AdmissionCheck time-aware. Kueue's CRDs must be installed first.\n",
}

// writeOverlay rewrites o.dir: every template that renders only with o.values becomes a file of
// the overlay, and its kustomization.yaml adds them to the base. A template that renders
// differently with o.values, but also without them, cannot be added that way and fails the
// update.
func writeOverlay(t *testing.T, o overlay) {
	t.Helper()
	defaults := renderChart(t, nil)
	with := renderChart(t, o.values)
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, name := range sortedKeys(with) {
		text, base := with[name], defaults[name]
		switch {
		case text == base:
			continue // in the base as it is
		case len(bytes.TrimSpace(stripComments([]byte(base)))) > 0:
			t.Fatalf("template %s renders differently with %s; the overlay %s can only add templates that render nothing by default", name, o.with, o.dir)
		case len(bytes.TrimSpace(stripComments([]byte(text)))) == 0:
			continue
		}
		header := "# Generated from deploy/helm/arbiter/templates/" + name + " with " + o.with + ".\n" + generatedHint
		if err := os.WriteFile(filepath.Join(o.dir, name), []byte(header+strings.TrimLeft(text, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, name)
	}
	// Drop the files of templates that no longer render.
	old, err := filepath.Glob(filepath.Join(o.dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range old {
		if name := filepath.Base(path); name != "kustomization.yaml" && !slices.Contains(files, name) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}
	}
	var k strings.Builder
	k.WriteString(o.about +
		"# Generated with the files beside it: edit the chart, then run\n" +
		"# `go test ./... -run TestKustomizeBase -update` in deploy/.\n" +
		"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../../base\n")
	for _, f := range files {
		k.WriteString("  - " + f + "\n")
	}
	if err := os.WriteFile(filepath.Join(o.dir, "kustomization.yaml"), []byte(k.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func checkUnique(t *testing.T, objs []object) {
	t.Helper()
	seen := map[string]string{}
	for _, o := range objs {
		if prev, ok := seen[o.key()]; ok {
			t.Errorf("%s is defined twice (%s and %s)", o.key(), prev, o.source)
		}
		seen[o.key()] = o.source
	}
}

func isNamespaced(obj runtime.Object) bool {
	switch obj.GetObjectKind().GroupVersionKind().Kind {
	case "Namespace", "ClusterRole", "ClusterRoleBinding", "AdmissionCheck":
		return false
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func stripComments(doc []byte) []byte {
	var out [][]byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(out, line)
		}
	}
	return bytes.Join(out, []byte("\n"))
}
