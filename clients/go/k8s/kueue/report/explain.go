// Package report holds the reports of arbiter-kueue, computed from package kueue's model and
// calls to arbiter, changing nothing: Explain (what arbiter's Kueue model would admit or preempt
// now and in which flavors, Kueue's flavors of reserved workloads beside arbiter's, and every
// queue's share beside Kueue's) and WhatIf (what a manifest would get if it were submitted now).
package report

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"google.golang.org/protobuf/proto"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

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

// PodSetFlavors are the flavors of one pod set: resource → flavor.
type PodSetFlavors struct {
	PodSet  string            `json:"podSet"`
	Flavors map[string]string `json:"flavors"`
}

// WorkloadVerdict is arbiter's answer for one pending workload.
type WorkloadVerdict struct {
	Workload     string       `json:"workload"`
	ClusterQueue string       `json:"clusterQueue"`
	Verdict      string       `json:"verdict"`
	Reason       string       `json:"reason,omitempty"` // arbiter's stable code when pending
	Message      string       `json:"message,omitempty"`
	Preempts     []Preemption `json:"preempts,omitempty"`
	// Flavors are the flavors arbiter assigns to each pod set when it admits the workload
	// (Admission.pod_sets), in pod set order.
	Flavors []PodSetFlavors `json:"flavors,omitempty"`
}

// FlavorCheck sets a workload whose quota Kueue reserved beside arbiter's own choice of flavors
// for it: the flavors arbiter assigns the workload now, with every other reserved workload as it
// is and nothing else waiting (what Kueue weighed when it chose).
type FlavorCheck struct {
	Workload     string `json:"workload"`
	ClusterQueue string `json:"clusterQueue"`
	// Kueue is the admission's podSetAssignments[].flavors.
	Kueue []PodSetFlavors `json:"kueueFlavors"`
	// Arbiter is arbiter's assignment; empty when arbiter would leave it pending (Reason).
	Arbiter []PodSetFlavors `json:"arbiterFlavors,omitempty"`
	Reason  string          `json:"reason,omitempty"`
	// Differs: some pod set's resource has another flavor in arbiter's assignment, or arbiter
	// would not admit the workload.
	Differs bool `json:"differs"`
}

// FlavorUsage is one (flavor, resource) of a queue (QueueShare.flavor_resources).
type FlavorUsage struct {
	Flavor       string  `json:"flavor"`
	Resource     string  `json:"resource"`
	Nominal      float64 `json:"nominal"`
	SubtreeQuota float64 `json:"subtreeQuota"`
	Usage        float64 `json:"usage"`
	Borrowed     float64 `json:"borrowed"`
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
	// Flavors are the queue's quota and usage per flavor and resource, in (flavor, resource)
	// order.
	Flavors []FlavorUsage `json:"flavors,omitempty"`
}

// Report is the answer of explain.
type Report struct {
	Workloads []WorkloadVerdict `json:"workloads"`
	// Reserved are the workloads whose quota Kueue reserved in a ClusterQueue that offers a
	// choice of flavors for what they use, with Kueue's flavors beside arbiter's.
	Reserved []FlavorCheck        `json:"reserved,omitempty"`
	Queues   []ShareComparison    `json:"queues"`
	Skipped  []kueuemodel.Skipped `json:"skipped"`
}

// ExplainOptions narrow a report to some workloads.
type ExplainOptions struct {
	Namespace string // "" = every namespace
	Workload  string // "" = every pending workload of Namespace
	// SkipFlavorCheck leaves out Report.Reserved and the Schedule calls it takes.
	SkipFlavorCheck bool
}

