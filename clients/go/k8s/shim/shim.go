// Package shim is arbiter's Kubernetes scheduler: a secondary scheduler for the pods whose
// spec.schedulerName it owns, which delegates every decision to arbiter.
//
// Each cycle it builds a Snapshot from informer caches (package translate), adds the queues'
// decayed usage (package usage), calls Schedule, and applies the answer: bindings through the
// pods/binding subresource, evictions through the policy/v1 Eviction API (which honours
// PodDisruptionBudgets), and pending reasons in each pod's PodScheduled condition and an Event.
// A cycle starts when the informers report something it could act on (a pod to place, room
// freed or added: causes.go), at most one per MinCycleGap, and otherwise every Period
// (trigger.go).
//
// Pods that share GPU devices (KAI's gpu-fraction and gpu-memory annotations) are labelled with
// their devices' GPU groups before they are bound, and each device is held by a reservation pod
// while it has pods (gpusharing.go).
//
// Its state between cycles is small and lives in memory, except the usage ledger, which is
// persisted in a ConfigMap: the bindings and evictions it issued and the cache has not shown yet
// (never issued twice, and counted in the next snapshot as if done), pipelined bindings kept as
// nominations until their victims are gone, and the nodes that moved pods were re-placed on,
// kept as hints for their replacements.
package shim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
	"arbiter.dev/clients/go/k8s/translate"
	"arbiter.dev/clients/go/k8s/usage"
)

// Config holds the shim's settings; zero values take the defaults named per field.
type Config struct {
	// SchedulerName selects the pods to schedule (spec.schedulerName); default "arbiter".
	SchedulerName string
	// Namespace holds the queue and usage ConfigMaps; default "arbiter-system".
	Namespace string
	// QueueConfigMap is the ConfigMap with translate.QueueConfigKey; default "arbiter-queues".
	QueueConfigMap string
	// DefaultQueue is the queue of pods that name none; "" leaves them unscheduled.
	DefaultQueue string
	// Period is the time between the end of one cycle and the start of the next when nothing
	// causes one sooner; default 1s.
	Period time.Duration
	// MinCycleGap is the least time between the end of one cycle and the start of the next when
	// something causes one (a pod of the shim's to place, room freed on a node, a node added or
	// changed, a new queue configuration); default 50ms. It is held to at most Period.
	MinCycleGap time.Duration
	// ScheduleTimeout bounds one Schedule call, retries included; default 30s.
	ScheduleTimeout time.Duration
	// Usage is the time-aware fairness window.
	Usage usage.Window
	// UsageSaveInterval is how often the usage ledger is written to its ConfigMap; default 30s.
	UsageSaveInterval time.Duration
	// DumpDir, when set, receives every ScheduleRequest sent, as proto3 JSON.
	DumpDir string
	// IgnoredResources are never sent; default none. Ignoring "pods" stops counting pods against
	// each node's pods allocatable (translate.PodsResource).
	IgnoredResources []string
	// KAIQueues reads KAI Scheduler's Queue resources (needs a dynamic client).
	KAIQueues bool
	// BindWorkers is how many bindings are in flight at once; default 16. The Kubernetes
	// client's QPS limit still paces them.
	BindWorkers int
	// ReservationNamespace holds the reservation pods of shared GPU devices (gpusharing.go);
	// default Namespace. Another namespace is created when missing (if the shim may).
	ReservationNamespace string
	// ReservationImage is the image of a reservation pod's one container, which only has to
	// sleep; default registry.k8s.io/pause:3.10.
	ReservationImage string
}

func (c Config) withDefaults() Config {
	if c.SchedulerName == "" {
		c.SchedulerName = "arbiter"
	}
	if c.Namespace == "" {
		c.Namespace = "arbiter-system"
	}
	if c.QueueConfigMap == "" {
		c.QueueConfigMap = "arbiter-queues"
	}
	if c.Period <= 0 {
		c.Period = time.Second
	}
	if c.MinCycleGap <= 0 {
		c.MinCycleGap = 50 * time.Millisecond
	}
	if c.ScheduleTimeout <= 0 {
		c.ScheduleTimeout = 30 * time.Second
	}
	if c.UsageSaveInterval <= 0 {
		c.UsageSaveInterval = 30 * time.Second
	}
	if c.BindWorkers <= 0 {
		c.BindWorkers = 16
	}
	if c.ReservationNamespace == "" {
		c.ReservationNamespace = c.Namespace
	}
	if c.ReservationImage == "" {
		c.ReservationImage = "registry.k8s.io/pause:3.10"
	}
	return c
}

// Scheduler is the arbiter API the shim calls; *client.Client implements it.
type Scheduler interface {
	Schedule(ctx context.Context, req *arbiterv1.ScheduleRequest) (*arbiterv1.ScheduleResponse, error)
}

// UsageStore persists the usage ledger; *usage.ConfigMapStore implements it.
type UsageStore interface {
	Load(ctx context.Context) (*usage.Ledger, error)
	Save(ctx context.Context, l *usage.Ledger) error
}

// Deps are the shim's collaborators. Kube and Scheduler are required.
type Deps struct {
	Kube      kubernetes.Interface
	Dynamic   dynamic.Interface // for KAI queues; nil disables them
	Scheduler Scheduler
	Recorder  record.EventRecorder // nil: no events
	Store     UsageStore           // nil: usage lives in memory only
	Metrics   *Metrics             // nil: unregistered metrics
	Clock     clock.PassiveClock   // nil: the real clock
	Log       *slog.Logger         // nil: slog.Default()
}

