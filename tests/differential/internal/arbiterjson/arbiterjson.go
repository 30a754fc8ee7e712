// Package arbiterjson writes arbiter.v1 FairShareRequests as proto3 JSON, asks the arbiter CLI
// for the answer in-process (`arbiter fairshare - --format json`) and reads the
// FairShareResponse back.
//
// The messages are written by hand rather than with the generated Go stubs so that the
// differential modules stay free of gRPC and of the client module's Kubernetes versions, which
// would otherwise be unified with the versions KAI and Kueue were built against.
package arbiterjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"strings"
	"time"
)

// FairShareRequest is arbiter.v1.FairShareRequest.
type FairShareRequest struct {
	Snapshot Snapshot `json:"snapshot"`
	Policy   Policy   `json:"policy"`
}

// Snapshot is arbiter.v1.Snapshot, with the fields a fair-share request uses.
type Snapshot struct {
	Queues        []Queue            `json:"queues,omitempty"`
	Nodes         []Node             `json:"nodes,omitempty"`
	PodGroups     []PodGroup         `json:"pod_groups,omitempty"`
	Usage         []QueueUsage       `json:"usage,omitempty"`
	UsageCapacity map[string]float64 `json:"usage_capacity,omitempty"`
	Capacity      map[string]float64 `json:"capacity,omitempty"`
}

// Queue is arbiter.v1.Queue. A map left nil is not written, so the field takes arbiter's
// default (SEMANTICS §0.2).
type Queue struct {
	Name              string             `json:"name"`
	Parent            string             `json:"parent,omitempty"`
	Deserved          map[string]float64 `json:"deserved,omitempty"`
	Limit             map[string]float64 `json:"limit,omitempty"`
	OverQuotaWeight   map[string]float64 `json:"over_quota_weight,omitempty"`
	Priority          int32              `json:"priority,omitempty"`
	CreationTime      string             `json:"creation_time,omitempty"`
	BorrowingLimit    map[string]float64 `json:"borrowing_limit,omitempty"`
	LendingLimit      map[string]float64 `json:"lending_limit,omitempty"`
	FairSharingWeight *float64           `json:"fair_sharing_weight,omitempty"`
}

// Node is arbiter.v1.Node.
type Node struct {
	Name          string             `json:"name"`
	Allocatable   map[string]float64 `json:"allocatable,omitempty"`
	Unschedulable bool               `json:"unschedulable,omitempty"`
}

// PodGroup is arbiter.v1.PodGroup.
type PodGroup struct {
	Name         string `json:"name"`
	Queue        string `json:"queue"`
	CreationTime string `json:"creation_time,omitempty"`
	Pods         []Pod  `json:"pods,omitempty"`
	Admitted     bool   `json:"admitted,omitempty"`
}

// Pod is arbiter.v1.Pod. Phase is the enum's name, e.g. "POD_PHASE_RELEASING".
type Pod struct {
	Name     string             `json:"name"`
	Requests map[string]float64 `json:"requests,omitempty"`
	NodeName string             `json:"node_name,omitempty"`
	Phase    string             `json:"phase,omitempty"`
}

// QueueUsage is arbiter.v1.QueueUsage.
type QueueUsage struct {
	Queue string             `json:"queue"`
	Usage map[string]float64 `json:"usage,omitempty"`
}

// Policy is arbiter.v1.Policy, with the fields a fair-share request uses.
type Policy struct {
	FairnessModel string  `json:"fairness_model,omitempty"`
	KValue        float64 `json:"k_value,omitempty"`
}

// FairShareResponse is arbiter.v1.FairShareResponse.
type FairShareResponse struct {
	Queues []QueueShare `json:"queues"`
}

// QueueShare is arbiter.v1.QueueShare. Fields at their proto3 default are absent from the JSON
// and read as zero.
type QueueShare struct {
	Queue            string            `json:"queue"`
	FairShare        map[string]Number `json:"fair_share"`
	Allocated        map[string]Number `json:"allocated"`
	Requested        map[string]Number `json:"requested"`
	Saturation       Number            `json:"saturation"`
	WeightedShare    Number            `json:"weighted_share"`
	DominantResource string            `json:"dominant_resource"`
	Borrowing        bool              `json:"borrowing"`
}

// Number is a proto3 JSON double: a JSON number, or one of the strings "Infinity",
// "-Infinity" and "NaN".
type Number float64

// UnmarshalJSON implements json.Unmarshaler.
func (n *Number) UnmarshalJSON(b []byte) error {
	switch s := string(b); s {
	case `"Infinity"`:
		*n = Number(math.Inf(1))
	case `"-Infinity"`:
		*n = Number(math.Inf(-1))
	case `"NaN"`:
		*n = Number(math.NaN())
	default:
		var f float64
		if err := json.Unmarshal(b, &f); err != nil {
			return fmt.Errorf("proto3 JSON double %s: %w", s, err)
		}
		*n = Number(f)
	}
	return nil
}

// Timestamp writes t as a proto3 JSON Timestamp.
func Timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// Encode returns the request as indented proto3 JSON, the form `arbiter fairshare` reads.
func Encode(req *FairShareRequest) ([]byte, error) {
	return json.MarshalIndent(req, "", " ")
}

// FairShare runs `cli fairshare - --format json` on the request and returns the response. A
// non-zero exit (an invalid request, any failure) is an error carrying the CLI's stderr.
func FairShare(cli string, req *FairShareRequest) (*FairShareResponse, error) {
	body, err := Encode(req)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(cli, "fairshare", "-", "--format", "json")
	cmd.Stdin = bytes.NewReader(body)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s fairshare: %w: %s", cli, err, strings.TrimSpace(stderr.String()))
	}
	var resp FairShareResponse
	if err := json.Unmarshal(stdout.Bytes(), &resp); err != nil {
		return nil, fmt.Errorf("%s fairshare: reading the response: %w", cli, err)
	}
	return &resp, nil
}

// ByQueue indexes the response's queue shares by queue name.
func (r *FairShareResponse) ByQueue() map[string]*QueueShare {
	m := make(map[string]*QueueShare, len(r.Queues))
	for i := range r.Queues {
		m[r.Queues[i].Queue] = &r.Queues[i]
	}
	return m
}
