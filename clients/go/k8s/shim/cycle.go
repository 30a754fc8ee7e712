package shim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
	"arbiter.dev/clients/go/internal/replay"
	"arbiter.dev/clients/go/k8s/translate"
	"arbiter.dev/clients/go/k8s/usage"
)

// RunCycle runs one scheduling cycle: snapshot, Schedule, apply. Pods that cannot be sent get
// their reason written even when the Schedule call fails.
func (s *Shim) RunCycle(ctx context.Context) error {
	start := time.Now()
	defer func() { s.deps.Metrics.CycleDuration.Observe(time.Since(start).Seconds()) }()
	now := s.deps.Clock.Now()
	res, resp, err := s.decide(ctx, now, true)
	if err != nil {
		return err
	}
	s.apply(ctx, res, resp, now)
	s.waiting.Store(len(resp.GetPending()) > 0 || len(s.state.nominations) > 0)
	return nil
}

// Decide builds a snapshot from the caches and asks arbiter, without applying anything: the
// answer of one cycle, for a caller that applies it in its own way (arbiter-extender). Like a
// cycle it advances the usage ledger. It must not run concurrently with itself or RunCycle.
func (s *Shim) Decide(ctx context.Context) (*translate.Result, *arbiterv1.ScheduleResponse, error) {
	return s.decide(ctx, s.deps.Clock.Now(), false)
}

// Owns reports whether a cycle would schedule pod: it is of the shim's scheduler and has a queue,
// its own or the default one. It reads only pod, so it answers for a pod the informers have
// not seen yet.
func (s *Shim) Owns(pod *corev1.Pod) bool {
	return pod.Spec.SchedulerName == s.cfg.SchedulerName && translate.QueueOf(pod, s.cfg.DefaultQueue) != ""
}

// Has reports whether the shim's pod cache has pod (the same object, by UID), so that the next
// cycle's snapshot covers it.
func (s *Shim) Has(pod *corev1.Pod) bool {
	cached, err := s.pods.Pods(pod.Namespace).Get(pod.Name)
	return err == nil && cached.UID == pod.UID
}

// decide is a cycle up to the answer; writeReasons writes the reasons of pods left out.
func (s *Shim) decide(ctx context.Context, now time.Time, writeReasons bool) (*translate.Result, *arbiterv1.ScheduleResponse, error) {
	allPods, err := s.pods.List(labels.Everything())
	if err != nil {
		s.deps.Metrics.Errors.WithLabelValues("snapshot").Inc()
		return nil, nil, fmt.Errorf("list pods: %w", err)
	}
	byUID := make(map[types.UID]*corev1.Pod, len(allPods))
	for _, p := range allPods {
		byUID[p.UID] = p
	}
	s.state.reconcile(byUID, now)
	if writeReasons { // the nominations are the shim's own, read back from the pods it wrote
		s.state.adopt(allPods, s.cfg.SchedulerName)
	}

	queueCfg, err := s.queueConfig()
	if err != nil {
		s.deps.Metrics.Errors.WithLabelValues("queues").Inc()
		if writeReasons {
			s.writeWaiting(ctx, allPods, ReasonQueueConfigInvalid, err.Error()+"; no pod is scheduled until it is fixed")
		}
		return nil, nil, err
	}
	nodes, err := s.nodes.List(labels.Everything())
	if err != nil {
		s.deps.Metrics.Errors.WithLabelValues("snapshot").Inc()
		return nil, nil, fmt.Errorf("list nodes: %w", err)
	}
	ignored := map[string]bool{}
	for _, r := range s.cfg.IgnoredResources {
		ignored[r] = true
	}
	assumed := s.state.assumed(nodes, byUID)
	res := translate.Build(translate.Input{
		Now:              now,
		SchedulerName:    s.cfg.SchedulerName,
		DefaultQueue:     s.cfg.DefaultQueue,
		Queues:           queueCfg.Queues,
		Nodes:            nodes,
		Pods:             allPods,
		IgnoredResources: ignored,
		Assumed:          assumed,
		Evicting:         s.state.evicted,
		AssumedGroups:    s.state.assumedGroups(assumed),

		ReservationNamespace: s.cfg.ReservationNamespace,
	})
	if writeReasons {
		s.writeExcluded(ctx, res.Excluded)
	}

	if err := s.advanceUsage(ctx, now, res); err != nil {
		s.deps.Metrics.Errors.WithLabelValues("usage").Inc()
		return nil, nil, err
	}
	policy := queueCfg.Policy
	if policy == nil {
		policy = &arbiterv1.Policy{}
	}
	req := &arbiterv1.ScheduleRequest{Snapshot: res.Snapshot, Policy: policy}
	if s.cfg.DumpDir != "" {
		if _, err := replay.Write(s.cfg.DumpDir, "schedule", now, req); err != nil {
			s.log.Error("dump snapshot", "err", err) // diagnostics only: schedule anyway
		}
	}
	callCtx, cancel := context.WithTimeout(ctx, s.cfg.ScheduleTimeout)
	resp, err := s.deps.Scheduler.Schedule(callCtx, req)
	cancel()
	if err != nil {
		s.deps.Metrics.Errors.WithLabelValues("schedule").Inc()
		if writeReasons && ctx.Err() == nil {
			reason, msg := scheduleFailure(err)
			s.writeWaiting(ctx, allPods, reason, msg)
		}
		return nil, nil, fmt.Errorf("schedule: %w", err)
	}
	return res, resp, nil
}