// Shim is the scheduler. Create it with New, then Start, then Run (or RunCycle in tests).
// RunCycle must not be called concurrently with itself.
type Shim struct {
	cfg   Config
	deps  Deps
	log   *slog.Logger
	ready atomic.Bool

	factories  []informers.SharedInformerFactory
	dynFactory dynamicinformer.DynamicSharedInformerFactory
	pods       corelisters.PodLister
	nodes      corelisters.NodeLister
	configMaps corelisters.ConfigMapLister
	kaiQueues  cache.GenericLister
	synced     []cache.InformerSynced

	// trigger starts the cycles of Run, told by the informers' event handlers of each cause.
	trigger *cycleTrigger
	// waiting: the last cycle left a pod group pending or a binding nominated, so room freed on
	// a node is a cause.
	waiting atomic.Bool

	// Cycle state, touched only by RunCycle.
	state     *state
	ledger    *usage.Ledger
	lastSaved time.Time
}

// New wires the informers; nothing runs until Start.
func New(cfg Config, deps Deps) (*Shim, error) {
	if deps.Kube == nil || deps.Scheduler == nil {
		return nil, errors.New("shim: a Kubernetes client and a scheduler are required")
	}
	cfg = cfg.withDefaults()
	if deps.Recorder == nil {
		deps.Recorder = &record.FakeRecorder{} // discards events
	}
	if deps.Metrics == nil {
		deps.Metrics = NewMetrics(nil)
	}
	if deps.Clock == nil {
		deps.Clock = clock.RealClock{}
	}
	if deps.Log == nil {
		deps.Log = slog.Default()
	}
	s := &Shim{cfg: cfg, deps: deps, log: deps.Log, state: newState(),
		trigger: newCycleTrigger(clock.RealClock{}, cfg.Period, cfg.MinCycleGap)}
	s.waiting.Store(true) // until a cycle says otherwise

	strip := informers.WithTransform(stripManagedFields)
	cluster := informers.NewSharedInformerFactoryWithOptions(deps.Kube, 0, strip)
	podInformer := cluster.Core().V1().Pods()
	nodeInformer := cluster.Core().V1().Nodes()
	own := informers.NewSharedInformerFactoryWithOptions(deps.Kube, 0, strip,
		informers.WithNamespace(cfg.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = "metadata.name=" + cfg.QueueConfigMap
		}))
	cmInformer := own.Core().V1().ConfigMaps()
	s.pods, s.nodes, s.configMaps = podInformer.Lister(), nodeInformer.Lister(), cmInformer.Lister()
	s.synced = append(s.synced, podInformer.Informer().HasSynced, nodeInformer.Informer().HasSynced,
		cmInformer.Informer().HasSynced)
	s.factories = []informers.SharedInformerFactory{cluster, own}
	queueInformers := []cache.SharedIndexInformer{cmInformer.Informer()}

	if cfg.KAIQueues && deps.Dynamic != nil {
		s.dynFactory = dynamicinformer.NewDynamicSharedInformerFactory(deps.Dynamic, 0)
		kai := s.dynFactory.ForResource(translate.KAIQueueResource)
		s.kaiQueues = kai.Lister()
		s.synced = append(s.synced, kai.Informer().HasSynced)
		queueInformers = append(queueInformers, kai.Informer())
	}
	if err := s.watchCauses(podInformer.Informer(), nodeInformer.Informer(), queueInformers...); err != nil {
		return nil, fmt.Errorf("shim: %w", err)
	}
	return s, nil
}

// Start starts the informers and waits until their caches are filled.
func (s *Shim) Start(ctx context.Context) error {
	for _, f := range s.factories {
		f.Start(ctx.Done())
	}
	if s.dynFactory != nil {
		s.dynFactory.Start(ctx.Done())
	}
	if !cache.WaitForCacheSync(ctx.Done(), s.synced...) {
		return fmt.Errorf("shim: informer caches did not sync: %w", context.Cause(ctx))
	}
	s.ready.Store(true)
	return nil
}

// Ready reports whether the caches are filled (the readiness probe).
func (s *Shim) Ready() bool { return s.ready.Load() }

// Run loads the usage ledger, then runs cycles until ctx ends, and saves the ledger on the way
// out: one at once, then one as soon as something causes it (MinCycleGap after the previous one
// ended at the soonest), else Period after the previous one ended. Failed cycles are logged and
// counted; the loop goes on.
func (s *Shim) Run(ctx context.Context) {
	s.deps.Metrics.Leader.Set(1)
	defer s.deps.Metrics.Leader.Set(0)
	s.trigger.Run(ctx, func(ctx context.Context) {
		if err := s.RunCycle(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("scheduling cycle failed", "err", err)
		}
	})
	if s.ledger != nil && s.deps.Store != nil {
		saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := s.deps.Store.Save(saveCtx, s.ledger); err != nil {
			s.log.Error("saving usage on shutdown failed", "err", err)
		}
	}
}

// stripManagedFields drops metadata.managedFields from cached objects: the shim never reads
// them, and they are a large part of every object.
func stripManagedFields(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil {
		a.SetManagedFields(nil)
	}
	return obj, nil
}
