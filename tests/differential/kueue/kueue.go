package main

import (
	"context"
	"fmt"
	"reflect"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	schedcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	"sigs.k8s.io/kueue/pkg/resources"
)

const flavor = "default"

// share is Kueue's dominant resource share of one ClusterQueue or Cohort.
type share struct {
	weighted  float64 // the unrounded weighted share
	borrowing bool
	dominant  string
	// usage is the node's Usage in Kueue's quota tree, summed over flavors: a ClusterQueue's
	// admitted usage, a Cohort's children's usage above their local quota (SEMANTICS §5.2's Use).
	usage quota
	// flavorResources are the node's flavor-resources in Kueue's quota tree (flavored trees
	// only): its own nominal quota, subtree quota and usage per flavor-resource.
	flavorResources map[resources.FlavorResource]frShare
}

// frShare is one flavor-resource of a node in Kueue's quota tree.
type frShare struct {
	nominal, subtreeQuota, usage int64
	listed, inSubtree            bool // a key of the node's Quotas; of its SubtreeQuota
}

func init() {
	// The cache logs through controller-runtime's logger, which complains on stderr when it
	// was never set.
	ctrllog.SetLogger(logr.Discard())
}

// noObjects is the API client the cache reads when a ClusterQueue is added, to pick up its
// LocalQueues and Workloads: there are none, the workloads are added to the cache directly.
type noObjects struct{ client.Client }

func (noObjects) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

// kueueShares builds Kueue's scheduler cache from the tree (one ResourceFlavor, every Cohort
// with an API object, every ClusterQueue, every admitted workload with a reserved quota), takes
// a Snapshot as the scheduler does at the start of a cycle, and returns the
// DominantResourceShare of every ClusterQueue and Cohort, indexed like tree.nodes.
func (t *tree) kueueShares() ([]share, error) {
	ctx := context.Background()
	cache := schedcache.New(noObjects{}, schedcache.WithFairSharing(true))
	snapshot, err := t.kueueSnapshot(ctx, cache, nil, nil)
	if err != nil {
		return nil, err
	}
	out := make([]share, len(t.nodes))
	for i := range t.nodes {
		n := &t.nodes[i]
		var drs schedcache.DRS
		var node *resourceNode
		if n.cq {
			cq := snapshot.ClusterQueue(kueue.ClusterQueueReference(n.name))
			if cq == nil {
				return nil, fmt.Errorf("cluster queue %s is not in Kueue's snapshot (inactive?)", n.name)
			}
			drs, node = cq.DominantResourceShare(), (*resourceNode)(&cq.ResourceNode)
		} else {
			cohort := snapshot.Cohort(kueue.CohortReference(n.name))
			if cohort == nil {
				return nil, fmt.Errorf("cohort %s is not in Kueue's snapshot", n.name)
			}
			drs, node = cohort.DominantResourceShare(), (*resourceNode)(&cohort.ResourceNode)
		}
		out[i] = share{weighted: drs.PreciseWeightedShare(), borrowing: drs.IsBorrowing(), dominant: dominantResource(drs)}
		for fr, v := range node.Usage {
			for r := range numResources {
				if fr.Resource == corev1.ResourceName(resourceNames[r]) {
					out[i].usage[r] += v
				}
			}
		}
		if t.flavored {
			out[i].flavorResources = node.flavorResources()
		}
	}
	return out, nil
}

// resourceNode is the quota-tree node of a ClusterQueue or Cohort in Kueue's snapshot (its
// type is unexported; its fields are not).
type resourceNode struct {
	Quotas       map[resources.FlavorResource]schedcache.ResourceQuota
	SubtreeQuota resources.FlavorResourceQuantities
	Usage        resources.FlavorResourceQuantities
}

func (node *resourceNode) flavorResources() map[resources.FlavorResource]frShare {
	m := map[resources.FlavorResource]frShare{}
	for fr, q := range node.Quotas {
		s := m[fr]
		s.nominal, s.listed = q.Nominal, true
		m[fr] = s
	}
	for fr, v := range node.SubtreeQuota {
		s := m[fr]
		s.subtreeQuota, s.inSubtree = v, true
		m[fr] = s
	}
	for fr, v := range node.Usage {
		s := m[fr]
		s.usage = v
		m[fr] = s
	}
	return m
}

