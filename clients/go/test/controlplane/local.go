package controlplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
)

// ResetDir empties dir for a new local cluster made by the command owner, refusing a non-empty
// folder that owner did not make (it leaves the file .owner in the folders it makes).
func ResetDir(dir, owner string) error {
	marker := filepath.Join(dir, "."+owner)
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	if len(entries) > 0 {
		if _, err := os.Stat(marker); err != nil {
			return fmt.Errorf("--dir %s is not empty and was not made by %s: choose another", dir, owner)
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(marker, nil, 0o644)
}

// CreateUniformNodes creates the kwok nodes node-1 … node-n, each with the given CPUs and memory
// (Kubernetes quantities) and gpus nvidia.com/gpu (none when 0).
func CreateUniformNodes(ctx context.Context, kube kubernetes.Interface, n int, cpu, memory string, gpus int) error {
	alloc := corev1.ResourceList{}
	for name, v := range map[corev1.ResourceName]string{corev1.ResourceCPU: cpu, corev1.ResourceMemory: memory} {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return fmt.Errorf("node %s %q: %w", name, v, err)
		}
		alloc[name] = q
	}
	if gpus > 0 {
		alloc["nvidia.com/gpu"] = *resource.NewQuantity(int64(gpus), resource.DecimalSI)
	}
	nodes := make([]*corev1.Node, 0, n)
	for i := 1; i <= n; i++ {
		nodes = append(nodes, NewNode(fmt.Sprintf("node-%d", i), alloc))
	}
	return CreateNodes(ctx, kube, nodes...)
}