// Explain asks arbiter what it would do with s: one Schedule for the verdicts and their flavors
// (the state Kueue would reach over successive cycles with no new arrivals), one ComputeFairShares
// for the shares on the current tree, and one Schedule per reserved workload with a choice of
// flavors (checkFlavors).
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
	if !opts.SkipFlavorCheck {
		if r.Reserved, err = checkFlavors(ctx, arb, model, opts); err != nil {
			return nil, err
		}
	}
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
		v := WorkloadVerdict{Workload: key, ClusterQueue: model.Workloads[key].ClusterQueue, Preempts: preempts[key], Flavors: podSetFlavors(admitted[key].GetPodSets())}
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
		for _, f := range q.GetFlavorResources() {
			c.Flavors = append(c.Flavors, FlavorUsage{Flavor: f.GetFlavor(), Resource: f.GetResource(), Nominal: f.GetNominal(),
				SubtreeQuota: f.GetSubtreeQuota(), Usage: f.GetUsage(), Borrowed: f.GetBorrowed()})
		}
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
	fmt.Fprintln(tw, "WORKLOAD\tCLUSTERQUEUE\tVERDICT\tFLAVORS\tREASON\tDETAIL")
	if len(r.Workloads) == 0 {
		fmt.Fprintln(tw, "(no pending workload)\t\t\t\t\t")
	}
	for _, v := range r.Workloads {
		detail := v.Message
		if len(v.Preempts) > 0 {
			detail = preemptsText(v.Preempts)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", v.Workload, v.ClusterQueue, v.Verdict, FlavorsText(v.Flavors), dash(v.Reason), detail)
	}
	for _, sk := range r.Skipped {
		fmt.Fprintf(tw, "%s\t-\tskipped\t-\t%s\t%s\n", sk.Workload, sk.Reason, sk.Message)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Reserved) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "RESERVED\tCLUSTERQUEUE\tKUEUE FLAVORS\tARBITER FLAVORS\t")
		for _, c := range r.Reserved {
			ours := FlavorsText(c.Arbiter)
			if c.Arbiter == nil {
				ours = "pending (" + dash(c.Reason) + ")"
			}
			differs := ""
			if c.Differs {
				differs = "DIFFERS"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Workload, c.ClusterQueue, FlavorsText(c.Kueue), ours, differs)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tKIND\tWEIGHTED SHARE (exact)\tKUEUE STATUS\tBORROWING\tUSAGE BY FLAVOR (used/quota)")
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
		fmt.Fprintf(tw, "%s\t%s\t%d (%s)\t%s\t%s\t%s\n", q.Name, q.Kind, q.WeightedShare, exact, kueueShare, borrowing, flavorUsageText(q.Flavors))
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

// podSetFlavors reads an admission's flavors.
func podSetFlavors(sets []*arbiterv1.PodSetFlavors) []PodSetFlavors {
	var out []PodSetFlavors
	for _, ps := range sets {
		out = append(out, PodSetFlavors{PodSet: ps.GetPodSet(), Flavors: ps.GetFlavors()})
	}
	return out
}

// kueueFlavors are the flavors of a reserved workload's admission, in pod set order.
func kueueFlavors(w *kueuemodel.Workload) []PodSetFlavors {
	out := []PodSetFlavors{}
	for _, ps := range slices.Sorted(maps.Keys(w.Flavors)) {
		if len(w.Flavors[ps]) > 0 {
			out = append(out, PodSetFlavors{PodSet: ps, Flavors: w.Flavors[ps]})
		}
	}
	return out
}

// checkFlavors sets the flavors Kueue gave every selected reserved workload of a ClusterQueue
// with a choice of flavors for what it uses beside those arbiter assigns it: one Schedule per
// workload, on the reserved workloads but it, with it pending and nothing else waiting.
// Workloads that are giving their quota back (evicted) are left out.
func checkFlavors(ctx context.Context, arb kueuemodel.Arbiter, model *kueuemodel.Model, opts ExplainOptions) ([]FlavorCheck, error) {
	var out []FlavorCheck
	for _, key := range slices.Sorted(maps.Keys(model.Workloads)) {
		w := model.Workloads[key]
		if !w.Reserved || !selected(key, opts) || apimeta.IsStatusConditionTrue(w.Obj.Status.Conditions, kueue.WorkloadEvicted) {
			continue
		}
		choices, choice := model.Choices(w.ClusterQueue), false
		for _, flavors := range w.Flavors {
			for r := range flavors {
				choice = choice || choices[r]
			}
		}
		if !choice {
			continue
		}
		trial := proto.Clone(model.Request).(*arbiterv1.ScheduleRequest)
		groups := []*arbiterv1.PodGroup{}
		for _, g := range trial.Snapshot.PodGroups {
			if g.GetAdmitted() && g.GetName() != key {
				groups = append(groups, g)
			}
		}
		trial.Snapshot.PodGroups = append(groups, model.AsPending(key))
		resp, err := arb.Schedule(ctx, trial)
		if err != nil {
			return nil, fmt.Errorf("schedule %s anew: %w", key, err)
		}
		c := FlavorCheck{Workload: key, ClusterQueue: w.ClusterQueue, Kueue: kueueFlavors(w)}
		for _, a := range resp.GetAdmissions() {
			if a.GetPodGroup() == key {
				c.Arbiter = podSetFlavors(a.GetPodSets())
			}
		}
		for _, p := range resp.GetPending() {
			if p.GetPodGroup() == key {
				c.Reason = p.GetReason()
			}
		}
		c.Differs = c.Arbiter == nil || !sameFlavors(c.Kueue, c.Arbiter)
		out = append(out, c)
	}
	return out, nil
}

// sameFlavors: every resource both assignments name has one flavor in both.
func sameFlavors(a, b []PodSetFlavors) bool {
	byPodSet := map[string]map[string]string{}
	for _, ps := range b {
		byPodSet[ps.PodSet] = ps.Flavors
	}
	for _, ps := range a {
		for r, f := range ps.Flavors {
			if g, ok := byPodSet[ps.PodSet][r]; ok && g != f {
				return false
			}
		}
	}
	return true
}

// FlavorsText is "main: spot" for a pod set whose resources share one flavor, "main: cpu=spot,
// memory=on-demand" otherwise, pod sets joined by "; "; "-" for none.
func FlavorsText(sets []PodSetFlavors) string {
	parts := make([]string, 0, len(sets))
	for _, ps := range sets {
		distinct := map[string]bool{}
		for _, f := range ps.Flavors {
			distinct[f] = true
		}
		if len(distinct) == 1 {
			parts = append(parts, ps.PodSet+": "+slices.Collect(maps.Keys(distinct))[0])
			continue
		}
		var each []string
		for _, r := range slices.Sorted(maps.Keys(ps.Flavors)) {
			each = append(each, r+"="+ps.Flavors[r])
		}
		parts = append(parts, ps.PodSet+": "+strings.Join(each, ","))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}

// flavorUsageText is "on-demand cpu 4000/4000, spot cpu 2000/8000": usage over subtree quota per
// (flavor, resource); "-" for none.
func flavorUsageText(fs []FlavorUsage) string {
	parts := make([]string, 0, len(fs))
	for _, f := range fs {
		parts = append(parts, fmt.Sprintf("%s %s %s/%s", f.Flavor, f.Resource,
			strconv.FormatFloat(f.Usage, 'f', -1, 64), strconv.FormatFloat(f.SubtreeQuota, 'f', -1, 64)))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}