// kueueSnapshot fills Kueue's scheduler cache from the tree (the ResourceFlavors, every Cohort
// with an API object, every ClusterQueue, every admitted workload except those in skip, with
// a reserved quota) and takes a Snapshot as the scheduler does at the start of a cycle. flavors
// gives the ResourceFlavor objects of a flavored tree (nil: plain ones); a ClusterQueue's
// preemption policy and flavor fungibility come from cqSpec (nil: Kueue's defaults).
func (t *tree) kueueSnapshot(ctx context.Context, cache *schedcache.Cache, flavors map[string]*kueue.ResourceFlavor, cqSpec func(n *node, spec *kueue.ClusterQueueSpec)) (*schedcache.Snapshot, error) {
	log := logr.Discard()
	if !t.flavored {
		cache.AddOrUpdateResourceFlavor(log, &kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: flavor}})
	}
	for _, name := range t.flavorNamesOf() {
		rf := flavors[name]
		if rf == nil {
			rf = &kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: name}}
		}
		cache.AddOrUpdateResourceFlavor(log, rf)
	}
	for i := range t.nodes {
		n := &t.nodes[i]
		if n.cq || !n.explicit || n.dropped {
			continue
		}
		cohort := t.cohortObject(i)
		if err := cache.AddOrUpdateCohort(cohort); err != nil {
			return nil, fmt.Errorf("cohort %s: %w", n.name, err)
		}
	}
	for i := range t.nodes {
		n := &t.nodes[i]
		if !n.cq || n.dropped {
			continue
		}
		cq := &kueue.ClusterQueue{
			ObjectMeta: metav1.ObjectMeta{Name: n.name},
			Spec:       kueue.ClusterQueueSpec{ResourceGroups: t.resourceGroups(i), FairSharing: fairSharing(n.weight)},
		}
		if n.parent >= 0 {
			cq.Spec.CohortName = kueue.CohortReference(t.nodes[n.parent].name)
		}
		if cqSpec != nil {
			cqSpec(n, &cq.Spec)
		}
		if err := cache.AddClusterQueue(ctx, cq); err != nil {
			return nil, fmt.Errorf("cluster queue %s: %w", n.name, err)
		}
		for _, w := range n.workloads {
			if w.admitted && !w.evicted {
				cache.AddOrUpdateWorkload(log, t.admittedWorkload(n, &w))
			}
		}
	}
	return cache.Snapshot(ctx)
}

// dominantResource reads the resource that set the DRS. Kueue keeps it unexported (it reaches
// the API only through the rounded share of a ClusterQueue's status), so it is read by
// reflection.
func dominantResource(drs schedcache.DRS) string {
	return reflect.ValueOf(drs).FieldByName("dominantResource").String()
}

func fairSharing(weight *float64) *kueue.FairSharing {
	if weight == nil {
		return nil
	}
	q := resource.MustParse(fmt.Sprint(*weight))
	return &kueue.FairSharing{Weight: &q}
}

// quantity is v in the unit Kueue reads back with resources.ResourceValue.
func quantity(r int, v int64) resource.Quantity {
	switch r {
	case cpu:
		return *resource.NewMilliQuantity(v, resource.DecimalSI)
	case memory:
		return *resource.NewQuantity(v, resource.BinarySI)
	default:
		return *resource.NewQuantity(v, resource.DecimalSI)
	}
}

