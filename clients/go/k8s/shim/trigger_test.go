package shim

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

const (
	testPeriod = time.Second
	testGap    = 50 * time.Millisecond
	// triggerWait bounds every wait on the loop's goroutine (real time; the trigger's is fake).
	triggerWait = 10 * time.Second
)

// triggerRun is a cycleTrigger running on a fake clock, whose cycles last until the test ends
// them, and which reports the due time it sets after each cycle.
type triggerRun struct {
	t       *testing.T
	clock   *clocktesting.FakeClock
	trigger *cycleTrigger
	started chan time.Time // each cycle's start, by the fake clock
	release chan struct{}  // ends the running cycle
	armed   chan time.Time
}

func startTrigger(t *testing.T, period, minGap time.Duration) *triggerRun {
	t.Helper()
	r := &triggerRun{
		t: t, clock: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		started: make(chan time.Time, 16), release: make(chan struct{}), armed: make(chan time.Time),
	}
	r.trigger = newCycleTrigger(r.clock, period, minGap)
	r.trigger.armed = func(due time.Time) { r.armed <- due }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.trigger.Run(ctx, func(ctx context.Context) {
			r.started <- r.clock.Now()
			select {
			case <-r.release:
			case <-ctx.Done():
			}
		})
	}()
	t.Cleanup(func() {
		cancel()
		go func() { // an await blocked on telling the test of its due time
			for range r.armed {
			}
		}()
		<-done
		close(r.armed)
	})
	return r
}

// cycleStarts waits for the next cycle and checks that it started at want.
func (r *triggerRun) cycleStarts(want time.Time) {
	r.t.Helper()
	select {
	case got := <-r.started:
		if !got.Equal(want) {
			r.t.Fatalf("cycle started %v after it was due", got.Sub(want))
		}
	case <-time.After(triggerWait):
		r.t.Fatalf("no cycle started (want one at %v)", want)
	}
}

// endCycle ends the running cycle, at the fake clock's now.
func (r *triggerRun) endCycle() time.Time {
	r.t.Helper()
	end := r.clock.Now()
	select {
	case r.release <- struct{}{}:
	case <-time.After(triggerWait):
		r.t.Fatal("no cycle running")
	}
	return end
}

// dueAt waits until the loop sets the next cycle's due time and checks it is want.
func (r *triggerRun) dueAt(want time.Time) {
	r.t.Helper()
	select {
	case got := <-r.armed:
		if !got.Equal(want) {
			r.t.Fatalf("next cycle due at %v, want %v", got.Format(time.StampMicro), want.Format(time.StampMicro))
		}
	case <-time.After(triggerWait):
		r.t.Fatal("the loop set no due time")
	}
}

// noCycle checks that no cycle starts now and that the due time stays, by giving the loop a
// moment to change either.
func (r *triggerRun) noCycle() {
	r.t.Helper()
	select {
	case got := <-r.started:
		r.t.Fatalf("a cycle started at %v without cause", got)
	case got := <-r.armed:
		r.t.Fatalf("the next cycle was brought forward to %v without cause", got)
	case <-time.After(50 * time.Millisecond):
	}
}

func TestTriggerWithoutCauseRunsACycleEveryPeriodAfterTheLastEnded(t *testing.T) {
	r := startTrigger(t, testPeriod, testGap)
	start := r.clock.Now()
	r.cycleStarts(start) // the first at once
	for i := 0; i < 3; i++ {
		r.clock.Step(200 * time.Millisecond) // the cycle takes a while
		end := r.endCycle()
		r.dueAt(end.Add(testPeriod))
		r.clock.Step(testPeriod - time.Nanosecond)
		r.noCycle()
		r.clock.Step(time.Nanosecond)
		r.cycleStarts(end.Add(testPeriod))
	}
}

func TestTriggerCausesDuringACycleStartOneCycleAfterTheGap(t *testing.T) {
	r := startTrigger(t, testPeriod, testGap)
	r.cycleStarts(r.clock.Now())
	for i := 0; i < 3; i++ {
		r.trigger.Notify()
	}
	r.clock.Step(time.Millisecond)
	end := r.endCycle()
	r.dueAt(end.Add(testPeriod))
	r.dueAt(end.Add(testGap)) // brought forward by the causes
	r.clock.Step(testGap)
	r.cycleStarts(end.Add(testGap))
	// The three causes started that one cycle: the next is due a period after it.
	end = r.endCycle()
	r.dueAt(end.Add(testPeriod))
}

func TestTriggerCausesDuringTheGapStartOneCycleAtItsEnd(t *testing.T) {
	r := startTrigger(t, testPeriod, testGap)
	r.cycleStarts(r.clock.Now())
	end := r.endCycle()
	r.dueAt(end.Add(testPeriod))
	r.clock.Step(testGap / 2)
	r.trigger.Notify()
	r.dueAt(end.Add(testGap)) // from the end of the cycle, not from the cause
	for i := 0; i < 5; i++ {
		r.trigger.Notify() // a stream of causes does not start the cycle any sooner
	}
	r.clock.Step(testGap/2 - time.Nanosecond)
	r.noCycle()
	r.clock.Step(time.Nanosecond)
	r.cycleStarts(end.Add(testGap))
	// The cycle covered the causes of the gap: none is left for another one.
	end = r.endCycle()
	r.dueAt(end.Add(testPeriod))
	r.noCycle()
}

func TestTriggerCauseAfterTheGapStartsACycleAtOnce(t *testing.T) {
	r := startTrigger(t, testPeriod, testGap)
	r.cycleStarts(r.clock.Now())
	end := r.endCycle()
	r.dueAt(end.Add(testPeriod))
	r.clock.Step(3 * testGap)
	r.trigger.Notify()
	r.cycleStarts(end.Add(3 * testGap))
}

func TestTriggerStreamOfCausesKeepsTheGapBetweenCycles(t *testing.T) {
	r := startTrigger(t, testPeriod, testGap)
	r.cycleStarts(r.clock.Now())
	for i := 0; i < 4; i++ {
		r.trigger.Notify() // a pod arrives during every cycle
		r.clock.Step(10 * time.Millisecond)
		end := r.endCycle()
		r.dueAt(end.Add(testPeriod))
		r.dueAt(end.Add(testGap))
		r.clock.Step(testGap)
		r.cycleStarts(end.Add(testGap))
	}
}

func TestTriggerGapIsHeldToThePeriod(t *testing.T) {
	tests := []struct {
		name           string
		period, minGap time.Duration
		want           time.Duration
	}{
		{"GapBelowThePeriod", time.Second, testGap, testGap},
		{"GapAboveThePeriod", time.Second, 5 * time.Second, time.Second},
		{"NegativeGap", time.Second, -time.Second, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := newCycleTrigger(clocktesting.NewFakeClock(time.Time{}), tc.period, tc.minGap).minGap; got != tc.want {
				t.Errorf("minGap = %v, want %v", got, tc.want)
			}
		})
	}
}
