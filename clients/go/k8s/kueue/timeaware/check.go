// Package timeaware is the controller of the arbiter.dev/time-aware AdmissionCheck, which adds
// time-aware fairness to Kueue's admission: for each Workload whose quota Kueue reserved it
// decides (Decide) whether another ClusterQueue of the tree deserves the quota more over time, and
// writes Ready or Retry on the Workload's check. It reads the cluster through package kueue's
// translation and keeps the usage ledger.
package timeaware

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueclient "sigs.k8s.io/kueue/client-go/clientset/versioned"
	"sigs.k8s.io/kueue/client-go/informers/externalversions"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
	"arbiter.dev/clients/go/internal/replay"
	kueuemodel "arbiter.dev/clients/go/k8s/kueue"
	"arbiter.dev/clients/go/k8s/usage"
)

// CheckControllerName is the spec.controllerName of the AdmissionChecks the time-aware check
// serves.
const CheckControllerName = "arbiter.dev/time-aware"

// CheckConfig configures the time-aware AdmissionCheck controller.
type CheckConfig struct {
	// ControllerName selects the AdmissionChecks served; default CheckControllerName.
	ControllerName string
	// KValue is time-aware fairness' k; 0 makes every decision Ready.
	KValue float64
	// Window says how the usage ledger remembers.
	Window usage.Window
	// Period is the time between passes when nothing changes; default 1s. A change of a Workload
	// starts a pass at once.
	Period time.Duration
	// SaveInterval is how often the ledger is written to its ConfigMap; default 30s.
	SaveInterval time.Duration
	// RetryAfter is the requeueAfterSeconds set with Retry (rounded up to seconds). 0, the
	// default, is best: Kueue (v0.17) keeps the quota reserved until requeueAfterSeconds have
	// passed and only then evicts and requeues the workload, so a delay only keeps the quota
	// from the ClusterQueue that deserves it.
	RetryAfter time.Duration
	// HandoverGrace is how long a Retry may wait for its rival. Kueue does not always give the
	// quota a Retry frees to the rival: it may reserve it again for the same workload, over and
	// over, while the rival's workload is never tried. Once a workload has been sent back for the
	// same rival's same waiting workload for this long, and that workload still waits, the check
	// is Ready, so that the quota is not left idle. 0 means the default, 1m; negative never.
	HandoverGrace time.Duration
	// CallTimeout bounds every call to arbiter; default 10s.
	CallTimeout time.Duration
	// Strategies are Kueue's fair-sharing preemption strategies, for the fit test.
	Strategies []arbiterv1.KueuePreemptionStrategy
	// DumpDir, when set, receives every time-aware request sent (proto3 JSON, replayable with
	// `arbiter schedule`).
	DumpDir string
}

func (c CheckConfig) withDefaults() CheckConfig {
	if c.ControllerName == "" {
		c.ControllerName = CheckControllerName
	}
	if c.Period <= 0 {
		c.Period = time.Second
	}
	if c.SaveInterval <= 0 {
		c.SaveInterval = 30 * time.Second
	}
	if c.CallTimeout <= 0 {
		c.CallTimeout = 10 * time.Second
	}
	if c.HandoverGrace == 0 {
		c.HandoverGrace = time.Minute
	}
	return c
}

// checkMetrics are the controller's Prometheus metrics.
type checkMetrics struct {
	decisions *prometheus.CounterVec
	unclaimed prometheus.Counter
	errors    prometheus.Counter
	passes    prometheus.Histogram
	saves     *prometheus.CounterVec
}

func newCheckMetrics(reg prometheus.Registerer) *checkMetrics {
	m := &checkMetrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "arbiter_kueue_check_decisions_total", Help: "Time-aware check decisions written, by state (Ready, Retry).",
		}, []string{"state"}),
		unclaimed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "arbiter_kueue_check_unclaimed_handovers_total", Help: "Ready decisions made because the rival a workload was sent back for had not taken the quota within the handover grace.",
		}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "arbiter_kueue_check_errors_total", Help: "Decisions not made because a call to arbiter or Kubernetes failed (retried on the next pass).",
		}),
		passes: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "arbiter_kueue_check_pass_seconds", Help: "Duration of one pass over the workloads waiting for the check.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}),
		saves: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "arbiter_kueue_usage_saves_total", Help: "Writes of the usage ledger to its ConfigMap, by result.",
		}, []string{"result"}),
	}
	if reg != nil {
		reg.MustRegister(m.decisions, m.unclaimed, m.errors, m.passes, m.saves)
	}
	return m
}

