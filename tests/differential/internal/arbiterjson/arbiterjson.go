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
	Now           string             `json:"now,omitempty"`
	Queues        []Queue            `json:"queues,omitempty"`
	Nodes         []Node             `json:"nodes,omitempty"`
	PodGroups     []PodGroup         `json:"pod_groups,omitempty"`
	Usage         []QueueUsage       `json:"usage,omitempty"`
	UsageCapacity map[string]float64 `json:"usage_capacity,omitempty"`
	Capacity      map[string]float64 `json:"capacity,omitempty"`
	// ResourceFlavors are Kueue ResourceFlavors (SEMANTICS §5.8).
	ResourceFlavors []ResourceFlavor `json:"resource_flavors,omitempty"`
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
	KueuePreemption   *KueuePreemption   `json:"kueue_preemption,omitempty"`
	// ResourceGroups are a Kueue queue's quotas per flavor (SEMANTICS §5.8); a queue gives its
	// quotas either here or in Deserved, BorrowingLimit and LendingLimit.
	ResourceGroups    []ResourceGroup    `json:"resource_groups,omitempty"`
	FlavorFungibility *FlavorFungibility `json:"flavor_fungibility,omitempty"`
	// ReclaimMinRuntime and PreemptMinRuntime are KAI's min-runtimes as protobuf JSON
	// durations ("600s"); unset = inherited (SEMANTICS §4.7).
	ReclaimMinRuntime string `json:"reclaim_min_runtime,omitempty"`
	PreemptMinRuntime string `json:"preempt_min_runtime,omitempty"`
}

// KueuePreemption is arbiter.v1.KueuePreemption; the values are the enums' names, e.g.
// "RECLAIM_WITHIN_COHORT_ANY".
type KueuePreemption struct {
	WithinClusterQueue  string `json:"within_cluster_queue,omitempty"`
	ReclaimWithinCohort string `json:"reclaim_within_cohort,omitempty"`
}

// ResourceGroup is arbiter.v1.ResourceGroup. The order of Flavors is the order they are tried in.
type ResourceGroup struct {
	CoveredResources []string       `json:"covered_resources"`
	Flavors          []FlavorQuotas `json:"flavors"`
}

// FlavorQuotas is arbiter.v1.FlavorQuotas.
type FlavorQuotas struct {
	Flavor    string                         `json:"flavor"`
	Resources map[string]FlavorResourceQuota `json:"resources"`
}

// FlavorResourceQuota is arbiter.v1.FlavorResourceQuota; a nil limit is absent (no limit).
type FlavorResourceQuota struct {
	Nominal        float64  `json:"nominal"`
	BorrowingLimit *float64 `json:"borrowing_limit,omitempty"`
	LendingLimit   *float64 `json:"lending_limit,omitempty"`
}

// FlavorFungibility is arbiter.v1.FlavorFungibility; the values are the enums' names, e.g.
// "WHEN_CAN_BORROW_TRY_NEXT_FLAVOR", and "" leaves a field at its default.
type FlavorFungibility struct {
	WhenCanBorrow  string `json:"when_can_borrow,omitempty"`
	WhenCanPreempt string `json:"when_can_preempt,omitempty"`
	Preference     string `json:"preference,omitempty"`
}

// ResourceFlavor is arbiter.v1.ResourceFlavor.
type ResourceFlavor struct {
	Name        string            `json:"name"`
	NodeLabels  map[string]string `json:"node_labels,omitempty"`
	NodeTaints  []Taint           `json:"node_taints,omitempty"`
	Tolerations []Toleration      `json:"tolerations,omitempty"`
}

// Taint is arbiter.v1.Taint.
type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// Toleration is arbiter.v1.Toleration.
type Toleration struct {
	Key      string `json:"key,omitempty"`
	Operator string `json:"operator,omitempty"`
	Value    string `json:"value,omitempty"`
	Effect   string `json:"effect,omitempty"`
}

// Node is arbiter.v1.Node.
type Node struct {
	Name          string             `json:"name"`
	Allocatable   map[string]float64 `json:"allocatable,omitempty"`
	Labels        map[string]string  `json:"labels,omitempty"`
	Taints        []Taint            `json:"taints,omitempty"`
	Unschedulable bool               `json:"unschedulable,omitempty"`
}

