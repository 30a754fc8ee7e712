package shim

import (
	"context"
	"fmt"
	"strings"

	"arbiter.dev/clients/go/k8s/translate"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Access is one permission the shim needs: verb on resource (group "" is the core group), in
// Namespace ("" = cluster-wide), for Name when set.
type Access struct {
	Verb, Group, Resource, Subresource, Namespace, Name string
}

func (a Access) String() string {
	res := a.Resource
	if a.Subresource != "" {
		res += "/" + a.Subresource
	}
	if a.Group != "" {
		res += "." + a.Group
	}
	where := "cluster-wide"
	if a.Namespace != "" {
		where = "in namespace " + a.Namespace
	}
	if a.Name != "" {
		return fmt.Sprintf("%s %s %q %s", a.Verb, res, a.Name, where)
	}
	return fmt.Sprintf("%s %s %s", a.Verb, res, where)
}

// RequiredAccess lists what a shim with cfg needs: the informers' reads, bindings, evictions,
// pod conditions, events, GPU group labels on pods, the GPU reservation pods, its two ConfigMaps,
// and, when leaseName is set, its leader Lease.
func RequiredAccess(cfg Config, usageConfigMap, leaseName string) []Access {
	cfg = cfg.withDefaults()
	ns := cfg.Namespace
	out := []Access{
		{Verb: "list", Resource: "pods"}, {Verb: "watch", Resource: "pods"},
		{Verb: "list", Resource: "nodes"}, {Verb: "watch", Resource: "nodes"},
		{Verb: "create", Resource: "pods", Subresource: "binding"},
		{Verb: "create", Resource: "pods", Subresource: "eviction"},
		{Verb: "patch", Resource: "pods", Subresource: "status"},
		{Verb: "patch", Resource: "pods"},
		{Verb: "create", Resource: "pods", Namespace: cfg.ReservationNamespace},
		{Verb: "delete", Resource: "pods", Namespace: cfg.ReservationNamespace},
		{Verb: "create", Resource: "events"},
		{Verb: "list", Resource: "configmaps", Namespace: ns, Name: cfg.QueueConfigMap},
		{Verb: "watch", Resource: "configmaps", Namespace: ns, Name: cfg.QueueConfigMap},
	}
	if usageConfigMap != "" {
		out = append(out,
			Access{Verb: "get", Resource: "configmaps", Namespace: ns, Name: usageConfigMap},
			Access{Verb: "update", Resource: "configmaps", Namespace: ns, Name: usageConfigMap})
	}
	if leaseName != "" {
		out = append(out,
			Access{Verb: "get", Group: "coordination.k8s.io", Resource: "leases", Namespace: ns, Name: leaseName},
			Access{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: ns, Name: leaseName})
	}
	if cfg.KAIQueues {
		out = append(out,
			Access{Verb: "list", Group: "scheduling.run.ai", Resource: "queues"},
			Access{Verb: "watch", Group: "scheduling.run.ai", Resource: "queues"})
	}
	return out
}

// CheckAccess asks the API server (SelfSubjectAccessReview, which every authenticated user may
// create) whether this client holds each permission, and names every one it lacks. Without the
// check a missing permission shows only as informers that never sync.
func CheckAccess(ctx context.Context, kube kubernetes.Interface, need []Access) error {
	var missing []string
	for _, a := range need {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: a.Verb, Group: a.Group, Resource: a.Resource, Subresource: a.Subresource,
				Namespace: a.Namespace, Name: a.Name,
			},
		}}
		got, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("checking permissions: %w", err)
		}
		if !got.Status.Allowed {
			missing = append(missing, a.String())
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing permissions (the chart's RBAC, deploy/helm/arbiter/templates/scheduler-rbac.yaml, grants them): %s",
			strings.Join(missing, "; "))
	}
	return nil
}

// KAIQueuesEnabled resolves a --kai-queues flag (auto, true or false): auto asks discovery whether the cluster serves KAI's
// Queue resource.
func KAIQueuesEnabled(mode string, kube kubernetes.Interface) (bool, error) {
	if mode != "auto" {
		return mode == "true", nil
	}
	gv := translate.KAIQueueResource.GroupVersion().String()
	list, err := kube.Discovery().ServerResourcesForGroupVersion(gv)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discover %s: %w", gv, err)
	}
	for _, r := range list.APIResources {
		if r.Name == translate.KAIQueueResource.Resource {
			return true, nil
		}
	}
	return false, nil
}
