package client

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
)

// Outcome is what one scheduling cycle decides for the pod group of a WhatIf.
type Outcome string

// The outcomes, in the order WhatIf tests them: the first that holds is the answer.
const (
	// OutcomePending: a PendingPodGroup names the group; WhatIfAnswer.Pending says why.
	OutcomePending Outcome = "pending"
	// OutcomeAdmitted (Kueue): an Admission reserves quota for the group.
	OutcomeAdmitted Outcome = "admitted"
	// OutcomePlaced (KAI): Bindings place pods of the group.
	OutcomePlaced Outcome = "placed"
	// OutcomeEvicted: the group's own pods (already running in the group given) are evicted.
	OutcomeEvicted Outcome = "evicted"
	// OutcomeUnchanged: no decision names the group (its pods already run, or its quota is
	// already reserved).
	OutcomeUnchanged Outcome = "unchanged"
)

// WhatIfAnswer is what one Schedule decides for a pod group added to a snapshot. Its fields are
// those of `arbiter what-if --format json` (docs/what-if.md).
type WhatIfAnswer struct {
	// PodGroup is the group's name.
	PodGroup string
	Outcome  Outcome
	// AfterEvictions: placed, some binding waits for the evictions; admitted, the admission
	// does; false otherwise.
	AfterEvictions bool
	// Bindings are the group's, in the response's order.
	Bindings []*arbiterv1.Binding
	// Evictions are those made for the group (PreemptorPodGroup is its name), in the response's
	// order: the other groups its submission takes from.
	Evictions []*arbiterv1.Eviction
	// Pending is the group's pending reason when Outcome is OutcomePending, nil otherwise.
	Pending *arbiterv1.PendingPodGroup
	// PodSets are the admission's flavors when Outcome is OutcomeAdmitted in a request with
	// Kueue resource flavors (each pod set's flavor per requested resource), nil otherwise.
	PodSets []*arbiterv1.PodSetFlavors
}

// WhatIf answers "if group were submitted now, what would happen?": it runs one Schedule on a
// copy of req with group appended to its pod groups, and returns what that cycle decides for
// group. Neither req nor group is modified; nothing is changed on the server, which keeps no
// state. A group whose name is already in the snapshot is an INVALID_ARGUMENT error made
// without a call; every other error is Schedule's (INVALID_ARGUMENT with a field path for a bad
// request, the added group being snapshot.pod_groups[len(req.Snapshot.PodGroups)]).
func (c *Client) WhatIf(ctx context.Context, req *arbiterv1.ScheduleRequest, group *arbiterv1.PodGroup) (*WhatIfAnswer, error) {
	if group == nil {
		return nil, status.Error(codes.InvalidArgument, "client: WhatIf: nil pod group")
	}
	for i, existing := range req.GetSnapshot().GetPodGroups() {
		if existing.GetName() == group.GetName() {
			return nil, status.Errorf(codes.InvalidArgument,
				"client: WhatIf: pod group %q is already in the snapshot (snapshot.pod_groups[%d])", group.GetName(), i)
		}
	}
	trial := &arbiterv1.ScheduleRequest{}
	if req != nil {
		trial = proto.Clone(req).(*arbiterv1.ScheduleRequest)
	}
	if trial.Snapshot == nil {
		trial.Snapshot = &arbiterv1.Snapshot{}
	}
	trial.Snapshot.PodGroups = append(trial.Snapshot.PodGroups, proto.Clone(group).(*arbiterv1.PodGroup))
	resp, err := c.Schedule(ctx, trial)
	if err != nil {
		return nil, fmt.Errorf("client: WhatIf %q: %w", group.GetName(), err)
	}
	return ReadWhatIfAnswer(group.GetName(), resp), nil
}

// ReadWhatIfAnswer is what resp, the answer to a request holding the pod group named name,
// decides for that group: the first outcome that holds of pending, admitted, placed, evicted
// and unchanged, with its bindings and the evictions made for it.
func ReadWhatIfAnswer(name string, resp *arbiterv1.ScheduleResponse) *WhatIfAnswer {
	answer := &WhatIfAnswer{PodGroup: name}
	for _, b := range resp.GetBindings() {
		if b.GetPodGroup() == name {
			answer.Bindings = append(answer.Bindings, b)
			answer.AfterEvictions = answer.AfterEvictions || b.GetAfterEvictions()
		}
	}
	ownPodsEvicted := false
	for _, e := range resp.GetEvictions() {
		if e.GetPreemptorPodGroup() == name {
			answer.Evictions = append(answer.Evictions, e)
		}
		ownPodsEvicted = ownPodsEvicted || e.GetPodGroup() == name
	}
	var admission *arbiterv1.Admission
	for _, a := range resp.GetAdmissions() {
		if a.GetPodGroup() == name {
			admission = a
		}
	}
	for _, p := range resp.GetPending() {
		if p.GetPodGroup() == name {
			answer.Pending = p
		}
	}
	switch {
	case answer.Pending != nil:
		answer.Outcome = OutcomePending
	case admission != nil:
		answer.Outcome = OutcomeAdmitted
		answer.AfterEvictions = admission.GetAfterEvictions()
		answer.PodSets = admission.GetPodSets()
	case len(answer.Bindings) > 0:
		answer.Outcome = OutcomePlaced
	case ownPodsEvicted:
		answer.Outcome = OutcomeEvicted
	default:
		answer.Outcome = OutcomeUnchanged
	}
	return answer
}
