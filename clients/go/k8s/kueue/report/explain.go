// Package report holds the reports of arbiter-kueue, computed from package kueue's model and one
// call to arbiter, changing nothing: Explain (what arbiter's Kueue model would admit or preempt
// now, and every queue's share beside Kueue's) and WhatIf (what a manifest would get if it were
// submitted now).
package report

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
	kueuemodel "arbiter.dev/clients/go/k8s/kueue"
)

// Verdicts of a pending workload.
const (
	// VerdictAdmit: its quota would be reserved without preempting anything.
	VerdictAdmit = "admit"
	// VerdictPreempt: its quota would be reserved once the workloads in Preempts are evicted.
	VerdictPreempt = "preempt"
	// VerdictPending: it would stay pending; Reason says why.
	VerdictPending = "pending"
)

// Preemption is one workload evicted for another, with Kueue's name for the rule.
type Preemption struct {
	Workload     string `json:"workload"`
	ClusterQueue string `json:"clusterQueue"`
	// Rule is Kueue's preemption reason: InClusterQueue, InCohortReclamation or InCohortFairSharing.
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

// WorkloadVerdict is arbiter's answer for one pending workload.
type WorkloadVerdict struct {
	Workload     string       `json:"workload"`
	ClusterQueue string       `json:"clusterQueue"`
	Verdict      string       `json:"verdict"`
	Reason       string       `json:"reason,omitempty"` // arbiter's stable code when pending
	Message      string       `json:"message,omitempty"`
	Preempts     []Preemption `json:"preempts,omitempty"`
}

// ShareComparison is one ClusterQueue's or Cohort's weighted share: arbiter's beside Kueue's.
type ShareComparison struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	// WeightedShare is arbiter's share as Kueue publishes it: ceil of the exact share, the
	// largest int64 for an infinite one.
	WeightedShare int64 `json:"weightedShare"`
	// Exact is arbiter's unrounded share (absent when infinite).
	Exact            *float64 `json:"exactWeightedShare,omitempty"`
	DominantResource string   `json:"dominantResource,omitempty"`
	Borrowing        bool     `json:"borrowing"`
	// Kueue is status.fairSharing.weightedShare; absent when Kueue publishes none (an implicit
	// cohort, or fair sharing off).
	Kueue *int64 `json:"kueueWeightedShare,omitempty"`
	// Differs: Kueue publishes a share and it is not arbiter's.
	Differs bool `json:"differs"`
}

// Report is the answer of explain.
type Report struct {
	Workloads []WorkloadVerdict    `json:"workloads"`
	Queues    []ShareComparison    `json:"queues"`
	Skipped   []kueuemodel.Skipped `json:"skipped"`
}

// ExplainOptions narrow a report to some workloads.
type ExplainOptions struct {
	Namespace string // "" = every namespace
	Workload  string // "" = every pending workload of Namespace
}

// Explain asks arbiter what it would do with s: one Schedule for the verdicts (the state Kueue
// would reach over successive cycles with no new arrivals) and one ComputeFairShares for the
// shares on the current tree.
func Explain(ctx context.Context, arb kueuemodel.Arbiter, s *kueuemodel.State, model *kueuemodel.Model, opts ExplainOptions) (*Report, error) {
	resp, err := arb.Schedule(ctx, model.Request)
	if err != nil {
		return nil, fmt.Errorf("schedule: %w", err)
	}
	shares, err := arb.ComputeFairShares(ctx, &arbiterv1.FairShareRequest{Snapshot: model.Request.Snapshot, Policy: model.Request.Policy})
	if err != nil {
		return nil, fmt.Errorf("compute fair shares: %w", err)
	}
	r := &Report{Workloads: verdicts(model, resp, opts), Queues: compareShares(s, model, shares), Skipped: []kueuemodel.Skipped{}}
	for _, sk := range model.Skipped {
		if selected(sk.Workload, opts) {
			r.Skipped = append(r.Skipped, sk)
		}
	}
	return r, nil
}

func selected(key string, opts ExplainOptions) bool {
	ns, name, _ := strings.Cut(key, "/")
	return (opts.Namespace == "" || ns == opts.Namespace) && (opts.Workload == "" || name == opts.Workload)
}

// verdicts reads resp for every pending workload of the model, in ClusterQueue then queue order.
func verdicts(model *kueuemodel.Model, resp *arbiterv1.ScheduleResponse, opts ExplainOptions) []WorkloadVerdict {
	admitted := map[string]*arbiterv1.Admission{}
	for _, a := range resp.GetAdmissions() {
		admitted[a.GetPodGroup()] = a
	}
	pending := map[string]*arbiterv1.PendingPodGroup{}
	for _, p := range resp.GetPending() {
		pending[p.GetPodGroup()] = p
	}
	preempts := preemptions(model, resp)
	var keys []string
	for key, w := range model.Workloads {
		if !w.Reserved && selected(key, opts) {
			keys = append(keys, key)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := model.Workloads[keys[i]], model.Workloads[keys[j]]
		if a.ClusterQueue != b.ClusterQueue {
			return a.ClusterQueue < b.ClusterQueue
		}
		return kueuemodel.QueueOrderLess(a.Obj, b.Obj)
	})
	out := make([]WorkloadVerdict, 0, len(keys))
	for _, key := range keys {
		v := WorkloadVerdict{Workload: key, ClusterQueue: model.Workloads[key].ClusterQueue, Preempts: preempts[key]}
		switch {
		case pending[key] != nil:
			v.Verdict, v.Reason, v.Message = VerdictPending, pending[key].GetReason(), pending[key].GetMessage()
		case admitted[key] != nil && (admitted[key].GetAfterEvictions() || len(v.Preempts) > 0):
			v.Verdict = VerdictPreempt
		case admitted[key] != nil:
			v.Verdict = VerdictAdmit
		default:
			// Every pending group is admitted or pending at the end of a call (SEMANTICS §5.4).
			v.Verdict, v.Reason = VerdictPending, "unknown"
		}
		out = append(out, v)
	}
	return out
}