// PodGroup is arbiter.v1.PodGroup.
type PodGroup struct {
	Name           string `json:"name"`
	Queue          string `json:"queue"`
	Priority       int32  `json:"priority,omitempty"`
	Preemptibility string `json:"preemptibility,omitempty"`
	MinMember      int32  `json:"min_member,omitempty"`
	CreationTime   string `json:"creation_time,omitempty"`
	Pods           []Pod  `json:"pods,omitempty"`
	Admitted       bool   `json:"admitted,omitempty"`
	AdmissionTime  string `json:"admission_time,omitempty"`
	// Flavors are an admitted group's flavors, per pod set (SEMANTICS §5.8.3).
	Flavors []PodSetFlavors `json:"flavors,omitempty"`
}

// PodSetFlavors is arbiter.v1.PodSetFlavors: the flavor of each resource of one pod set.
type PodSetFlavors struct {
	PodSet  string            `json:"pod_set"`
	Flavors map[string]string `json:"flavors,omitempty"`
}

// Pod is arbiter.v1.Pod. Phase is the enum's name, e.g. "POD_PHASE_RELEASING".
type Pod struct {
	Name     string             `json:"name"`
	Requests map[string]float64 `json:"requests,omitempty"`
	NodeName string             `json:"node_name,omitempty"`
	Phase    string             `json:"phase,omitempty"`
	// StartTime is a RUNNING pod's start, for min-runtimes (SEMANTICS §4.7).
	StartTime string `json:"start_time,omitempty"`
	// NodeSelector and Tolerations decide which flavors suit the pod's pod set (SEMANTICS §5.8.5).
	NodeSelector map[string]string `json:"node_selector,omitempty"`
	Tolerations  []Toleration      `json:"tolerations,omitempty"`
	PodSet       string            `json:"pod_set,omitempty"`
}

// QueueUsage is arbiter.v1.QueueUsage.
type QueueUsage struct {
	Queue string             `json:"queue"`
	Usage map[string]float64 `json:"usage,omitempty"`
}

// Policy is arbiter.v1.Policy. Actions are the enums' names, e.g. "ACTION_ALLOCATE"; a nil pointer
// leaves the field absent (its default, SEMANTICS §0.2).
type Policy struct {
	FairnessModel              string   `json:"fairness_model,omitempty"`
	KValue                     float64  `json:"k_value,omitempty"`
	Placement                  string   `json:"placement,omitempty"`
	Actions                    []string `json:"actions,omitempty"`
	ConsolidatingReclaim       *bool    `json:"consolidating_reclaim,omitempty"`
	MaxConsolidationPreemptees *int32   `json:"max_consolidation_preemptees,omitempty"`
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
	// FlavorResources are the queue's flavor-resources, in flavored requests only (SEMANTICS
	// §5.8.9).
	FlavorResources []FlavorResourceShare `json:"flavor_resources"`
}

// FlavorResourceShare is arbiter.v1.FlavorResourceShare.
type FlavorResourceShare struct {
	Flavor       string `json:"flavor"`
	Resource     string `json:"resource"`
	Nominal      Number `json:"nominal"`
	SubtreeQuota Number `json:"subtree_quota"`
	Usage        Number `json:"usage"`
	Borrowed     Number `json:"borrowed"`
}

// ScheduleRequest is arbiter.v1.ScheduleRequest.
type ScheduleRequest struct {
	Snapshot Snapshot `json:"snapshot"`
	Policy   Policy   `json:"policy"`
}

// ScheduleResponse is arbiter.v1.ScheduleResponse.
type ScheduleResponse struct {
	Queues     []QueueShare      `json:"queues"`
	Bindings   []Binding         `json:"bindings"`
	Evictions  []Eviction        `json:"evictions"`
	Admissions []Admission       `json:"admissions"`
	Pending    []PendingPodGroup `json:"pending"`
}

// Binding is arbiter.v1.Binding (KAI model): a pod bound to a node, now or once the pods
// evicted or releasing there are gone (AfterEvictions).
type Binding struct {
	PodGroup       string `json:"pod_group"`
	Pod            string `json:"pod"`
	Node           string `json:"node"`
	AfterEvictions bool   `json:"after_evictions"`
}

// Eviction is arbiter.v1.Eviction. Reason is the enum's name.
type Eviction struct {
	PodGroup          string `json:"pod_group"`
	Pod               string `json:"pod"`
	Node              string `json:"node"`
	Reason            string `json:"reason"`
	PreemptorPodGroup string `json:"preemptor_pod_group"`
}

// Admission is arbiter.v1.Admission.
type Admission struct {
	PodGroup       string          `json:"pod_group"`
	Queue          string          `json:"queue"`
	AfterEvictions bool            `json:"after_evictions"`
	PodSets        []PodSetFlavors `json:"pod_sets"`
}

