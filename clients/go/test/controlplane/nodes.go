package controlplane

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// NewNode returns a Node that kwok runs, with the given allocatable resources (capacity equal),
// e.g. NewNode("n1", corev1.ResourceList{"cpu": resource.MustParse("8")}). A "pods" allocatable
// of 110 is added unless given.
func NewNode(name string, allocatable corev1.ResourceList) *corev1.Node {
	res := allocatable.DeepCopy()
	if _, ok := res[corev1.ResourcePods]; !ok {
		res[corev1.ResourcePods] = resource.MustParse("110")
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{"kubernetes.io/hostname": name, "type": "kwok"},
			Annotations: map[string]string{KwokNodeAnnotation: "fake"},
		},
		Status: corev1.NodeStatus{Allocatable: res, Capacity: res.DeepCopy()},
	}
}

// CreateNodes creates nodes and waits until kwok reports each Ready.
func CreateNodes(ctx context.Context, kube kubernetes.Interface, nodes ...*corev1.Node) error {
	for _, n := range nodes {
		if _, err := kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create node %s: %w", n.Name, err)
		}
	}
	for _, n := range nodes {
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err := kube.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			for _, c := range got.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("node %s not Ready: %w", n.Name, err)
		}
	}
	return nil
}

// AuditEvent is one binding or eviction the API server answered.
type AuditEvent struct {
	User        string // who asked
	Namespace   string
	Pod         string
	Subresource string    // "binding" or "eviction"
	Code        int       // the HTTP status answered: 201 done, 409 conflict, 429 refused by a budget
	Received    time.Time // when the API server received the request
}

// Audit reads every binding and eviction answered so far, in order.
func (cp *ControlPlane) Audit() ([]AuditEvent, error) {
	f, err := os.Open(cp.AuditLog)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []AuditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e struct {
			Stage    string    `json:"stage"`
			Received time.Time `json:"requestReceivedTimestamp"`
			User     struct {
				Username string `json:"username"`
			} `json:"user"`
			ObjectRef struct {
				Namespace   string `json:"namespace"`
				Name        string `json:"name"`
				Subresource string `json:"subresource"`
			} `json:"objectRef"`
			ResponseStatus struct {
				Code int `json:"code"`
			} `json:"responseStatus"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			continue // a line being written as we read
		}
		if e.Stage != "ResponseComplete" {
			continue
		}
		out = append(out, AuditEvent{
			User: e.User.Username, Namespace: e.ObjectRef.Namespace, Pod: e.ObjectRef.Name,
			Subresource: e.ObjectRef.Subresource, Code: e.ResponseStatus.Code, Received: e.Received,
		})
	}
	return out, sc.Err()
}
