package main

// End-to-end tests of the arbiter-k8s binary: each starts a real control plane (etcd,
// kube-apiserver with an audit log of every binding, kube-controller-manager, kwok nodes), a real
// arbiter-server, and runs the command as separate processes, which it kills or stops the way a
// node failure or a rolling update would. They need $ARBITER_K8S_BIN_DIR and $ARBITER_SERVER_BIN,
// and are skipped without them (see package test/e2e).

import (
	"fmt"
	"math"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection"

	"arbiter.dev/clients/go/k8s/usage"
	"arbiter.dev/clients/go/test/controlplane"
	"arbiter.dev/clients/go/test/e2e"
)

// lostSave names the regression the stop tests guard: arbiter-k8s exiting on SIGTERM before its
// usage ledger is saved (run returned once the election had released the Lease, without waiting
// for the shim, which saves the ledger on its way out).
const lostSave = "arbiter-k8s must save the usage ledger before it exits on SIGTERM"

// pair is two replicas of the command with their own identities, one of which leads.
type pair struct {
	c                *cluster
	leader, follower *replica
	holder           string // the Lease's holderIdentity while leader leads
}

// startPair starts two replicas with args and waits until exactly one of them leads, by its
// arbiter_k8s_leader gauge and the Lease, and checks that it stays so for a while.
func startPair(t *testing.T, args ...string) *pair {
	t.Helper()
	users := []controlplane.User{
		controlplane.ServiceAccount(systemNS, "arbiter-k8s-0"),
		controlplane.ServiceAccount(systemNS, "arbiter-k8s-1"),
	}
	c := newCluster(t, users...)
	rs := []*replica{
		c.startReplica(t, "replica-0", users[0], args...),
		c.startReplica(t, "replica-1", users[1], args...),
	}
	p := &pair{c: c}
	leading := func() ([]*replica, string) {
		var out []*replica
		var errs []string
		for _, r := range rs {
			l, err := r.leader()
			if err != nil {
				errs = append(errs, err.Error())
			}
			if l {
				out = append(out, r)
			}
		}
		return out, fmt.Sprint(errs)
	}
	waitFor(t, "exactly one replica leading and holding the Lease", 30*time.Second, 100*time.Millisecond, func() (bool, string) {
		l, errs := leading()
		holder, err := c.leaseHolder()
		if err != nil {
			return false, err.Error()
		}
		if len(l) != 1 || holder == "" {
			return false, fmt.Sprintf("%d leading, holder %q, errors %s", len(l), holder, errs)
		}
		p.leader, p.holder = l[0], holder
		return true, ""
	})
	for _, r := range rs {
		if r != p.leader {
			p.follower = r
		}
	}
	// Several renewals later, still the same one leader.
	for i := 0; i < 5; i++ {
		time.Sleep(300 * time.Millisecond)
		l, errs := leading()
		holder, err := c.leaseHolder()
		if err != nil {
			t.Fatal(err)
		}
		if len(l) != 1 || l[0] != p.leader || holder != p.holder {
			t.Fatalf("leadership moved without cause: %d leading, holder %q (was %s, %q), errors %s", len(l), holder, p.leader.name, p.holder, errs)
		}
	}
	t.Logf("%s leads as %q; %s follows", p.leader.name, p.holder, p.follower.name)
	return p
}

// takeover is what the follower did after the leader stopped, each time measured from the stop.
type takeover struct {
	lease     time.Duration // the Lease names a new holder
	firstBind time.Duration // the audit log shows the follower's first binding
	newHolder string
	err       error
}

