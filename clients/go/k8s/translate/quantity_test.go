package translate

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestAmount(t *testing.T) {
	tests := []struct {
		name     string
		resource corev1.ResourceName
		quantity string
		want     float64
	}{
		{"CPUMillicoresStayMillicores", "cpu", "500m", 500},
		{"WholeCPUsBecomeMillicores", "cpu", "2", 2000},
		{"FractionalCPUsBecomeMillicores", "cpu", "1.5", 1500},
		{"CPUBelowOneMillicoreRoundsUp", "cpu", "100u", 1},
		{"BinaryMemoryBecomesBytes", "memory", "1Gi", 1 << 30},
		{"DecimalMemoryBecomesBytes", "memory", "1G", 1e9},
		{"PlainMemoryIsBytes", "memory", "128974848", 128974848},
		{"FractionalBinaryMemoryIsExact", "memory", "1.5Gi", 1610612736},
		{"GPUsAreCounts", "nvidia.com/gpu", "4", 4},
		{"EphemeralStorageIsBytes", "ephemeral-storage", "10Gi", 10 << 30},
		{"HugepagesAreBytes", "hugepages-2Mi", "4Mi", 4 << 20},
		{"FractionalExtendedResourceKeepsItsFraction", "example.com/slice", "250m", 0.25},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Amount(tc.resource, resource.MustParse(tc.quantity)); got != tc.want {
				t.Errorf("Amount(%s, %s) = %v, want %v", tc.resource, tc.quantity, got, tc.want)
			}
		})
	}
}

func TestAmountsLeavesOutIgnoredAndZero(t *testing.T) {
	got := Amounts(corev1.ResourceList{
		"cpu":            resource.MustParse("4"),
		"memory":         resource.MustParse("8Gi"),
		"pods":           resource.MustParse("110"),
		"nvidia.com/gpu": resource.MustParse("0"),
	}, map[string]bool{"pods": true})
	want := map[string]float64{"cpu": 4000, "memory": 8 << 30}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Amounts (-want +got):\n%s", diff)
	}
}

func TestPodRequestsFollowKubeScheduler(t *testing.T) {
	res := func(cpu, mem string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": resource.MustParse(cpu), "memory": resource.MustParse(mem)}}
	}
	always := corev1.ContainerRestartPolicyAlways
	tests := []struct {
		name string
		spec corev1.PodSpec
		want map[string]float64
	}{
		{"ContainersAreSummed", corev1.PodSpec{Containers: []corev1.Container{
			{Name: "a", Resources: res("1", "1Gi")}, {Name: "b", Resources: res("500m", "512Mi")}}},
			map[string]float64{"cpu": 1500, "memory": 1536 << 20}},
		{"LargestInitContainerWins", corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Resources: res("4", "256Mi")}},
			Containers:     []corev1.Container{{Name: "a", Resources: res("1", "1Gi")}}},
			map[string]float64{"cpu": 4000, "memory": 1 << 30}},
		{"SidecarsAddToContainers", corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "proxy", RestartPolicy: &always, Resources: res("100m", "64Mi")}},
			Containers:     []corev1.Container{{Name: "a", Resources: res("1", "1Gi")}}},
			map[string]float64{"cpu": 1100, "memory": 1088 << 20}},
		{"OverheadIsAdded", corev1.PodSpec{
			Overhead:   corev1.ResourceList{"cpu": resource.MustParse("250m")},
			Containers: []corev1.Container{{Name: "a", Resources: res("1", "1Gi")}}},
			map[string]float64{"cpu": 1250, "memory": 1 << 30}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := requests(&corev1.Pod{Spec: tc.spec}, map[string]bool{PodsResource: true})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}
