package extender

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the extender's Prometheus metrics.
type Metrics struct {
	Calls          *prometheus.HistogramVec // by verb
	DecideDuration prometheus.Histogram
	Answers        *prometheus.CounterVec // asked, reused, failed
	Filtered       *prometheus.CounterVec // placed, pending, unseen
	Preemptions    *prometheus.CounterVec // victims, budget
	Binds          prometheus.Counter
	BindErrors     prometheus.Counter
	GangsBound     prometheus.Counter
	GangsTimedOut  prometheus.Counter
}

// NewMetrics creates the metrics and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Calls: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "arbiter_extender_call_duration_seconds",
			Help:    "Duration of kube-scheduler's extender calls, by verb.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16), // 0.1 ms to 3.3 s
		}, []string{"verb"}),
		DecideDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "arbiter_extender_decide_duration_seconds",
			Help:    "Duration of building a snapshot and asking arbiter-server for an answer.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}),
		Answers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "arbiter_extender_answers_total",
			Help: "Answers by how a call got one: asked (a new Schedule call), reused, failed.",
		}, []string{"how"}),
		Filtered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "arbiter_extender_filtered_pods_total",
			Help: "Filter calls for arbiter's pods: placed (one node kept), pending (every node refused), or or unseen (an error: not in arbiter's snapshot yet, retried after backoff).",
		}, []string{"outcome"}),
		Preemptions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "arbiter_extender_preemptions_total",
			Help: "Preempt calls answered with arbiter's victims, or refused because of a disruption budget.",
		}, []string{"outcome"}),
		Binds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "arbiter_extender_binds_total", Help: "Pods bound by the bind verb.",
		}),
		BindErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "arbiter_extender_bind_errors_total", Help: "Bindings the API server refused.",
		}),
		GangsBound: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "arbiter_extender_gangs_bound_total", Help: "Gangs bound whole by the bind verb.",
		}),
		GangsTimedOut: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "arbiter_extender_gang_waits_timed_out_total",
			Help: "Gang members whose bind call gave up waiting for the rest of the gang.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.Calls, m.DecideDuration, m.Answers, m.Filtered, m.Preemptions, m.Binds, m.BindErrors,
			m.GangsBound, m.GangsTimedOut)
	}
	return m
}