// watchTakeover polls, from stopped on, the Lease for a holder other than old and the audit log
// for a binding of one of pods by user; it gives up after timeout.
func (c *cluster) watchTakeover(stopped time.Time, old, user string, pods []string, timeout time.Duration) <-chan takeover {
	ch := make(chan takeover, 1)
	go func() {
		var res takeover
		defer func() { ch <- res }()
		for time.Since(stopped) < timeout {
			if res.lease == 0 {
				holder, err := c.leaseHolder()
				if err == nil && holder != "" && holder != old {
					res.lease, res.newHolder = time.Since(stopped), holder
				}
			}
			if res.firstBind == 0 {
				events, err := c.cp.Audit()
				if err == nil {
					for _, e := range events {
						if e.Subresource == "binding" && e.Namespace == workNS && e.User == user && e.Code == 201 && has(pods, e.Pod) {
							res.firstBind = time.Since(stopped)
							break
						}
					}
				}
			}
			if res.lease > 0 && res.firstBind > 0 {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		res.err = fmt.Errorf("after %v: lease taken after %v (holder %q), first binding after %v", timeout, res.lease, res.newHolder, res.firstBind)
	}()
	return ch
}

func has(names []string, n string) bool {
	for _, m := range names {
		if m == n {
			return true
		}
	}
	return false
}

// handover runs the scenario both leader tests share: pods bound by the leader; the leader
// stopped with sig; new pods bound by the follower once it took the Lease over. It returns the
// takeover times.
func handover(t *testing.T, p *pair, sig syscall.Signal) takeover {
	sigName := map[syscall.Signal]string{syscall.SIGKILL: "SIGKILL", syscall.SIGTERM: "SIGTERM"}[sig]
	t.Helper()
	c := p.c
	first := c.createPods(t, "first", 20)
	c.waitBound(t, first, 30*time.Second)
	b := c.bindings(t)
	b.checkEachBoundOnce(t, first, p.leader.user)
	if n, err := p.follower.metric("arbiter_k8s_binds_total"); err != nil || n != 0 {
		t.Errorf("the follower's arbiter_k8s_binds_total = %v (%v), want 0", n, err)
	}
	// Two whole cycles with the pods running, so that the leader's ledger records their usage
	// before it stops.
	p.leader.waitCycles(t, 3, 15*time.Second)
	if sig == syscall.SIGTERM {
		// The precondition of the save on the way out: nothing saved the usage before it (the
		// save interval is an hour), so that a ledger found after the stop can only be that save.
		if l := c.ledger(t); queueCPU(l) != 0 {
			t.Fatalf("the usage ConfigMap holds %+v before %s: a save before the stop would hide a lost one", l, sigName)
		}
	}

	// The pods the follower is to bind are named before they exist, so that the watcher, which
	// starts at once, can recognise their bindings.
	second := make([]string, 20)
	for i := range second {
		second[i] = fmt.Sprintf("second-%d", i)
	}
	stopped := time.Now()
	var watch <-chan takeover
	if sig == syscall.SIGKILL {
		p.leader.kill()
		watch = c.watchTakeover(stopped, p.holder, p.follower.user, second, 30*time.Second)
	} else {
		watch = c.watchTakeover(stopped, p.holder, p.follower.user, second, 30*time.Second)
		if !p.leader.stop(sig, 15*time.Second) {
			t.Errorf("%s did not exit within 15s of %s", p.leader.name, sigName)
		} else if p.leader.err != nil {
			t.Errorf("%s exited with %v after %s, want 0", p.leader.name, p.leader.err, sigName)
		}
		t.Logf("%s exited %v after %s", p.leader.name, time.Since(stopped).Round(time.Millisecond), sigName)
	}
	if got := c.createPods(t, "second", len(second)); fmt.Sprint(got) != fmt.Sprint(second) {
		t.Fatalf("created %v, want %v", got, second)
	}
	res := <-watch
	if res.err != nil {
		t.Fatalf("no takeover: %v", res.err)
	}
	t.Logf("after %s of the leader: the Lease names %q after %v; the follower's first binding after %v",
		sigName, res.newHolder, res.lease.Round(time.Millisecond), res.firstBind.Round(time.Millisecond))
	if l, err := p.follower.leader(); err != nil || !l {
		t.Errorf("%s does not report itself leader after the takeover (%v)", p.follower.name, err)
	}

	c.waitBound(t, second, 30*time.Second)
	b = c.bindings(t)
	b.checkEachBoundOnce(t, second, p.follower.user)
	conflicts := b.checkEachBoundOnce(t, append(first, second...), p.leader.user, p.follower.user)
	if n := b.createdBy(p.leader.user, nil); n != len(first) {
		t.Errorf("the old leader made %d bindings, want %d (only the first pods)", n, len(first))
	}
	t.Logf("%d pods bound, each once; %d conflicts (409)", len(first)+len(second), conflicts)
	return res
}

// TestTwoReplicasOneLeadsAndTheOtherTakesOverWithinTheLease runs two replicas with a 4s Lease.
// Exactly one leads and binds; once it is killed (SIGKILL: no release), the other takes the
// Lease over as soon as it has expired and binds the pods created since. The audit log shows who
// bound what, and that no pod was bound twice.
func TestTwoReplicasOneLeadsAndTheOtherTakesOverWithinTheLease(t *testing.T) {
	const (
		leaseDuration = 4 * time.Second
		retryPeriod   = 500 * time.Millisecond
		latency       = time.Second // API calls on a busy machine
	)
	start := time.Now()
	p := startPair(t, append(leaseArgs, "--usage-save-interval=1s")...)
	res := handover(t, p, syscall.SIGKILL)

	// The follower notices an expired Lease by polling it every RetryPeriod, stretched by up to
	// JitterFactor: it may see the leader's last renewal one such poll late, and the expiry
	// one poll late again. It must not take an unexpired Lease: the last renewal was at most
	// one RetryPeriod before the kill.
	jittered := time.Duration(float64(retryPeriod) * (1 + leaderelection.JitterFactor))
	if most := leaseDuration + 2*jittered + latency; res.lease > most {
		t.Errorf("the follower took the Lease %v after the kill, want at most %v (lease %v + 2 jittered retries %v)",
			res.lease, most, leaseDuration, jittered)
	}
	if least := leaseDuration - retryPeriod - latency; res.lease < least {
		t.Errorf("the follower took the Lease %v after the kill, before it could have expired (%v)", res.lease, least)
	}
	if res.firstBind-res.lease > 3*time.Second {
		t.Errorf("the follower's first binding came %v after it took the Lease, want a cycle's time", res.firstBind-res.lease)
	}
	t.Logf("test took %v", time.Since(start).Round(time.Millisecond))
}

// TestGracefulStopReleasesTheLeaseAtOnce stops the leader with SIGTERM, as a rolling update does:
// it releases the Lease, so the follower takes over within a retry period or two, not after the
// Lease (10s here) expires. The stopped leader saves the usage ledger on its way out, and the
// new leader continues from it.
func TestGracefulStopReleasesTheLeaseAtOnce(t *testing.T) {
	const (
		leaseDuration = 10 * time.Second
		retryPeriod   = 500 * time.Millisecond
		latency       = time.Second // API calls on a busy machine
	)
	start := time.Now()
	// The ledger is saved only on shutdown: an hour never passes here.
	p := startPair(t, "--lease-duration=10s", "--renew-deadline=8s", "--retry-period=500ms", "--usage-save-interval=1h")
	res := handover(t, p, syscall.SIGTERM)
	jittered := time.Duration(float64(retryPeriod) * (1 + leaderelection.JitterFactor))
	if most := jittered + latency; res.lease > most {
		t.Errorf("the follower took the Lease %v after SIGTERM, want at most %v (one jittered retry): was it released?", res.lease, most)
	}
	if res.lease >= leaseDuration {
		t.Errorf("the follower waited for the Lease to expire (%v)", res.lease)
	}

	saved := p.c.ledger(t)
	if queueCPU(saved) <= 0 {
		t.Errorf(lostSave+": after %s stopped, the usage ConfigMap holds %+v, want the ledger it saved on its way out (cpu usage of %s > 0)",
			p.leader.name, saved, queueName)
	}
	// The new leader saves on its way out too; its ledger must continue the one it took over.
	if !p.follower.stop(syscall.SIGTERM, 15*time.Second) {
		t.Errorf("%s did not exit within 15s of SIGTERM", p.follower.name)
	}
	if saved != nil {
		if msg := continues(saved, p.c.ledger(t)); msg != "" {
			t.Errorf(lostSave+": %s's ledger after %s's: %s", p.follower.name, p.leader.name, msg)
		}
	}
	t.Logf("test took %v", time.Since(start).Round(time.Millisecond))
}

// continues says how the ledger after fails to be the ledger before advanced by the time between
// them ("" when it is): a ledger that went back, or one started anew, whose capacity (constant
// here) did not accrue for that whole time.
func continues(before, after *usage.Ledger) string {
	switch {
	case before == nil || after == nil:
		return fmt.Sprintf("no ledger to compare: before %+v, after %+v", before, after)
	case after.Updated.Before(before.Updated) || queueCPU(after) < queueCPU(before):
		return fmt.Sprintf("the ledger went back: before %+v, after %+v", before, after)
	}
	capacity := float64(nodeCount * nodeCPU * 1000) // millicores
	dt := after.Updated.Sub(before.Updated).Seconds()
	want := before.Capacity["cpu"] + capacity*dt
	if got := after.Capacity["cpu"]; math.Abs(got-want) > 1e-3*want {
		return fmt.Sprintf("cpu capacity-time = %.0f, want %.0f (%.0f before + %.0f × %.3fs): not continued from the saved ledger",
			got, want, before.Capacity["cpu"], capacity, dt)
	}
	// The pods bound before the first save kept running: the queue's usage grew by at least one
	// pod's request over the interval.
	if got, least := queueCPU(after), queueCPU(before)+float64(podMilliCPU)*dt; got < least*(1-1e-3) {
		return fmt.Sprintf("queue cpu usage = %.0f, want at least %.0f", got, least)
	}
	return ""
}

// TestRestartMidCycleLosesNoPodAndBindsNoneTwice kills the only replica (SIGKILL) while it is
// binding a few hundred pods, slowed down by a low API rate limit, then starts it again. Every
// pod ends up bound exactly once, and the usage ledger, saved every second, survives the kill and
// is continued by the restarted process rather than started anew.
func TestRestartMidCycleLosesNoPodAndBindsNoneTwice(t *testing.T) {
	const many = 300
	start := time.Now()
	user := controlplane.ServiceAccount(systemNS, "arbiter-k8s")
	c := newCluster(t, user)
	// At most 40 API requests a second: binding 300 pods takes several seconds.
	args := append(leaseArgs, "--usage-save-interval=1s", "--kube-api-qps=40", "--kube-api-burst=10")
	first := c.startReplica(t, "first-run", user, args...)

	// A few pods run first, so that the ledger has usage to save before the kill.
	warm := c.createPods(t, "warm", 10)
	c.waitBound(t, warm, 30*time.Second)
	waitFor(t, "usage of the running pods saved", 15*time.Second, 200*time.Millisecond, func() (bool, string) {
		l := c.ledger(t)
		return queueCPU(l) > 0, fmt.Sprintf("%+v", l)
	})

	pods := c.createPods(t, "many", many)
	var boundBefore int
	waitFor(t, "some but not all pods bound", 30*time.Second, 20*time.Millisecond, func() (bool, string) {
		b := c.bindings(t)
		boundBefore = 0
		for _, p := range pods {
			boundBefore += b.created(p)
		}
		return boundBefore >= 20, fmt.Sprintf("%d bound", boundBefore)
	})
	killed := time.Now()
	first.kill()
	if boundBefore >= many {
		t.Fatalf("all %d pods were bound before the kill: slow the binding down", many)
	}
	left, err := c.unbound(pods)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) == 0 {
		t.Fatalf("all %d pods were bound by the time the process was dead", many)
	}
	t.Logf("killed the scheduler with %d of %d pods bound by the audit log, %d unbound once it was dead",
		boundBefore, many, len(left))

	saved := c.ledger(t)
	if queueCPU(saved) <= 0 || saved.Updated.IsZero() || saved.Updated.After(killed) {
		t.Fatalf("usage ConfigMap after the kill holds %+v, want a ledger saved before it with usage for %s", saved, queueName)
	}
	t.Logf("ledger saved %v before the kill: %s used %.0f millicore-seconds",
		killed.Sub(saved.Updated).Round(time.Millisecond), queueName, queueCPU(saved))

	restarted := time.Now()
	c.startReplica(t, "second-run", user, args...)
	all := append(warm, pods...)
	c.waitBoundAcrossKill(t, all, restarted, 45*time.Second)
	t.Logf("all %d pods bound %v after the restart (the old Lease had to expire first)", len(all), time.Since(restarted).Round(time.Millisecond))
	b := c.bindings(t)
	conflicts := b.checkEachBoundOnceAcrossKill(t, all, restarted, user.Name)
	t.Logf("%d pods bound, each exactly once; %d conflicts (409)", len(all), conflicts)

	var after *usage.Ledger
	waitFor(t, "the restarted process saving the ledger", 15*time.Second, 200*time.Millisecond, func() (bool, string) {
		after = c.ledger(t)
		return after != nil && after.Updated.After(restarted), fmt.Sprintf("%+v", after)
	})
	if msg := continues(saved, after); msg != "" {
		t.Errorf("ledger after the restart: %s", msg)
	}
	t.Logf("ledger after the restart: %s used %.0f millicore-seconds (%.0f before the kill)", queueName, queueCPU(after), queueCPU(saved))
	t.Logf("test took %v", time.Since(start).Round(time.Millisecond))
}

// TestGracefulStopMidBindingSavesTheUsageAndHandsOverCleanly stops the leader with SIGTERM while
// it is binding a few hundred pods behind a low API rate limit. It must save the usage ledger
// before it exits (the only save here: the interval is an hour), and it must have stopped
// binding before the follower, which takes the released Lease, binds anything.
func TestGracefulStopMidBindingSavesTheUsageAndHandsOverCleanly(t *testing.T) {
	const many = 300
	start := time.Now()
	p := startPair(t, "--lease-duration=10s", "--renew-deadline=8s", "--retry-period=500ms",
		"--usage-save-interval=1h", "--kube-api-qps=40", "--kube-api-burst=10")
	c := p.c
	warm := c.createPods(t, "warm", 10)
	c.waitBound(t, warm, 30*time.Second)
	p.leader.waitCycles(t, 3, 15*time.Second) // two whole cycles with the warm pods running
	// The precondition of the save on the way out: nothing saved the usage before it (the save
	// interval is an hour), so that a ledger found after the stop can only be that save.
	if l := c.ledger(t); queueCPU(l) != 0 {
		t.Fatalf("the usage ConfigMap holds %+v before SIGTERM: a save before the stop would hide a lost one", l)
	}

	pods := c.createPods(t, "many", many)
	waitFor(t, "some pods bound", 30*time.Second, 20*time.Millisecond, func() (bool, string) {
		n := c.bindings(t).createdBy(p.leader.user, pods)
		return n >= 20, fmt.Sprintf("%d bound", n)
	})
	stopped := time.Now()
	if !p.leader.stop(syscall.SIGTERM, 15*time.Second) {
		t.Fatalf("%s did not exit within 15s of SIGTERM", p.leader.name)
	}
	exited := time.Since(stopped)
	b := c.bindings(t)
	t.Logf("%s exited %v after SIGTERM (%v) with %d of %d pods bound", p.leader.name, exited.Round(time.Millisecond),
		p.leader.err, b.createdBy(p.leader.user, pods), many)

	if l := c.ledger(t); queueCPU(l) <= 0 {
		t.Errorf(lostSave+": after %s exited, the usage ConfigMap holds %+v, want the ledger it saved on its way out", p.leader.name, l)
	}

	all := append(warm, pods...)
	c.waitBound(t, all, 45*time.Second)
	b = c.bindings(t)
	conflicts := b.checkEachBoundOnce(t, all, p.leader.user, p.follower.user)
	// In the audit log's order, every binding call of the old leader comes before the first of
	// the new one.
	events, err := c.cp.Audit()
	if err != nil {
		t.Fatal(err)
	}
	lastOld, firstNew := -1, -1
	for i, e := range events {
		if e.Subresource != "binding" {
			continue
		}
		if e.User == p.leader.user {
			lastOld = i
		}
		if e.User == p.follower.user && firstNew < 0 {
			firstNew = i
		}
	}
	if firstNew < 0 || lastOld > firstNew {
		t.Errorf("the old leader's last binding call is audit event %d, the new leader's first %d: both bound at once", lastOld, firstNew)
	}
	t.Logf("%d pods bound, each once; %d conflicts (409); test took %v", len(all), conflicts, time.Since(start).Round(time.Millisecond))
}

// TestSchedulesWithinSecondsOfTheServersReturnAfterAnOutage (issue 32): arbiter-server is away
// for 30s, long enough for gRPC's own reconnect backoff (1s growing by 1.6 up to 120s) to wait
// about 17s between attempts. With the default --reconnect-backoff, a pod created during the
// outage is bound within seconds of the server's return.
func TestSchedulesWithinSecondsOfTheServersReturnAfterAnOutage(t *testing.T) {
	port, err := controlplane.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	server := e2e.StartArbiterServer(t, port)
	c := newCluster(t, controlplane.ServiceAccount(systemNS, "replica-a"))
	c.startReplica(t, "replica", controlplane.ServiceAccount(systemNS, "replica-a"),
		"--leader-elect=false", "--server="+server.Addr)
	c.waitBound(t, c.createPods(t, "before", 2), 30*time.Second)

	server.Stop()
	const outage = 30 * time.Second
	stopped := time.Now()
	during := c.createPods(t, "during", 2)
	time.Sleep(outage - time.Since(stopped))
	if left, err := c.unbound(during); err != nil || len(left) != len(during) {
		t.Fatalf("pods bound while arbiter-server was down: unbound %v (%v)", left, err)
	}
	e2e.StartArbiterServer(t, port)
	back := time.Now()
	c.waitBound(t, during, 60*time.Second)
	took := time.Since(back)
	t.Logf("after a %s outage, bound %s after the server's return", outage, took.Round(100*time.Millisecond))
	if took > 8*time.Second {
		t.Errorf("bound %s after arbiter-server's return, want within a few seconds", took.Round(100*time.Millisecond))
	}
}
