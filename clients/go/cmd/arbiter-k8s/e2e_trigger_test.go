package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"arbiter.dev/clients/go/test/controlplane"
)

// TestLonePodIsBoundWithoutWaitingForThePeriod creates pods one at a time in an idle cluster
// whose replica has a 30-second --period: each is bound within seconds, because its arrival
// starts a cycle, not the next tick. Then, with nothing to do, the replica runs no cycle: its own
// bindings and events, the Lease it renews and kwok's node status start none.
func TestLonePodIsBoundWithoutWaitingForThePeriod(t *testing.T) {
	const (
		period = 30 * time.Second
		// Far below the period, and far above what a cycle takes on a loaded machine.
		bound = 5 * time.Second
	)
	user := controlplane.ServiceAccount(systemNS, "arbiter-k8s")
	c := newCluster(t, user)
	r := c.startReplica(t, "replica", user, append(leaseArgs, "--period="+period.String())...)
	const cycles = "arbiter_k8s_cycle_duration_seconds_count"
	waitFor(t, "the replica leading and done with its first cycle", 30*time.Second, 50*time.Millisecond, func() (bool, string) {
		n, err := r.metric(cycles)
		return err == nil && n >= 1, fmt.Sprintf("%v cycles (%v)", n, err)
	})

	var names []string
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("lone-%d", i)
		names = append(names, name)
		created := time.Now()
		if _, err := c.kube.CoreV1().Pods(workNS).Create(context.Background(), pod(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, name+" bound", bound, 10*time.Millisecond, func() (bool, string) {
			p, err := c.kube.CoreV1().Pods(workNS).Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return p.Spec.NodeName != "", "no node yet"
		})
		t.Logf("%s bound %v after it was created", name, time.Since(created).Round(time.Millisecond))
	}
	c.waitBound(t, names, 10*time.Second) // and the audit log shows each binding
	c.bindings(t).checkEachBoundOnce(t, names, user.Name)

	// Idle: a window with no cause, well inside the period, sees no cycle.
	before, err := r.metric(cycles)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	after, err := r.metric(cycles)
	if err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("%v cycles in 3 s of an idle cluster with a %v period, want none", after-before, period)
	}
	t.Logf("%v cycles in all", after)
}
