package controlplane

import (
	"context"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// TestControlPlaneBindsAPodOntoAKwokNodeAndAuditsIt starts the whole control plane in a folder
// given by a relative path, binds a pod to a kwok node by hand, and checks that kwok runs it and
// the audit log shows the binding.
func TestControlPlaneBindsAPodOntoAKwokNodeAndAuditsIt(t *testing.T) {
	if os.Getenv(BinDirEnv) == "" {
		if os.Getenv("ARBITER_REQUIRE_K8S") != "" {
			t.Fatalf("%s is not set", BinDirEnv)
		}
		t.Skipf("%s is not set: run tests/k8s/control-plane/build.sh", BinDirEnv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// A relative folder, as `--dir build/local-cluster` gives, works like an absolute one.
	t.Chdir(t.TempDir())
	cp, err := Start(ctx, Options{Dir: "relative/cp"})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	kube := kubernetes.NewForConfigOrDie(cp.RESTConfig(Admin))
	if err := CreateNodes(ctx, kube, NewNode("n1", corev1.ResourceList{"cpu": resource.MustParse("4")})); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec:       corev1.PodSpec{SchedulerName: "nobody", Containers: []corev1.Container{{Name: "c", Image: "x"}}},
	}
	if _, err := kube.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bind := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}
	if err := kube.CoreV1().Pods("default").Bind(ctx, bind, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A second binding is refused: the API server, unlike a fake, knows the pod is bound.
	if err := kube.CoreV1().Pods("default").Bind(ctx, bind, metav1.CreateOptions{}); err == nil {
		t.Error("binding a bound pod again succeeded")
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := kube.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, nil
	})
	if err != nil {
		t.Fatalf("pod never Running on the kwok node: %v\n%s", err, Tail(cp.Dir+"/kwok.log", 2000))
	}
	events, err := cp.Audit()
	if err != nil {
		t.Fatal(err)
	}
	var codes []int
	for _, e := range events {
		if e.Subresource == "binding" && e.Pod == "p" {
			codes = append(codes, e.Code)
		}
	}
	if len(codes) != 2 || codes[0] != 201 || codes[1] != 409 {
		t.Errorf("audited binding codes = %v, want [201 409]", codes)
	}
}
