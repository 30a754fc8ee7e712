package translate

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
)

func TestParseQueueConfig(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		want    *QueueConfig
		wantErr string
	}{
		{name: "EmptyDocumentIsEmptyConfig", yaml: "", want: &QueueConfig{}},
		{
			name: "QueuesInTheContractShape",
			yaml: `
queues:
- name: research
  deserved: {cpu: -1, memory: -1, nvidia.com/gpu: 8}
  creationTime: "2024-01-02T03:04:05Z"
- name: team-a
  parent: research
  deserved: {nvidia.com/gpu: 4}
  limit: {nvidia.com/gpu: 6}
  overQuotaWeight: {nvidia.com/gpu: 2}
  priority: 10
  reclaimMinRuntime: 600s
`,
			want: &QueueConfig{Queues: []*arbiterv1.Queue{
				{Name: "research", Deserved: map[string]float64{"cpu": -1, "memory": -1, "nvidia.com/gpu": 8},
					CreationTime: timestamppb.New(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC))},
				{Name: "team-a", Parent: "research", Deserved: map[string]float64{"nvidia.com/gpu": 4},
					Limit: map[string]float64{"nvidia.com/gpu": 6}, OverQuotaWeight: map[string]float64{"nvidia.com/gpu": 2},
					Priority: 10, ReclaimMinRuntime: durationpb.New(10 * time.Minute)},
			}},
		},
		{
			name: "OriginalProtoFieldNamesAndPolicy",
			yaml: `
policy:
  k_value: 1.5
  actions: [ACTION_ALLOCATE, ACTION_RECLAIM]
queues:
- name: a
  over_quota_weight: {cpu: 0}
`,
			want: &QueueConfig{
				Policy: &arbiterv1.Policy{KValue: 1.5, Actions: []arbiterv1.Action{arbiterv1.Action_ACTION_ALLOCATE, arbiterv1.Action_ACTION_RECLAIM}},
				Queues: []*arbiterv1.Queue{{Name: "a", OverQuotaWeight: map[string]float64{"cpu": 0}}},
			},
		},
		{name: "MisspeltQueueFieldIsAnError", yaml: "queues:\n- name: a\n  deservd: {cpu: 1}\n", wantErr: "queues[0]"},
		{name: "UnknownTopLevelKeyIsAnError", yaml: "queue:\n- name: a\n", wantErr: "allowed keys"},
		{name: "DuplicateKeyIsAnError", yaml: "queues: []\nqueues: []\n", wantErr: "queue config"},
		{name: "QuantityStringIsAnError", yaml: "queues:\n- name: a\n  deserved: {memory: 16Gi}\n", wantErr: "queues[0]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseQueueConfig([]byte(tc.yaml))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

func kaiQueue(name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.run.ai/v2",
		"kind":       "Queue",
		"metadata":   map[string]any{"name": name},
		"spec":       spec,
	}}
	return u
}

func TestQueueFromKAI(t *testing.T) {
	created := time.Date(2025, 5, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		queue   *unstructured.Unstructured
		want    *arbiterv1.Queue
		wantErr string
	}{
		{
			name: "EveryFieldMapsWithMemoryInMegabytes",
			queue: func() *unstructured.Unstructured {
				u := kaiQueue("team-a", map[string]any{
					"parentQueue": "research",
					"priority":    int64(50),
					"resources": map[string]any{
						"cpu":    map[string]any{"quota": int64(8000), "limit": int64(-1), "overQuotaWeight": int64(1)},
						"memory": map[string]any{"quota": int64(32000), "limit": int64(-1), "overQuotaWeight": int64(1)},
						"gpu":    map[string]any{"quota": 2.5, "limit": int64(4), "overQuotaWeight": int64(3)},
					},
					"preemptMinRuntime": "5m",
					"reclaimMinRuntime": "1h30m",
				})
				u.SetCreationTimestamp(metav1.NewTime(created))
				return u
			}(),
			want: &arbiterv1.Queue{
				Name: "team-a", Parent: "research", Priority: 50,
				Deserved:          map[string]float64{"cpu": 8000, "memory": 32e9, "nvidia.com/gpu": 2.5},
				Limit:             map[string]float64{"cpu": -1, "memory": -1, "nvidia.com/gpu": 4},
				OverQuotaWeight:   map[string]float64{"cpu": 1, "memory": 1, "nvidia.com/gpu": 3},
				PreemptMinRuntime: durationpb.New(5 * time.Minute),
				ReclaimMinRuntime: durationpb.New(90 * time.Minute),
				CreationTime:      timestamppb.New(created),
			},
		},
		{
			// KAI's CRD has no defaults: omitted values are 0 and are sent as 0 (SEMANTICS §0.2).
			name:  "OmittedValuesAreSentAsZero",
			queue: kaiQueue("default", map[string]any{"resources": map[string]any{"gpu": map[string]any{"quota": int64(-1)}}}),
			want: &arbiterv1.Queue{
				Name:            "default",
				Deserved:        map[string]float64{"cpu": 0, "memory": 0, "nvidia.com/gpu": -1},
				Limit:           map[string]float64{"cpu": 0, "memory": 0, "nvidia.com/gpu": 0},
				OverQuotaWeight: map[string]float64{"cpu": 0, "memory": 0, "nvidia.com/gpu": 0},
			},
		},
		{name: "FractionalPriorityIsAnError", queue: kaiQueue("x", map[string]any{"priority": 1.5}), wantErr: "priority"},
		{name: "BadDurationIsAnError", queue: kaiQueue("x", map[string]any{"reclaimMinRuntime": "soon"}), wantErr: "reclaimMinRuntime"},
		{name: "NonNumericQuotaIsAnError", queue: kaiQueue("x", map[string]any{"resources": map[string]any{"cpu": map[string]any{"quota": "8"}}}), wantErr: "not a number"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := QueueFromKAI(tc.queue)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("queue (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMergeQueuesLetsTheConfigMapOverrideKAI(t *testing.T) {
	cm := []*arbiterv1.Queue{{Name: "b", Priority: 1}, {Name: "a"}}
	kai := []*arbiterv1.Queue{{Name: "b", Priority: 2}, {Name: "c"}}
	got := MergeQueues(cm, kai)
	want := []*arbiterv1.Queue{{Name: "a"}, {Name: "b", Priority: 1}, {Name: "c"}}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("merged (-want +got):\n%s", diff)
	}
}