// resourceGroups is node i's quota: its groups in a flavored tree, else one resource group of
// one flavor.
func (t *tree) resourceGroups(i int) []kueue.ResourceGroup {
	n := &t.nodes[i]
	if t.flavored {
		var rgs []kueue.ResourceGroup
		for _, gr := range n.groups {
			rg := kueue.ResourceGroup{}
			for _, r := range gr.covered {
				rg.CoveredResources = append(rg.CoveredResources, corev1.ResourceName(resourceNames[r]))
			}
			for _, f := range gr.flavors {
				fq := kueue.FlavorQuotas{Name: kueue.ResourceFlavorReference(f.name)}
				for _, r := range gr.covered {
					rq := kueue.ResourceQuota{Name: corev1.ResourceName(resourceNames[r]), NominalQuota: quantity(r, f.nominal[r])}
					if f.hasBorrowing[r] {
						q := quantity(r, f.borrowing[r])
						rq.BorrowingLimit = &q
					}
					if f.hasLending[r] {
						q := quantity(r, f.lending[r])
						rq.LendingLimit = &q
					}
					fq.Resources = append(fq.Resources, rq)
				}
				rg.Flavors = append(rg.Flavors, fq)
			}
			rgs = append(rgs, rg)
		}
		return rgs
	}
	rg := kueue.ResourceGroup{}
	fq := kueue.FlavorQuotas{Name: flavor}
	for r := range numResources {
		if !n.covered[r] {
			continue
		}
		rg.CoveredResources = append(rg.CoveredResources, corev1.ResourceName(resourceNames[r]))
		rq := kueue.ResourceQuota{Name: corev1.ResourceName(resourceNames[r]), NominalQuota: quantity(r, n.nominal[r])}
		if n.hasBorrowing[r] {
			q := quantity(r, n.borrowing[r])
			rq.BorrowingLimit = &q
		}
		if n.hasLending[r] {
			q := quantity(r, n.lending[r])
			rq.LendingLimit = &q
		}
		fq.Resources = append(fq.Resources, rq)
	}
	if len(rg.CoveredResources) == 0 {
		return nil
	}
	rg.Flavors = []kueue.FlavorQuotas{fq}
	return []kueue.ResourceGroup{rg}
}

// admittedWorkload is w as a Workload holding a quota reservation in ClusterQueue n: one pod set
// of count 1 per pod, each assigned the flavor for every covered resource (its own flavors in
// a flavored tree), with w's priority, creation time and reservation time.
func (t *tree) admittedWorkload(n *node, w *workload) *kueue.Workload {
	wl := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{
		Name: w.name, Namespace: "default", UID: types.UID(w.name),
		CreationTimestamp: metav1.NewTime(w.created),
	}}
	wl.Spec.Priority = ptrTo(w.priority)
	admission := &kueue.Admission{ClusterQueue: kueue.ClusterQueueReference(n.name)}
	for k, p := range w.pods {
		name := kueue.PodSetReference(fmt.Sprintf("ps%d", k))
		wl.Spec.PodSets = append(wl.Spec.PodSets, kueue.PodSet{Name: name, Count: 1, Template: podTemplate(p, n)})
		psa := kueue.PodSetAssignment{
			Name:          name,
			Flavors:       map[corev1.ResourceName]kueue.ResourceFlavorReference{},
			ResourceUsage: corev1.ResourceList{},
			Count:         ptrTo(int32(1)),
		}
		for r := range numResources {
			f := ""
			switch {
			case t.flavored:
				f = w.flavors[k][r]
			case n.covered[r] && p[r] > 0:
				f = flavor
			}
			if f != "" {
				psa.Flavors[corev1.ResourceName(resourceNames[r])] = kueue.ResourceFlavorReference(f)
				psa.ResourceUsage[corev1.ResourceName(resourceNames[r])] = quantity(r, p[r])
			}
		}
		admission.PodSetAssignments = append(admission.PodSetAssignments, psa)
	}
	wl.Status.Admission = admission
	wl.Status.Conditions = []metav1.Condition{{
		Type:               kueue.WorkloadQuotaReserved,
		Status:             metav1.ConditionTrue,
		Reason:             "QuotaReserved",
		LastTransitionTime: metav1.NewTime(w.reserved),
	}}
	return wl
}

// podTemplate is the pod template of a pod set of one pod requesting p, with only the positive
// requests of resources n covers.
func podTemplate(p quota, n *node) corev1.PodTemplateSpec {
	c := corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{}}}
	for r := range numResources {
		if p[r] > 0 && n.covers(r) {
			c.Resources.Requests[corev1.ResourceName(resourceNames[r])] = quantity(r, p[r])
		}
	}
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
}

func ptrTo[T any](v T) *T { return &v }

// cohortObject is explicit Cohort i as Kueue's API object: its resource groups, fair-sharing
// weight and parent.
func (t *tree) cohortObject(i int) *kueue.Cohort {
	n := &t.nodes[i]
	cohort := &kueue.Cohort{
		ObjectMeta: metav1.ObjectMeta{Name: n.name},
		Spec:       kueue.CohortSpec{ResourceGroups: t.resourceGroups(i), FairSharing: fairSharing(n.weight)},
	}
	if n.parent >= 0 {
		cohort.Spec.ParentName = kueue.CohortReference(t.nodes[n.parent].name)
	}
	return cohort
}