// Reasons written to the waiting pods when a cycle stops before arbiter's answer.
const (
	// ReasonArbiterUnavailable: the Schedule call failed (arbiter-server unreachable, or no
	// answer in time).
	ReasonArbiterUnavailable = "arbiter-unavailable"
	// ReasonQueueConfigInvalid: the queue ConfigMap cannot be read; the message names the field.
	ReasonQueueConfigInvalid = "queue-config-invalid"
	// ReasonSnapshotRejected: arbiter-server refused the snapshot; the message names the field.
	ReasonSnapshotRejected = "snapshot-rejected"
)

// scheduleFailure is the reason and message written to waiting pods for a failed Schedule call.
// The message carries only the gRPC code, not the error's text, so that it stays the same from
// one failed cycle to the next and is written (with its Event) once.
func scheduleFailure(err error) (reason, message string) {
	switch st := status.Convert(err); st.Code() {
	case codes.InvalidArgument:
		return ReasonSnapshotRejected, "arbiter-server refused the snapshot: " + st.Message()
	default:
		return ReasonArbiterUnavailable, fmt.Sprintf("arbiter-server did not answer (gRPC %s); pods wait until it does", st.Code())
	}
}

// queueConfig reads the queue ConfigMap and, when enabled, KAI's Queue resources. A missing
// ConfigMap means no queues of its own; a malformed one stops scheduling until it is fixed
// (better than scheduling against half a configuration). A malformed KAI queue is skipped.
func (s *Shim) queueConfig() (*translate.QueueConfig, error) {
	cfg := &translate.QueueConfig{}
	cm, err := s.configMaps.ConfigMaps(s.cfg.Namespace).Get(s.cfg.QueueConfigMap)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("queue configmap: %w", err)
	default:
		if cfg, err = translate.ParseQueueConfig([]byte(cm.Data[translate.QueueConfigKey])); err != nil {
			return nil, fmt.Errorf("configmap %s/%s: %w", s.cfg.Namespace, s.cfg.QueueConfigMap, err)
		}
	}
	if cfg.Policy.GetFairnessModel() == arbiterv1.FairnessModel_FAIRNESS_MODEL_KUEUE {
		return nil, errors.New("queue config: the Kubernetes scheduler places pods, which only the KAI model does (policy.fairnessModel)")
	}
	if s.kaiQueues != nil {
		objs, err := s.kaiQueues.List(labels.Everything())
		if err != nil {
			return nil, fmt.Errorf("list KAI queues: %w", err)
		}
		var kai []*arbiterv1.Queue
		for _, o := range objs {
			u, ok := o.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			q, err := translate.QueueFromKAI(u)
			if err != nil {
				s.deps.Metrics.Errors.WithLabelValues("queues").Inc()
				s.log.Error("skipping KAI queue", "err", err)
				continue
			}
			kai = append(kai, q)
		}
		cfg.Queues = translate.MergeQueues(cfg.Queues, kai)
	} else {
		cfg.Queues = translate.MergeQueues(cfg.Queues, nil)
	}
	return cfg, nil
}

// advanceUsage moves the usage ledger to now and puts it in the snapshot; the ledger is loaded
// from its store on the first cycle and saved every UsageSaveInterval.
func (s *Shim) advanceUsage(ctx context.Context, now time.Time, res *translate.Result) error {
	if s.ledger == nil {
		s.ledger = &usage.Ledger{}
		if s.deps.Store != nil {
			l, err := s.deps.Store.Load(ctx)
			if err != nil {
				s.ledger = nil
				return err
			}
			s.ledger = l
		}
		s.lastSaved = now
	}
	if err := s.ledger.Advance(now, res.Allocated, res.Capacity, s.cfg.Usage); err != nil {
		return err
	}
	res.Snapshot.Usage = s.ledger.Usage()
	res.Snapshot.UsageCapacity = s.ledger.UsageCapacity()
	if s.deps.Store != nil && now.Sub(s.lastSaved) >= s.cfg.UsageSaveInterval {
		if err := s.deps.Store.Save(ctx, s.ledger); err != nil {
			s.deps.Metrics.Errors.WithLabelValues("usage").Inc()
			s.log.Error("save usage", "err", err) // retried at the next interval
		} else {
			s.lastSaved = now
		}
	}
	return nil
}