// Checker is the arbiter.dev/time-aware AdmissionCheck controller. It keeps every ClusterQueue's
// (and Cohort's) decayed usage in a ledger persisted in a ConfigMap, and decides the check of
// every workload whose quota Kueue reserved (Decide).
type Checker struct {
	cfg     CheckConfig
	kueue   kueueclient.Interface
	arb     kueuemodel.Arbiter
	store   *usage.ConfigMapStore
	log     *slog.Logger
	metrics *checkMetrics
	now     func() time.Time

	factory     externalversions.SharedInformerFactory
	kubeFactory informers.SharedInformerFactory
	changed     chan struct{}

	ledger   *usage.Ledger
	lastSave time.Time
	// handovers are the workloads sent back, by key, with the rival they were sent back for.
	handovers map[string]handover
}

// handover is a run of Retry answers for one workload, each for the same rival workload.
type handover struct {
	rival, head string
	since       time.Time
	retries     int
}

// NewChecker makes a controller; Run starts it. reg may be nil.
func NewChecker(cfg CheckConfig, kc kueueclient.Interface, kube kubernetes.Interface, arb kueuemodel.Arbiter, store *usage.ConfigMapStore, log *slog.Logger, reg prometheus.Registerer) *Checker {
	c := &Checker{
		cfg: cfg.withDefaults(), kueue: kc, arb: arb, store: store, log: log, metrics: newCheckMetrics(reg),
		now: time.Now, changed: make(chan struct{}, 1), handovers: map[string]handover{},
	}
	c.factory = externalversions.NewSharedInformerFactory(kc, 0)
	c.kubeFactory = informers.NewSharedInformerFactory(kube, 0)
	api := c.factory.Kueue().V1beta2()
	notify := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.poke() },
		UpdateFunc: func(any, any) { c.poke() },
		DeleteFunc: func(any) { c.poke() },
	}
	for _, inf := range []cache.SharedIndexInformer{
		api.Workloads().Informer(), api.ResourceFlavors().Informer(), api.ClusterQueues().Informer(), api.Cohorts().Informer(),
		api.LocalQueues().Informer(), api.AdmissionChecks().Informer(), c.kubeFactory.Core().V1().Namespaces().Informer(),
	} {
		if _, err := inf.AddEventHandler(notify); err != nil {
			panic(err) // only fails on a stopped informer, which a new factory has not
		}
	}
	return c
}

func (c *Checker) poke() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// Ledger is the usage ledger (for tests and metrics); nil before Run loads it.
func (c *Checker) Ledger() *usage.Ledger { return c.ledger }

// Run loads the ledger, syncs the caches, and runs passes until ctx ends; then it saves the
// ledger once more.
func (c *Checker) Run(ctx context.Context) error {
	ledger, err := c.store.Load(ctx)
	if err != nil {
		return err
	}
	c.ledger = ledger
	c.factory.Start(ctx.Done())
	defer c.factory.Shutdown()
	c.kubeFactory.Start(ctx.Done())
	defer c.kubeFactory.Shutdown()
	syncCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	synced := c.factory.WaitForCacheSync(syncCtx.Done())
	for typ, ok := range c.kubeFactory.WaitForCacheSync(syncCtx.Done()) {
		synced[typ] = ok
	}
	for typ, ok := range synced {
		if !ok {
			return fmt.Errorf("the cache of %v did not sync: can the controller list and watch Kueue's objects and namespaces?", typ)
		}
	}
	c.log.Info("time-aware admission check running", "controllerName", c.cfg.ControllerName, "k", c.cfg.KValue,
		"halfLife", c.cfg.Window.HalfLife, "usageUpdated", c.ledger.Updated)
	ticker := time.NewTicker(c.cfg.Period)
	defer ticker.Stop()
	for {
		if err := c.Pass(ctx); err != nil && ctx.Err() == nil {
			c.log.Error("pass", "err", err)
		}
		select {
		case <-ctx.Done():
			saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			return c.save(saveCtx)
		case <-ticker.C:
		case <-c.changed:
		}
	}
}

func (c *Checker) save(ctx context.Context) error {
	if err := c.store.Save(ctx, c.ledger); err != nil {
		c.metrics.saves.WithLabelValues("error").Inc()
		return err
	}
	c.metrics.saves.WithLabelValues("ok").Inc()
	c.lastSave = c.now()
	return nil
}

