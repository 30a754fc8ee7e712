package client

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
	"arbiter.dev/clients/go/test/e2e"
)

// scriptedArbiter answers Schedule with resp and keeps the last request it received.
type scriptedArbiter struct {
	arbiterv1.UnimplementedArbiterServer
	resp *arbiterv1.ScheduleResponse
	mu   sync.Mutex
	got  *arbiterv1.ScheduleRequest
}

func (s *scriptedArbiter) Schedule(_ context.Context, req *arbiterv1.ScheduleRequest) (*arbiterv1.ScheduleResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = req
	return s.resp, nil
}

func twoGroupRequest() *arbiterv1.ScheduleRequest {
	return &arbiterv1.ScheduleRequest{Snapshot: &arbiterv1.Snapshot{
		Queues: []*arbiterv1.Queue{{Name: "team"}},
		PodGroups: []*arbiterv1.PodGroup{
			{Name: "running", Queue: "team"},
			{Name: "waiting", Queue: "team"},
		},
	}}
}

func TestWhatIfSendsACopyWithTheGroupAppended(t *testing.T) {
	fake := &scriptedArbiter{resp: &arbiterv1.ScheduleResponse{
		Bindings: []*arbiterv1.Binding{{PodGroup: "new", Pod: "new-0", Node: "n1"}},
	}}
	c, _ := dial(t, Config{Target: serve(t, fake)})
	req := twoGroupRequest()
	before := proto.Clone(req)
	group := &arbiterv1.PodGroup{Name: "new", Queue: "team", Pods: []*arbiterv1.Pod{{Name: "new-0"}}}

	answer, err := c.WhatIf(context.Background(), req, group)
	if err != nil {
		t.Fatal(err)
	}
	if answer.Outcome != OutcomePlaced {
		t.Errorf("outcome = %q, want placed", answer.Outcome)
	}
	if diff := cmp.Diff(before, req, protocmp.Transform()); diff != "" {
		t.Errorf("WhatIf modified its request (-before +after):\n%s", diff)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	var names []string
	for _, g := range fake.got.GetSnapshot().GetPodGroups() {
		names = append(names, g.GetName())
	}
	if diff := cmp.Diff([]string{"running", "waiting", "new"}, names); diff != "" {
		t.Errorf("pod groups sent (-want +got):\n%s", diff)
	}
}

func TestWhatIfRefusesADuplicateNameWithoutACall(t *testing.T) {
	fake := &scriptedArbiter{resp: &arbiterv1.ScheduleResponse{}}
	c, _ := dial(t, Config{Target: serve(t, fake)})
	_, err := c.WhatIf(context.Background(), twoGroupRequest(), &arbiterv1.PodGroup{Name: "waiting", Queue: "team"})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("err = %v, want INVALID_ARGUMENT", err)
	}
	if want := `pod group "waiting" is already in the snapshot (snapshot.pod_groups[1])`; !strings.Contains(err.Error(), want) {
		t.Errorf("err = %q, want it to contain %q", err, want)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if fake.got != nil {
		t.Error("WhatIf called the server for a duplicate name")
	}
}

func TestReadWhatIfAnswer(t *testing.T) {
	pending := &arbiterv1.PendingPodGroup{PodGroup: "new", Reason: "queue-over-limit", Message: "queue team would exceed its limit"}
	reclaim := &arbiterv1.Eviction{PodGroup: "other", Pod: "other-0", Node: "n1",
		Reason: arbiterv1.EvictionReason_FAIR_SHARE_RECLAIM, PreemptorPodGroup: "new", Message: "reclaimed for new"}
	unrelated := &arbiterv1.Eviction{PodGroup: "other", Pod: "other-1", Node: "n2",
		Reason: arbiterv1.EvictionReason_PRIORITY_PREEMPTION, PreemptorPodGroup: "third"}
	tests := []struct {
		name string
		resp *arbiterv1.ScheduleResponse
		want *WhatIfAnswer
	}{
		{
			name: "PlacedWithPipelinedBindingsAndItsEvictions",
			resp: &arbiterv1.ScheduleResponse{
				Bindings: []*arbiterv1.Binding{
					{PodGroup: "new", Pod: "new-0", Node: "n1", AfterEvictions: true},
					{PodGroup: "new", Pod: "new-1", Node: "n2"},
					{PodGroup: "third", Pod: "third-0", Node: "n3"},
				},
				Evictions: []*arbiterv1.Eviction{reclaim, unrelated},
			},
			want: &WhatIfAnswer{PodGroup: "new", Outcome: OutcomePlaced, AfterEvictions: true,
				Bindings: []*arbiterv1.Binding{
					{PodGroup: "new", Pod: "new-0", Node: "n1", AfterEvictions: true},
					{PodGroup: "new", Pod: "new-1", Node: "n2"},
				},
				Evictions: []*arbiterv1.Eviction{reclaim}},
		},
		{
			name: "PendingWithTheReason",
			resp: &arbiterv1.ScheduleResponse{Pending: []*arbiterv1.PendingPodGroup{
				{PodGroup: "third", Reason: "insufficient-resources"}, pending}},
			want: &WhatIfAnswer{PodGroup: "new", Outcome: OutcomePending, Pending: pending},
		},
		{
			name: "AdmittedAfterEvictions",
			resp: &arbiterv1.ScheduleResponse{
				Admissions: []*arbiterv1.Admission{{PodGroup: "new", Queue: "cq", AfterEvictions: true}},
				Evictions:  []*arbiterv1.Eviction{reclaim},
			},
			want: &WhatIfAnswer{PodGroup: "new", Outcome: OutcomeAdmitted, AfterEvictions: true,
				Evictions: []*arbiterv1.Eviction{reclaim}},
		},
		{
			name: "AdmittedWithItsFlavors",
			resp: &arbiterv1.ScheduleResponse{
				Admissions: []*arbiterv1.Admission{{PodGroup: "new", Queue: "cq",
					PodSets: []*arbiterv1.PodSetFlavors{{PodSet: "main", Flavors: map[string]string{"cpu": "spot"}}}}},
			},
			want: &WhatIfAnswer{PodGroup: "new", Outcome: OutcomeAdmitted,
				PodSets: []*arbiterv1.PodSetFlavors{{PodSet: "main", Flavors: map[string]string{"cpu": "spot"}}}},
		},
		{
			name: "EvictedWhenItsOwnPodsAre",
			resp: &arbiterv1.ScheduleResponse{Evictions: []*arbiterv1.Eviction{
				{PodGroup: "new", Pod: "new-0", Node: "n1", PreemptorPodGroup: "third"}}},
			want: &WhatIfAnswer{PodGroup: "new", Outcome: OutcomeEvicted},
		},
		{
			name: "UnchangedWhenNoDecisionNamesIt",
			resp: &arbiterv1.ScheduleResponse{Bindings: []*arbiterv1.Binding{{PodGroup: "third", Pod: "third-0", Node: "n3"}}},
			want: &WhatIfAnswer{PodGroup: "new", Outcome: OutcomeUnchanged},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ReadWhatIfAnswer("new", tc.resp)
			if diff := cmp.Diff(tc.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWhatIfAgainstArbiterServer asks the arbiter-server named by ARBITER_SERVER_BIN the
// questions of tests/testdata/what_if/, which the CLI's integration test also asks.
func TestWhatIfAgainstArbiterServer(t *testing.T) {
	c, _ := dial(t, Config{Target: e2e.ArbiterServer(t), Timeout: 20 * time.Second})
	tests := []struct {
		name, snapshot, group string
		wantOutcome           Outcome
		wantAfterEvictions    bool
		wantEvictionReasons   []arbiterv1.EvictionReason
		wantPendingReason     string
	}{
		{"AGroupThatFitsIsPlaced", "kai-snapshot.json", "fits.json", OutcomePlaced, false, nil, ""},
		{"AGroupThatNeedsAReclaimIsPlacedAfterItsEvictions", "kai-snapshot.json", "needs-reclaim.json", OutcomePlaced, true,
			[]arbiterv1.EvictionReason{arbiterv1.EvictionReason_FAIR_SHARE_RECLAIM, arbiterv1.EvictionReason_FAIR_SHARE_RECLAIM}, ""},
		{"AGroupOverItsQueueLimitIsPending", "kai-snapshot.json", "over-limit.json", OutcomePending, false, nil, "queue-over-limit"},
		{"AKueueWorkloadIsAdmitted", "kueue-snapshot.json", "kueue-workload.json", OutcomeAdmitted, false, nil, ""},
		{"AKueueWorkloadThatPreemptsIsAdmittedAfterEvictions", "kueue-snapshot.json", "kueue-preempting.json", OutcomeAdmitted, true,
			[]arbiterv1.EvictionReason{arbiterv1.EvictionReason_KUEUE_IN_CLUSTER_QUEUE}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := &arbiterv1.ScheduleRequest{}
			readTestdata(t, tc.snapshot, req)
			group := &arbiterv1.PodGroup{}
			readTestdata(t, tc.group, group)
			answer, err := c.WhatIf(context.Background(), req, group)
			if err != nil {
				t.Fatal(err)
			}
			if answer.Outcome != tc.wantOutcome || answer.AfterEvictions != tc.wantAfterEvictions {
				t.Errorf("outcome %q, after evictions %v; want %q, %v", answer.Outcome, answer.AfterEvictions, tc.wantOutcome, tc.wantAfterEvictions)
			}
			var reasons []arbiterv1.EvictionReason
			for _, e := range answer.Evictions {
				reasons = append(reasons, e.GetReason())
			}
			if diff := cmp.Diff(tc.wantEvictionReasons, reasons); diff != "" {
				t.Errorf("eviction reasons (-want +got):\n%s", diff)
			}
			if got := answer.Pending.GetReason(); got != tc.wantPendingReason {
				t.Errorf("pending reason = %q, want %q", got, tc.wantPendingReason)
			}
			if tc.wantPendingReason != "" && answer.Pending.GetMessage() == "" {
				t.Error("pending without a message")
			}
		})
	}
}

// readTestdata reads tests/testdata/what_if/name (proto3 JSON) into m.
func readTestdata(t *testing.T, name string, m proto.Message) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "tests", "testdata", "what_if", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := protojson.Unmarshal(data, m); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}