// PendingPodGroup is arbiter.v1.PendingPodGroup.
type PendingPodGroup struct {
	PodGroup string `json:"pod_group"`
	Reason   string `json:"reason"`
	Message  string `json:"message"`
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

// EncodeSchedule returns the request as indented proto3 JSON, the form `arbiter schedule` reads.
func EncodeSchedule(req *ScheduleRequest) ([]byte, error) {
	return json.MarshalIndent(req, "", " ")
}

// Schedule runs `cli schedule - --format json` on the request and returns the response. A
// non-zero exit is an error carrying the CLI's stderr.
func Schedule(cli string, req *ScheduleRequest) (*ScheduleResponse, error) {
	body, err := EncodeSchedule(req)
	if err != nil {
		return nil, err
	}
	var resp ScheduleResponse
	if err := run(cli, "schedule", body, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// Attempt is one line of `arbiter schedule --trace`: an attempt of a KAI action on a pod
// group's next unit, in the order the cycle made them, with the pods its commit evicted and
// moved, and the victims its solution restored on their own node (in no list of the answer).
type Attempt struct {
	Action   string
	PodGroup string
	Pods     int
	Outcome  string
	Evicted  []string
	Moved    []string
	Restored []string
}

// ScheduleTrace is Schedule with --trace: the response and the attempts in order.
func ScheduleTrace(cli string, req *ScheduleRequest) (*ScheduleResponse, []Attempt, error) {
	body, err := EncodeSchedule(req)
	if err != nil {
		return nil, nil, err
	}
	var resp ScheduleResponse
	stderr, err := runWith(cli, "schedule", body, &resp, "--trace")
	if err != nil {
		return nil, nil, err
	}
	attempts, err := parseAttempts(stderr)
	if err != nil {
		return nil, nil, err
	}
	return &resp, attempts, nil
}

// parseAttempts reads --trace's lines: "ACTION GROUP (N pod[s]): OUTCOME[; evicted P...][; moved
// P...][; restored P...]".
func parseAttempts(text string) ([]Attempt, error) {
	var attempts []Attempt
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if line == "" {
			continue
		}
		head, rest, ok := strings.Cut(line, "): ")
		var a Attempt
		var unit string
		if ok {
			_, err := fmt.Sscanf(head, "%s %s (%d %s", &a.Action, &a.PodGroup, &a.Pods, &unit)
			ok = err == nil
		}
		if !ok {
			return nil, fmt.Errorf("--trace: unreadable line %q", line)
		}
		parts := strings.Split(rest, "; ")
		a.Outcome = parts[0]
		for _, p := range parts[1:] {
			if pods, found := strings.CutPrefix(p, "evicted "); found {
				a.Evicted = strings.Fields(pods)
			} else if pods, found := strings.CutPrefix(p, "moved "); found {
				a.Moved = strings.Fields(pods)
			} else if pods, found := strings.CutPrefix(p, "restored "); found {
				a.Restored = strings.Fields(pods)
			} else {
				return nil, fmt.Errorf("--trace: unreadable part %q of line %q", p, line)
			}
		}
		attempts = append(attempts, a)
	}
	return attempts, nil
}

// FairShare runs `cli fairshare - --format json` on the request and returns the response. A
// non-zero exit (an invalid request, any failure) is an error carrying the CLI's stderr.
func FairShare(cli string, req *FairShareRequest) (*FairShareResponse, error) {
	body, err := Encode(req)
	if err != nil {
		return nil, err
	}
	var resp FairShareResponse
	if err := run(cli, "fairshare", body, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// run feeds body to `cli command - --format json` and reads the JSON answer into resp.
func run(cli, command string, body []byte, resp any) error {
	_, err := runWith(cli, command, body, resp)
	return err
}

// runWith is run with extra flags; it returns the CLI's stderr.
func runWith(cli, command string, body []byte, resp any, flags ...string) (string, error) {
	cmd := exec.Command(cli, append([]string{command, "-", "--format", "json"}, flags...)...)
	cmd.Stdin = bytes.NewReader(body)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", cli, command, err, strings.TrimSpace(stderr.String()))
	}
	if err := json.Unmarshal(stdout.Bytes(), resp); err != nil {
		return "", fmt.Errorf("%s %s: reading the response: %w", cli, command, err)
	}
	return stderr.String(), nil
}

// ByQueue indexes the response's queue shares by queue name.
func (r *FairShareResponse) ByQueue() map[string]*QueueShare {
	m := make(map[string]*QueueShare, len(r.Queues))
	for i := range r.Queues {
		m[r.Queues[i].Queue] = &r.Queues[i]
	}
	return m
}
