// Package deploy holds the tests of arbiter's Kubernetes manifests: the Helm chart in
// helm/arbiter and the kustomize base in kustomize/base, which is the chart rendered with its
// default values. Both are rendered in-process (Helm SDK, kustomize API) and every object is
// decoded strictly into its typed Kubernetes struct, so a misspelt field fails a test.
package deploy

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
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
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

const (
	chartDir    = "helm/arbiter"
	baseDir     = "kustomize/base"
	releaseName = "arbiter"
	namespace   = "arbiter-system"
)

var update = flag.Bool("update", false, "rewrite kustomize/base from the chart's default rendering")

// strictDecoder rejects unknown and duplicate fields.
var strictDecoder = serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()

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
	chrt, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load chart: %v", err)
	}
	vals, err := chartutil.ToRenderValues(chrt, values, chartutil.ReleaseOptions{
		Name: releaseName, Namespace: namespace, Revision: 1, IsInstall: true,
	}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatalf("chart values: %v", err)
	}
	rendered, err := engine.Render(chrt, vals)
	if err != nil {
		t.Fatalf("render chart: %v", err)
	}
	out := map[string]string{}
	for name, text := range rendered {
		base := filepath.Base(name)
		if strings.HasPrefix(base, "_") || !strings.HasSuffix(base, ".yaml") {
			continue
		}
		out[base] = text
	}
	return out
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
// chart rendered with its defaults, plus the Namespace object. Run with -update to rewrite it.
func TestKustomizeBaseIsTheChartWithDefaultValues(t *testing.T) {
	if *update {
		writeBase(t)
	}
	chart := map[string]runtime.Object{}
	for _, o := range chartObjects(t, nil) {
		chart[o.key()] = o.obj
	}
	base := map[string]runtime.Object{}
	for _, o := range kustomizeObjects(t, baseDir) {
		if o.obj.GetObjectKind().GroupVersionKind().Kind == "Namespace" {
			continue
		}
		base[o.key()] = o.obj
	}
	for _, k := range sortedKeys(chart) {
		b, ok := base[k]
		switch {
		case !ok:
			t.Errorf("%s is in the chart but not in the kustomize base", k)
		case !equality.Semantic.DeepEqual(chart[k], b):
			t.Errorf("%s differs between the chart and the kustomize base (run go test ./... -run TestKustomizeBase -update)", k)
		}
	}
	for _, k := range sortedKeys(base) {
		if _, ok := chart[k]; !ok {
			t.Errorf("%s is in the kustomize base but not in the chart", k)
		}
	}
}

// writeBase rewrites kustomize/base/<template>.yaml from the chart's default rendering.
func writeBase(t *testing.T) {
	t.Helper()
	rendered := renderChart(t, nil)
	for _, name := range sortedKeys(rendered) {
		text := strings.TrimLeft(rendered[name], "\n")
		header := "# Generated from deploy/helm/arbiter/templates/" + name + " with the chart's default values.\n" +
			"# Edit the chart, then run `go test ./... -run TestKustomizeBase -update` in deploy/.\n"
		if err := os.WriteFile(filepath.Join(baseDir, name), []byte(header+text), 0o644); err != nil {
			t.Fatal(err)
		}
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
	case "Namespace", "ClusterRole", "ClusterRoleBinding":
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