// state is the cached objects at now.
func (c *Checker) state(now time.Time) (*kueuemodel.State, error) {
	api := c.factory.Kueue().V1beta2()
	s := &kueuemodel.State{Now: now, Namespaces: map[string]map[string]string{}}
	nss, err := c.kubeFactory.Core().V1().Namespaces().Lister().List(labels.Everything())
	if err != nil {
		return nil, err
	}
	for _, ns := range nss {
		s.Namespaces[ns.Name] = ns.Labels
	}
	rfs, err := api.ResourceFlavors().Lister().List(labels.Everything())
	if err != nil {
		return nil, err
	}
	cqs, err := api.ClusterQueues().Lister().List(labels.Everything())
	if err != nil {
		return nil, err
	}
	cohorts, err := api.Cohorts().Lister().List(labels.Everything())
	if err != nil {
		return nil, err
	}
	lqs, err := api.LocalQueues().Lister().List(labels.Everything())
	if err != nil {
		return nil, err
	}
	wls, err := api.Workloads().Lister().List(labels.Everything())
	if err != nil {
		return nil, err
	}
	acs, err := api.AdmissionChecks().Lister().List(labels.Everything())
	if err != nil {
		return nil, err
	}
	for _, o := range rfs {
		s.ResourceFlavors = append(s.ResourceFlavors, *o)
	}
	for _, o := range cqs {
		s.ClusterQueues = append(s.ClusterQueues, *o)
	}
	for _, o := range cohorts {
		s.Cohorts = append(s.Cohorts, *o)
	}
	for _, o := range lqs {
		s.LocalQueues = append(s.LocalQueues, *o)
	}
	for _, o := range wls {
		s.Workloads = append(s.Workloads, *o)
	}
	for _, o := range acs {
		s.AdmissionChecks = append(s.AdmissionChecks, *o)
	}
	return s, nil
}

// Pass advances the ledger and decides every workload waiting for one of the served checks.
func (c *Checker) Pass(ctx context.Context) error {
	start := time.Now()
	defer func() { c.metrics.passes.Observe(time.Since(start).Seconds()) }()
	now := c.now()
	s, err := c.state(now)
	if err != nil {
		return err
	}
	checks := map[kueue.AdmissionCheckReference]bool{}
	var errs []error
	for i := range s.AdmissionChecks {
		ac := &s.AdmissionChecks[i]
		if ac.Spec.ControllerName != c.cfg.ControllerName {
			continue
		}
		checks[kueue.AdmissionCheckReference(ac.Name)] = true
		errs = append(errs, c.activate(ctx, ac))
	}
	model, buildErr := kueuemodel.Build(s, kueuemodel.Options{Strategies: c.cfg.Strategies})
	if buildErr == nil {
		if err := c.ledger.Advance(now, model.Allocated(), model.Capacity(), c.cfg.Window); err != nil {
			errs = append(errs, err)
		}
	}
	for i := range s.Workloads {
		w := &s.Workloads[i]
		key := kueuemodel.WorkloadKey(w)
		check := waitingCheck(w, checks)
		if check == "" {
			continue
		}
		d := Decision{State: kueue.CheckStateReady, Message: fmt.Sprintf("passed through: arbiter cannot model this installation: %v", buildErr)}
		if buildErr == nil {
			var req *arbiterv1.ScheduleRequest
			d, req, err = c.decide(ctx, model, key)
			if req != nil && c.cfg.DumpDir != "" {
				if _, err := replay.Write(c.cfg.DumpDir, "time-aware-"+w.Namespace+"_"+w.Name, now, req); err != nil {
					c.log.Error("dump request", "err", err)
				}
			}
			if err != nil {
				c.metrics.errors.Inc()
				errs = append(errs, fmt.Errorf("decide %s: %w", key, err))
				continue
			}
			d = c.handOver(key, d, now)
		}
		written, err := c.write(ctx, w, check, d, now)
		if err != nil {
			c.metrics.errors.Inc()
			errs = append(errs, fmt.Errorf("write the check of %s: %w", key, err))
			continue
		}
		if !written {
			continue
		}
		c.metrics.decisions.WithLabelValues(string(d.State)).Inc()
		c.log.Info("decided", "workload", key, "check", check, "state", d.State, "message", d.Message)
	}
	c.forgetGone(s)
	if now.Sub(c.lastSave) >= c.cfg.SaveInterval {
		errs = append(errs, c.save(ctx))
	}
	return errors.Join(errs...)
}

