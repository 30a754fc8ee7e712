package main

import (
	"fmt"
	"math/rand/v2"

	"arbiter.dev/tests/differential/internal/arbiterjson"
)

// request writes the tree as an arbiter FairShareRequest under the KAI model. Queues and pod
// groups go in a shuffled order: arbiter's answer must not depend on it (SEMANTICS §0.5).
func (t *tree) request() *arbiterjson.FairShareRequest {
	rng := rand.New(rand.NewPCG(uint64(t.seed), 0x6f72646572))
	var s arbiterjson.Snapshot
	if !t.nodeCapacity {
		s.Capacity = all(t.capacity)
	}
	for _, i := range rng.Perm(len(t.queues)) {
		q := &t.queues[i]
		out := arbiterjson.Queue{
			Name:         q.name,
			Priority:     int32(q.priority),
			CreationTime: arbiterjson.Timestamp(q.created),
		}
		if q.parent >= 0 {
			out.Parent = t.queues[q.parent].name
		}
		out.Deserved = written(q.deserved, q.writeDeserved)
		out.Limit = written(q.limit, q.writeLimit)
		out.OverQuotaWeight = written(q.weight, q.writeWeight)
		s.Queues = append(s.Queues, out)
		if q.hasUsage {
			s.Usage = append(s.Usage, arbiterjson.QueueUsage{Queue: q.name, Usage: all(q.usage)})
		}
	}
	node := "node-0"
	usesNode := false
	for _, gi := range rng.Perm(len(t.groups)) {
		g := &t.groups[gi]
		out := arbiterjson.PodGroup{Name: g.name, Queue: t.queues[g.leaf].name}
		for pi, p := range g.pods {
			pod := arbiterjson.Pod{Name: fmt.Sprintf("p%d", pi), Requests: all(p.requests)}
			switch p.phase {
			case "RUNNING":
				pod.NodeName, usesNode = node, true
			case "RELEASING":
				pod.NodeName, pod.Phase, usesNode = node, "POD_PHASE_RELEASING", true
			}
			out.Pods = append(out.Pods, pod)
		}
		s.PodGroups = append(s.PodGroups, out)
	}
	switch {
	case t.nodeCapacity:
		var rest quota
		for r := range numResources {
			rest[r] = t.capacity[r] - t.nodeSplit[r]
		}
		s.Nodes = []arbiterjson.Node{
			{Name: node, Allocatable: all(t.nodeSplit)},
			{Name: "node-1", Allocatable: all(rest)},
			{Name: "node-cordoned", Allocatable: all(t.capacity), Unschedulable: true},
		}
	case usesNode:
		s.Nodes = []arbiterjson.Node{{Name: node, Allocatable: all(t.capacity)}}
	}
	for r := range numResources {
		if t.usageCapacity[r] > 0 {
			if s.UsageCapacity == nil {
				s.UsageCapacity = map[string]float64{}
			}
			s.UsageCapacity[resourceNames[r]] = t.usageCapacity[r]
		}
	}
	return &arbiterjson.FairShareRequest{
		Snapshot: s,
		Policy:   arbiterjson.Policy{FairnessModel: "FAIRNESS_MODEL_KAI", KValue: t.k},
	}
}

func all(v quota) map[string]float64 {
	m := make(map[string]float64, numResources)
	for r := range numResources {
		m[resourceNames[r]] = v[r]
	}
	return m
}

func written(v quota, write [numResources]bool) map[string]float64 {
	var m map[string]float64
	for r := range numResources {
		if write[r] {
			if m == nil {
				m = map[string]float64{}
			}
			m[resourceNames[r]] = v[r]
		}
	}
	return m
}
