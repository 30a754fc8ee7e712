package usage

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"k8s.io/client-go/kubernetes/fake"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
)

var start = time.Date(2026, 3, 1, 10, 59, 0, 0, time.UTC)

type alloc = map[string]map[string]float64

func TestLedgerAdvance(t *testing.T) {
	gpu := func(v float64) map[string]float64 { return map[string]float64{"nvidia.com/gpu": v} }
	tests := []struct {
		name         string
		ledger       Ledger
		now          time.Time
		allocated    alloc
		capacity     map[string]float64
		window       Window
		wantQueues   alloc
		wantCapacity map[string]float64
		wantUpdated  time.Time
	}{
		{
			name: "FirstStepOnlyStartsTheClock", now: start,
			allocated: alloc{"a": gpu(2)}, capacity: gpu(8),
			wantQueues: alloc{"a": gpu(0)}, wantCapacity: gpu(0), wantUpdated: start,
		},
		{
			name:   "AllocationAccumulatesOverTheInterval",
			ledger: Ledger{Updated: start, Queues: alloc{"a": gpu(5)}, Capacity: gpu(100)},
			now:    start.Add(10 * time.Second), allocated: alloc{"a": gpu(2), "b": {}}, capacity: gpu(8),
			wantQueues: alloc{"a": gpu(25), "b": {}}, wantCapacity: gpu(180), wantUpdated: start.Add(10 * time.Second),
		},
		{
			name:   "HalfLifeDecaysPastUsageAndCapacity",
			ledger: Ledger{Updated: start, Queues: alloc{"a": gpu(100)}, Capacity: gpu(400)},
			now:    start.Add(time.Minute), allocated: alloc{"a": {}}, capacity: gpu(0), window: Window{HalfLife: time.Minute},
			wantQueues: alloc{"a": gpu(50)}, wantCapacity: gpu(200), wantUpdated: start.Add(time.Minute),
		},
		{
			name:   "TumblingWindowStartsFromZero",
			ledger: Ledger{Updated: start, Queues: alloc{"a": gpu(1000)}, Capacity: gpu(9000)},
			now:    start.Add(90 * time.Second), allocated: alloc{"a": gpu(2)}, capacity: gpu(8), window: Window{Tumbling: time.Hour},
			wantQueues: alloc{"a": gpu(60)}, wantCapacity: gpu(240), wantUpdated: start.Add(90 * time.Second),
		},
		{
			name:   "SameTumblingWindowKeepsAccumulating",
			ledger: Ledger{Updated: start, Queues: alloc{"a": gpu(1000)}, Capacity: gpu(9000)},
			now:    start.Add(30 * time.Second), allocated: alloc{"a": gpu(2)}, capacity: gpu(8), window: Window{Tumbling: time.Hour},
			wantQueues: alloc{"a": gpu(1060)}, wantCapacity: gpu(9240), wantUpdated: start.Add(30 * time.Second),
		},
		{
			name:   "DeletedQueuesAreForgotten",
			ledger: Ledger{Updated: start, Queues: alloc{"gone": gpu(7), "a": gpu(1)}, Capacity: gpu(1)},
			now:    start, allocated: alloc{"a": {}}, capacity: gpu(8),
			wantQueues: alloc{"a": gpu(1)}, wantCapacity: gpu(1), wantUpdated: start,
		},
		{
			name:   "ClockGoingBackwardsCountsNoTime",
			ledger: Ledger{Updated: start, Queues: alloc{"a": gpu(3)}, Capacity: gpu(4)},
			now:    start.Add(-time.Minute), allocated: alloc{"a": gpu(2)}, capacity: gpu(8),
			wantQueues: alloc{"a": gpu(3)}, wantCapacity: gpu(4), wantUpdated: start,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.ledger
			if err := l.Advance(tc.now, tc.allocated, tc.capacity, tc.window); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantQueues, l.Queues); diff != "" {
				t.Errorf("queues (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantCapacity, l.Capacity); diff != "" {
				t.Errorf("capacity (-want +got):\n%s", diff)
			}
			if !l.Updated.Equal(tc.wantUpdated) {
				t.Errorf("updated = %v, want %v", l.Updated, tc.wantUpdated)
			}
		})
	}
}

func TestLedgerFeedsTheSnapshotByQueueName(t *testing.T) {
	l := Ledger{Queues: alloc{"b": {"cpu": 2}, "a": {"cpu": 1}}, Capacity: map[string]float64{"cpu": 9}}
	want := []*arbiterv1.QueueUsage{{Queue: "a", Usage: map[string]float64{"cpu": 1}}, {Queue: "b", Usage: map[string]float64{"cpu": 2}}}
	if diff := cmp.Diff(want, l.Usage(), protocmp.Transform()); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]float64{"cpu": 9}, l.UsageCapacity()); diff != "" {
		t.Errorf("capacity (-want +got):\n%s", diff)
	}
}

func TestConfigMapStoreSurvivesARestart(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	store := &ConfigMapStore{Client: client, Namespace: "arbiter-system", Name: "arbiter-usage"}
	empty, err := store.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !empty.Updated.IsZero() || len(empty.Queues) != 0 {
		t.Fatalf("missing configmap loaded as %+v, want an empty ledger", empty)
	}
	l := &Ledger{Updated: start, Queues: alloc{"a": {"nvidia.com/gpu": 0.1 + 0.2}}, Capacity: map[string]float64{"nvidia.com/gpu": 1e300}}
	for i := 0; i < 2; i++ { // create, then update
		if err := store.Save(ctx, l); err != nil {
			t.Fatal(err)
		}
		got, err := (&ConfigMapStore{Client: client, Namespace: "arbiter-system", Name: "arbiter-usage"}).Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(l, got); diff != "" {
			t.Fatalf("round trip %d (-want +got):\n%s", i, diff)
		}
		l.Queues["a"]["nvidia.com/gpu"]++
	}
}
