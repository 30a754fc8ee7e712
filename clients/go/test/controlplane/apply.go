package controlplane

import (
	"context"
	"fmt"
	"os"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"
)

// Apply creates every object of the YAML files as the admin, or replaces it when it exists, as
// `kubectl apply` would for objects nobody else edits. It returns the objects applied.
func (cp *ControlPlane) Apply(ctx context.Context, paths ...string) ([]*unstructured.Unstructured, error) {
	cfg := cp.RESTConfig(Admin)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(kube.Discovery()))
	var out []*unstructured.Unstructured
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return out, err
		}
		for _, doc := range strings.Split(string(data), "\n---") {
			obj := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
				return out, fmt.Errorf("%s: %w", path, err)
			}
			if len(obj.Object) == 0 {
				continue
			}
			gvk := obj.GroupVersionKind()
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				return out, fmt.Errorf("%s: %s: %w", path, gvk, err)
			}
			var res dynamic.ResourceInterface = dyn.Resource(m.Resource)
			if m.Scope.Name() == meta.RESTScopeNameNamespace {
				if obj.GetNamespace() == "" {
					obj.SetNamespace("default")
				}
				res = dyn.Resource(m.Resource).Namespace(obj.GetNamespace())
			}
			_, err = res.Create(ctx, obj, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				var old *unstructured.Unstructured
				if old, err = res.Get(ctx, obj.GetName(), metav1.GetOptions{}); err == nil {
					obj.SetResourceVersion(old.GetResourceVersion())
					_, err = res.Update(ctx, obj, metav1.UpdateOptions{})
				}
			}
			if err != nil {
				return out, fmt.Errorf("%s: %s %s: %w", path, gvk.Kind, obj.GetName(), err)
			}
			out = append(out, obj)
		}
	}
	return out, nil
}
