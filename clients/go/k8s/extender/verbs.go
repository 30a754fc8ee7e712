package extender

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// maxBody bounds a request's body: a filter call with every node object of a large cluster
// (nodeCacheCapable: false) stays well below it.
const maxBody = 64 << 20

// Handler serves the verbs under /filter, /prioritize, /preempt and /bind.
func (e *Extender) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /filter", serve(e, "filter", e.Filter))
	mux.HandleFunc("POST /prioritize", serve(e, "prioritize", e.Prioritize))
	mux.HandleFunc("POST /preempt", serve(e, "preempt", e.Preempt))
	mux.HandleFunc("POST /bind", serve(e, "bind", e.Bind))
	return mux
}

// serve decodes a verb's arguments, calls it, and encodes its result; a malformed body is a 400.
func serve[A, R any](e *Extender, verb string, f func(context.Context, *A) *R) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		defer func() { e.metrics.Calls.WithLabelValues(verb).Observe(time.Since(start).Seconds()) }()
		args := new(A)
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err == nil {
			err = json.Unmarshal(body, args)
		}
		if err != nil {
			http.Error(w, fmt.Sprintf("%s: malformed arguments: %v", verb, err), http.StatusBadRequest)
			return
		}
		if !e.ready.Load() {
			// Fail safe: kube-scheduler places nothing of arbiter's until the caches are whole.
			http.Error(w, verb+": arbiter-extender is starting (informer caches not synced)", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(f(r.Context(), args))
	}
}

// nodeNames returns the candidate node names of a call, whether sent as names or as objects.
func nodeNames(args *extenderv1.ExtenderArgs) []string {
	if args.NodeNames != nil {
		return *args.NodeNames
	}
	var out []string
	if args.Nodes != nil {
		for _, n := range args.Nodes.Items {
			out = append(out, n.Name)
		}
	}
	return out
}

// Filter keeps the node arbiter placed the pod on, or refuses every node with arbiter's reason.
func (e *Extender) Filter(ctx context.Context, args *extenderv1.ExtenderArgs) *extenderv1.ExtenderFilterResult {
	names := nodeNames(args)
	res := &extenderv1.ExtenderFilterResult{FailedNodes: extenderv1.FailedNodesMap{}}
	keep := func(ok func(string) bool) {
		kept := []string{}
		var objs []corev1.Node
		for _, n := range names {
			if ok(n) {
				kept = append(kept, n)
			}
		}
		if args.Nodes != nil {
			for _, n := range args.Nodes.Items {
				if ok(n.Name) {
					objs = append(objs, n)
				}
			}
			res.Nodes = &corev1.NodeList{Items: objs}
		} else {
			res.NodeNames = &kept
		}
	}
	if args.Pod == nil {
		res.Error = "filter: no pod"
		return res
	}
	d, ours, err := e.decision(ctx, args.Pod)
	switch {
	case err != nil:
		res.Error = fmt.Sprintf("arbiter: %v", err)
		if errors.Is(err, errUnseen) {
			e.metrics.Filtered.WithLabelValues("unseen").Inc()
		}
	case !ours:
		keep(func(string) bool { return true })
	case d.node == "":
		keep(func(string) bool { return false })
		// Preemption by kube-scheduler would not be arbiter's: nothing it can do helps.
		res.FailedAndUnresolvableNodes = extenderv1.FailedNodesMap{}
		for _, n := range names {
			res.FailedAndUnresolvableNodes[n] = d.reason
		}
		e.metrics.Filtered.WithLabelValues("pending").Inc()
	default:
		keep(func(n string) bool { return n == d.node })
		why := fmt.Sprintf("arbiter places this pod on node %s", d.node)
		if d.after {
			why = fmt.Sprintf("arbiter places this pod on node %s once %d pod(s) leave it", d.node, len(d.victims))
		}
		for _, n := range names {
			if n != d.node {
				res.FailedNodes[n] = why
			}
		}
		e.metrics.Filtered.WithLabelValues("placed").Inc()
	}
	return res
}

// Prioritize scores arbiter's node highest and every other node lowest.
func (e *Extender) Prioritize(ctx context.Context, args *extenderv1.ExtenderArgs) *extenderv1.HostPriorityList {
	out := extenderv1.HostPriorityList{}
	if args.Pod == nil {
		return &out
	}
	d, ours, err := e.decision(ctx, args.Pod)
	for _, n := range nodeNames(args) {
		score := extenderv1.MinExtenderPriority
		if err == nil && ours && n == d.node {
			score = extenderv1.MaxExtenderPriority
		}
		out = append(out, extenderv1.HostPriority{Host: n, Score: score})
	}
	return &out
}

// Preempt answers kube-scheduler's preemption with arbiter's victims on arbiter's node, and no
// other node; nothing when arbiter evicts nothing for this pod, or when a disruption budget
// forbids arbiter's victims.
func (e *Extender) Preempt(ctx context.Context, args *extenderv1.ExtenderPreemptionArgs) *extenderv1.ExtenderPreemptionResult {
	res := &extenderv1.ExtenderPreemptionResult{NodeNameToMetaVictims: map[string]*extenderv1.MetaVictims{}}
	if args.Pod == nil {
		return res
	}
	d, ours, err := e.decision(ctx, args.Pod)
	if err != nil || !ours {
		// Not arbiter's pod: kube-scheduler's own choice stands.
		if err == nil {
			res.NodeNameToMetaVictims = args.NodeNameToMetaVictims
			if res.NodeNameToMetaVictims == nil {
				res.NodeNameToMetaVictims = metaVictims(args.NodeNameToVictims)
			}
		}
		return res
	}
	if !d.after || len(d.victims) == 0 {
		return res
	}
	if why, err := e.ruleOutPDBs(d.victims); err != nil || why != "" {
		e.log.Info("preemption refused", "pod", args.Pod.Namespace+"/"+args.Pod.Name, "why", why, "err", err)
		e.metrics.Preemptions.WithLabelValues("budget").Inc()
		return res
	}
	v := &extenderv1.MetaVictims{}
	for _, p := range d.victims {
		v.Pods = append(v.Pods, &extenderv1.MetaPod{UID: string(p.UID)})
	}
	res.NodeNameToMetaVictims[d.node] = v
	e.metrics.Preemptions.WithLabelValues("victims").Inc()
	return res
}

func metaVictims(in map[string]*extenderv1.Victims) map[string]*extenderv1.MetaVictims {
	out := map[string]*extenderv1.MetaVictims{}
	for node, v := range in {
		mv := &extenderv1.MetaVictims{NumPDBViolations: v.NumPDBViolations}
		for _, p := range v.Pods {
			mv.Pods = append(mv.Pods, &extenderv1.MetaPod{UID: string(p.UID)})
		}
		out[node] = mv
	}
	return out
}

// Bind binds the pod, holding a gang's members until every member arbiter placed has asked.
func (e *Extender) Bind(ctx context.Context, args *extenderv1.ExtenderBindingArgs) *extenderv1.ExtenderBindingResult {
	if err := e.gangs.bind(ctx, args); err != nil {
		return &extenderv1.ExtenderBindingResult{Error: err.Error()}
	}
	return &extenderv1.ExtenderBindingResult{}
}

func metav1LabelSelector(pdb *policyv1.PodDisruptionBudget) (labels.Selector, error) {
	return metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
}

// podUID names a binding's pod in the gang binder.
type podUID = types.UID