// handOver keeps track of the Retry answers given for the workload key, and turns a Retry into
// Ready once the run of Retries for the same rival workload has lasted the handover grace: that
// workload still waits, so Kueue is not giving it the quota, and a further Retry would only leave
// the quota idle. A run ends when the rival or its first waiting workload changes, when the
// check answers Ready on its own, or when the workload is gone.
func (c *Checker) handOver(key string, d Decision, now time.Time) Decision {
	if d.State != kueue.CheckStateRetry {
		delete(c.handovers, key)
		return d
	}
	h, ok := c.handovers[key]
	if !ok || h.rival != d.Rival || h.head != d.RivalHead {
		c.handovers[key] = handover{rival: d.Rival, head: d.RivalHead, since: now, retries: 1}
		return d
	}
	waited := now.Sub(h.since)
	if c.cfg.HandoverGrace < 0 || waited < c.cfg.HandoverGrace {
		h.retries++
		c.handovers[key] = h
		return d
	}
	// The run is kept: asked again while the same rival workload waits, the answer stays Ready.
	c.metrics.unclaimed.Inc()
	return Decision{State: kueue.CheckStateReady, Message: fmt.Sprintf(
		"ClusterQueue %s has not taken the quota: this workload was sent back %d times in %s for %s, which still waits, so it runs rather than leave the quota idle (%s)",
		d.Rival, h.retries, waited.Round(time.Second), d.RivalHead, d.Message)}
}

// forgetGone drops the runs of Retries of workloads that no longer exist.
func (c *Checker) forgetGone(s *kueuemodel.State) {
	if len(c.handovers) == 0 {
		return
	}
	live := make(map[string]bool, len(s.Workloads))
	for i := range s.Workloads {
		live[kueuemodel.WorkloadKey(&s.Workloads[i])] = true
	}
	for key := range c.handovers {
		if !live[key] {
			delete(c.handovers, key)
		}
	}
}

func (c *Checker) decide(ctx context.Context, m *kueuemodel.Model, key string) (Decision, *arbiterv1.ScheduleRequest, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
	defer cancel()
	return Decide(ctx, c.arb, m, c.ledger, c.cfg.KValue, key)
}

// waitingCheck is the served check w waits for: w has quota, is not evicted, and the check's
// state is Pending; "" otherwise.
func waitingCheck(w *kueue.Workload, served map[kueue.AdmissionCheckReference]bool) kueue.AdmissionCheckReference {
	if !kueuemodel.HasQuotaReservation(w) || kueuemodel.IsFinished(w) || apimeta.IsStatusConditionTrue(w.Status.Conditions, kueue.WorkloadEvicted) {
		return ""
	}
	for _, st := range w.Status.AdmissionChecks {
		if served[st.Name] && st.State == kueue.CheckStatePending {
			return st.Name
		}
	}
	return ""
}

// write sets the check's state on the workload's status, on the version of the workload the
// decision was made on: if the workload changed meanwhile (or the cache was behind, and the check
// is decided already), the write is refused with a conflict and nothing is written; the next pass
// sees the new version.
func (c *Checker) write(ctx context.Context, w *kueue.Workload, check kueue.AdmissionCheckReference, d Decision, now time.Time) (written bool, err error) {
	updated := w.DeepCopy()
	for i := range updated.Status.AdmissionChecks {
		st := &updated.Status.AdmissionChecks[i]
		if st.Name != check {
			continue
		}
		st.State, st.Message, st.LastTransitionTime = d.State, truncate(d.Message, 32768), metav1.NewTime(now)
		st.RequeueAfterSeconds = nil
		if d.State == kueue.CheckStateRetry && c.cfg.RetryAfter > 0 {
			secs := int32(math.Ceil(c.cfg.RetryAfter.Seconds()))
			st.RequeueAfterSeconds = &secs
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
	defer cancel()
	_, err = c.kueue.KueueV1beta2().Workloads(w.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// activate marks a served AdmissionCheck Active, without which Kueue keeps its ClusterQueues
// inactive.
func (c *Checker) activate(ctx context.Context, ac *kueue.AdmissionCheck) error {
	if apimeta.IsStatusConditionTrue(ac.Status.Conditions, kueue.AdmissionCheckActive) {
		return nil
	}
	updated := ac.DeepCopy()
	apimeta.SetStatusCondition(&updated.Status.Conditions, metav1.Condition{
		Type: kueue.AdmissionCheckActive, Status: metav1.ConditionTrue, Reason: "Active",
		Message:            fmt.Sprintf("arbiter-kueue decides the time-aware check (k=%g)", c.cfg.KValue),
		ObservedGeneration: ac.Generation,
	})
	ctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
	defer cancel()
	_, err := c.kueue.KueueV1beta2().AdmissionChecks().UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("activate AdmissionCheck %s: %w", ac.Name, err)
	}
	c.log.Info("admission check active", "name", ac.Name)
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