// preemptions are the workloads resp evicts, by preemptor, one entry per workload.
func preemptions(model *kueuemodel.Model, resp *arbiterv1.ScheduleResponse) map[string][]Preemption {
	preempts := map[string][]Preemption{}
	seen := map[[2]string]bool{}
	for _, e := range resp.GetEvictions() {
		pair := [2]string{e.GetPreemptorPodGroup(), e.GetPodGroup()}
		if seen[pair] { // one entry per pod; a workload goes whole
			continue
		}
		seen[pair] = true
		victim := model.Workloads[e.GetPodGroup()]
		preempts[pair[0]] = append(preempts[pair[0]], Preemption{
			Workload: e.GetPodGroup(), ClusterQueue: victim.ClusterQueue, Rule: Rule(e.GetReason()), Message: e.GetMessage(),
		})
	}
	return preempts
}

// Rule is Kueue's name of the preemption reason of an eviction.
func Rule(r arbiterv1.EvictionReason) string {
	switch r {
	case arbiterv1.EvictionReason_KUEUE_IN_CLUSTER_QUEUE:
		return "InClusterQueue"
	case arbiterv1.EvictionReason_KUEUE_IN_COHORT_RECLAMATION:
		return "InCohortReclamation"
	case arbiterv1.EvictionReason_KUEUE_IN_COHORT_FAIR_SHARING:
		return "InCohortFairSharing"
	}
	return r.String()
}

// PublishedShare is a weighted share as Kueue's status shows it: the ceiling, and the largest
// int64 for +∞.
func PublishedShare(share float64) int64 {
	if math.IsInf(share, 1) || share >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(math.Ceil(share))
}

func compareShares(s *kueuemodel.State, model *kueuemodel.Model, shares *arbiterv1.FairShareResponse) []ShareComparison {
	published := map[string]*int64{}
	for i := range s.ClusterQueues {
		if fs := s.ClusterQueues[i].Status.FairSharing; fs != nil {
			published[s.ClusterQueues[i].Name] = &fs.WeightedShare
		}
	}
	for i := range s.Cohorts {
		if fs := s.Cohorts[i].Status.FairSharing; fs != nil {
			published[s.Cohorts[i].Name] = &fs.WeightedShare
		}
	}
	out := make([]ShareComparison, 0, len(shares.GetQueues()))
	for _, q := range shares.GetQueues() {
		c := ShareComparison{
			Kind: model.Kind[q.GetQueue()], Name: q.GetQueue(),
			WeightedShare: PublishedShare(q.GetWeightedShare()), DominantResource: q.GetDominantResource(),
			Borrowing: q.GetBorrowing(), Kueue: published[q.GetQueue()],
		}
		if exact := q.GetWeightedShare(); !math.IsInf(exact, 0) {
			c.Exact = &exact
		}
		c.Differs = c.Kueue != nil && *c.Kueue != c.WeightedShare
		out = append(out, c)
	}
	return out
}

// WriteJSON writes r as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes r as two tables: the pending workloads, then the shares.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tCLUSTERQUEUE\tVERDICT\tREASON\tDETAIL")
	if len(r.Workloads) == 0 {
		fmt.Fprintln(tw, "(no pending workload)\t\t\t\t")
	}
	for _, v := range r.Workloads {
		detail := v.Message
		if len(v.Preempts) > 0 {
			detail = preemptsText(v.Preempts)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", v.Workload, v.ClusterQueue, v.Verdict, dash(v.Reason), detail)
	}
	for _, sk := range r.Skipped {
		fmt.Fprintf(tw, "%s\t-\tskipped\t%s\t%s\n", sk.Workload, sk.Reason, sk.Message)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tKIND\tWEIGHTED SHARE (exact)\tKUEUE STATUS\tBORROWING")
	for _, q := range r.Queues {
		kueueShare := "-"
		if q.Kueue != nil {
			kueueShare = fmt.Sprint(*q.Kueue)
			if q.Differs {
				kueueShare += "  DIFFERS"
			}
		}
		exact := "+Inf"
		if q.Exact != nil {
			exact = fmt.Sprintf("%.6g", *q.Exact)
		}
		borrowing := "no"
		if q.Borrowing {
			borrowing = "yes"
		}
		if q.DominantResource != "" {
			borrowing += " (" + q.DominantResource + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d (%s)\t%s\t%s\n", q.Name, q.Kind, q.WeightedShare, exact, kueueShare, borrowing)
	}
	return tw.Flush()
}

func preemptsText(ps []Preemption) string {
	parts := make([]string, 0, len(ps))
	for _, p := range ps {
		parts = append(parts, fmt.Sprintf("%s (%s, %s)", p.Workload, p.ClusterQueue, p.Rule))
	}
	return "preempts " + strings.Join(parts, "; ")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
