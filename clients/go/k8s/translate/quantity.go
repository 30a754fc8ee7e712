// Package translate turns Kubernetes objects (nodes, pods, queue definitions) into an arbiter.v1
// Snapshot, the only thing arbiter sees of a cluster.
//
// Units follow the contract's convention: "cpu" in millicores, "memory" (and every other
// byte-valued resource such as ephemeral-storage and hugepages-*) in bytes, and extended
// resources such as "nvidia.com/gpu" as plain counts. Resource names are kept as Kubernetes
// spells them.
package translate

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Amount converts one Kubernetes quantity to the contract's unit for resource name: millicores
// for cpu, the plain value for everything else (bytes for memory, a count for extended
// resources). Integer values are exact; fractional values of non-cpu resources keep their
// fraction.
func Amount(name corev1.ResourceName, q resource.Quantity) float64 {
	if name == corev1.ResourceCPU {
		return float64(q.MilliValue())
	}
	if v, ok := q.AsInt64(); ok {
		return float64(v)
	}
	return q.AsApproximateFloat64()
}

// Amounts converts a resource list, leaving out the names in ignored and zero amounts (a zero
// request asks for nothing; a zero allocatable offers nothing).
func Amounts(list corev1.ResourceList, ignored map[string]bool) map[string]float64 {
	out := make(map[string]float64, len(list))
	for name, q := range list {
		if ignored[string(name)] {
			continue
		}
		if v := Amount(name, q); v != 0 {
			out[string(name)] = v
		}
	}
	return out
}
