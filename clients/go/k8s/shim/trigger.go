package shim

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// cycleTrigger decides when each scheduling cycle starts. A cycle is due period after the
// previous one ended; a cause (Notify: a pod to place, room freed) brings it forward to minGap
// after the previous one ended, or to at once if that is past. Causes that come together, or
// while a cycle runs, start one cycle between them, and none of them is lost: the snapshot of a
// cycle covers every cause notified before it started.
//
// minGap bounds how often a stream of causes can start cycles, so that each cycle has time to
// bind before the next takes the CPU for its snapshot; period is the fallback, for whatever the
// causes do not cover (time-aware fairness moving, a Schedule call that failed).
type cycleTrigger struct {
	clock  clock.Clock
	period time.Duration
	minGap time.Duration
	// causes holds at most one cause not yet acted on: more coalesce into it.
	causes chan struct{}
	// armed, when set (tests), is told each time the next cycle's due time is set.
	armed func(due time.Time)
}

// newCycleTrigger returns a trigger; minGap is held to [0, period].
func newCycleTrigger(c clock.Clock, period, minGap time.Duration) *cycleTrigger {
	return &cycleTrigger{
		clock: c, period: period, minGap: min(max(minGap, 0), period),
		causes: make(chan struct{}, 1),
	}
}

// Notify records a cause for a cycle. It never blocks, and is safe from any goroutine (the
// informers' event handlers call it).
func (t *cycleTrigger) Notify() {
	select {
	case t.causes <- struct{}{}:
	default: // one is pending already; the cycle it starts covers this one too
	}
}

// Run calls cycle at once, then each time the next cycle is due, until ctx ends. Cycles never
// overlap.
func (t *cycleTrigger) Run(ctx context.Context, cycle func(context.Context)) {
	for ctx.Err() == nil {
		// The cycle's snapshot sees every change notified so far: the informers update their
		// caches before they call the event handlers.
		select {
		case <-t.causes:
		default:
		}
		cycle(ctx)
		if !t.await(ctx, t.clock.Now()) {
			return
		}
	}
}

// await waits until the cycle after the one that ended at end is due; false if ctx ended first.
func (t *cycleTrigger) await(ctx context.Context, end time.Time) bool {
	due := end.Add(t.period)
	causes := t.causes
	for {
		timer := t.clock.NewTimer(due.Sub(t.clock.Now()))
		if t.armed != nil {
			t.armed(due)
		}
		select {
		case <-ctx.Done():
			timer.Stop()
			return false
		case <-timer.C():
			return true
		case <-causes:
			timer.Stop()
			causes = nil // one cause sets the due time; later ones change nothing
			due = end.Add(t.minGap)
			if !t.clock.Now().Before(due) {
				return true
			}
		}
	}
}
