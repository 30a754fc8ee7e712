package extender

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// gangBinder holds the bind calls of a gang's members until every member arbiter placed has
// asked, then binds them all together: kube-scheduler binds pod by pod, and without the hold a
// gang could start in part.
type gangBinder struct {
	e       *Extender
	mu      sync.Mutex
	waiting map[string]*gang // by pod group
}

type gang struct {
	members map[podUID]*extenderv1.ExtenderBindingArgs
	done    chan struct{}
	err     error
}

func newGangBinder(e *Extender) *gangBinder {
	return &gangBinder{e: e, waiting: map[string]*gang{}}
}

func (g *gangBinder) bind(ctx context.Context, args *extenderv1.ExtenderBindingArgs) error {
	pod, err := g.e.pods.Pods(args.PodNamespace).Get(args.PodName)
	if err != nil || pod.UID != args.PodUID {
		// Not in the cache yet (or replaced): bind it as asked; the API server checks the UID.
		return g.e.bindOne(ctx, args)
	}
	d, ours, err := g.e.decision(ctx, pod)
	size := g.e.placedInGroup(d.group)
	if err != nil || !ours || size <= 1 {
		return g.e.bindOne(ctx, args)
	}

	g.mu.Lock()
	w := g.waiting[d.group]
	if w == nil {
		w = &gang{members: map[podUID]*extenderv1.ExtenderBindingArgs{}, done: make(chan struct{})}
		g.waiting[d.group] = w
	}
	w.members[args.PodUID] = args
	if len(w.members) >= size {
		delete(g.waiting, d.group)
		g.mu.Unlock()
		w.err = g.e.bindAll(context.WithoutCancel(ctx), w.members)
		g.e.metrics.GangsBound.Inc()
		close(w.done)
		return w.err
	}
	held := len(w.members)
	g.mu.Unlock()

	timer := time.NewTimer(g.e.cfg.GangWait)
	defer timer.Stop()
	select {
	case <-w.done:
		return w.err
	case <-timer.C:
	case <-ctx.Done():
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-w.done: // bound meanwhile
		return w.err
	default:
	}
	delete(w.members, args.PodUID)
	g.e.metrics.GangsTimedOut.Inc()
	return fmt.Errorf("arbiter: gang %s: %d of %d members were ready to bind within %s; binding none",
		d.group, held, size, g.e.cfg.GangWait)
}

// placedInGroup is how many pods of group the current answer binds.
func (e *Extender) placedInGroup(group string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.answer == nil {
		return 0
	}
	return e.answer.groupSize[group]
}

func (e *Extender) bindOne(ctx context.Context, args *extenderv1.ExtenderBindingArgs) error {
	err := e.kube.CoreV1().Pods(args.PodNamespace).Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: args.PodNamespace, Name: args.PodName, UID: args.PodUID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: args.Node},
	}, metav1.CreateOptions{})
	if err != nil {
		e.metrics.BindErrors.Inc()
		return fmt.Errorf("bind %s/%s to %s: %w", args.PodNamespace, args.PodName, args.Node, err)
	}
	e.metrics.Binds.Inc()
	return nil
}

// bindAll binds every member at once and returns the first failure.
func (e *Extender) bindAll(ctx context.Context, members map[podUID]*extenderv1.ExtenderBindingArgs) error {
	uids := make([]podUID, 0, len(members))
	for uid := range members {
		uids = append(uids, uid)
	}
	sort.Slice(uids, func(i, j int) bool { return uids[i] < uids[j] })
	errs := make([]error, len(uids))
	var wg sync.WaitGroup
	for i, uid := range uids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = e.bindOne(ctx, members[uid])
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
