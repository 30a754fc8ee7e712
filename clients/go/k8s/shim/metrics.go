package shim

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the shim's Prometheus metrics. No label carries a pod, node or queue name.
type Metrics struct {
	CycleDuration prometheus.Histogram
	Binds         prometheus.Counter
	Evictions     prometheus.Counter
	// EvictionsRefused counts evictions a PodDisruptionBudget refused (HTTP 429).
	EvictionsRefused prometheus.Counter
	// BindConflicts counts bindings refused because the pod was bound meanwhile (HTTP 409).
	BindConflicts prometheus.Counter
	// Errors counts failures by stage: queues, snapshot, usage, schedule, bind, evict, status,
	// reservation.
	Errors *prometheus.CounterVec
	// Reservations counts GPU reservation pods by action: created, deleted.
	Reservations  *prometheus.CounterVec
	Nominations   prometheus.Gauge
	PendingGroups prometheus.Gauge
	Leader        prometheus.Gauge
}

// NewMetrics creates the metrics and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		CycleDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "arbiter_k8s_cycle_duration_seconds",
			Help:    "Duration of one scheduling cycle: snapshot, Schedule call and applying the answer.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15), // 1 ms to 16 s
		}),
		Binds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "arbiter_k8s_binds_total",
			Help: "Pods bound to a node through the binding subresource.",
		}),
		Evictions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "arbiter_k8s_evictions_total",
			Help: "Pods evicted through the Eviction API.",
		}),
		EvictionsRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "arbiter_k8s_evictions_refused_total",
			Help: "Evictions a PodDisruptionBudget refused; the next cycle decides again.",
		}),
		BindConflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "arbiter_k8s_bind_conflicts_total",
			Help: "Bindings refused because the pod was bound meanwhile; the pod is counted where it is.",
		}),
		Errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "arbiter_k8s_errors_total",
			Help: "Failures by stage of the cycle; failed binds and evictions are retried next cycle.",
		}, []string{"stage"}),
		Reservations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "arbiter_k8s_gpu_reservations_total",
			Help: "GPU reservation pods created (one per shared device) and deleted (the device's last pod gone).",
		}, []string{"action"}),
		Nominations: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "arbiter_k8s_nominations",
			Help: "Pipelined bindings waiting for their victims to leave the node.",
		}),
		PendingGroups: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "arbiter_k8s_pending_pod_groups",
			Help: "Pod groups that the last answer left pending.",
		}),
		Leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "arbiter_k8s_leader",
			Help: "1 while this replica holds the leader lease and schedules.",
		}),
	}
	for _, stage := range []string{"queues", "snapshot", "usage", "schedule", "bind", "evict", "status", "reservation"} {
		m.Errors.WithLabelValues(stage) // export every stage from the start, at 0
	}
	for _, action := range []string{"created", "deleted"} {
		m.Reservations.WithLabelValues(action)
	}
	if reg != nil {
		reg.MustRegister(m.CycleDuration, m.Binds, m.Evictions, m.EvictionsRefused, m.BindConflicts, m.Errors, m.Reservations, m.Nominations, m.PendingGroups, m.Leader)
	}
	return m
}
