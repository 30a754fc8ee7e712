package usage

import (
	"fmt"
	"sort"
	"time"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
)

// Window says how usage is remembered.
type Window struct {
	// HalfLife decays past usage; 0 keeps it undecayed (within the tumbling window, if any).
	HalfLife time.Duration
	// Tumbling, when positive, starts both usage and capacity from zero at every multiple of it
	// (counted from Go's zero time, so 24h windows start at midnight UTC).
	Tumbling time.Duration
}

// Ledger is the adapter's time-aware fairness state: each queue's decayed resource-time and the
// cluster's decayed capacity-time, in resource units × seconds. It is persisted as JSON.
type Ledger struct {
	// Updated is when the ledger was last advanced; zero for a new ledger.
	Updated  time.Time                     `json:"updated"`
	Queues   map[string]map[string]float64 `json:"queues"`
	Capacity map[string]float64            `json:"capacity"`
}

// Advance moves the ledger to now with one accounting step per queue and one for the capacity,
// counting allocated (per queue, its subtree's running requests) and capacity as held over the
// whole interval since the last step. Queues absent from allocated are forgotten. The first call
// on a new ledger only starts the clock. A clock that went backwards (another leader's) counts as
// no time.
func (l *Ledger) Advance(now time.Time, allocated map[string]map[string]float64, capacity map[string]float64, w Window) error {
	if l.Queues == nil {
		l.Queues = map[string]map[string]float64{}
	}
	if l.Capacity == nil {
		l.Capacity = map[string]float64{}
	}
	var interval time.Duration
	switch {
	case l.Updated.IsZero():
	case w.Tumbling > 0 && now.Truncate(w.Tumbling).After(l.Updated.Truncate(w.Tumbling)):
		// A new window started: forget everything before it.
		l.Queues = map[string]map[string]float64{}
		l.Capacity = map[string]float64{}
		interval = now.Sub(now.Truncate(w.Tumbling))
	case now.After(l.Updated):
		interval = now.Sub(l.Updated)
	}
	dt, h := interval.Seconds(), w.HalfLife.Seconds()
	queues := make(map[string]map[string]float64, len(allocated))
	for q, alloc := range allocated {
		u, err := Accumulate(l.Queues[q], alloc, dt, h)
		if err != nil {
			return fmt.Errorf("usage of queue %s: %w", q, err)
		}
		queues[q] = u
	}
	c, err := Accumulate(l.Capacity, capacity, dt, h)
	if err != nil {
		return fmt.Errorf("usage capacity: %w", err)
	}
	l.Queues, l.Capacity = queues, c
	if now.After(l.Updated) {
		l.Updated = now
	}
	return nil
}

// Usage is the ledger as Snapshot.usage: one entry per queue, by name.
func (l *Ledger) Usage() []*arbiterv1.QueueUsage {
	names := make([]string, 0, len(l.Queues))
	for q := range l.Queues {
		names = append(names, q)
	}
	sort.Strings(names)
	out := make([]*arbiterv1.QueueUsage, 0, len(names))
	for _, q := range names {
		out = append(out, &arbiterv1.QueueUsage{Queue: q, Usage: copyFloats(l.Queues[q])})
	}
	return out
}

// UsageCapacity is the ledger's capacity as Snapshot.usage_capacity.
func (l *Ledger) UsageCapacity() map[string]float64 { return copyFloats(l.Capacity) }

func copyFloats(m map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
