package shim

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
	"arbiter.dev/clients/go/client"
	"arbiter.dev/clients/go/internal/e2e"
)

// recordingScheduler keeps the last exchange so that a failing assertion can show it.
type recordingScheduler struct {
	Scheduler
	req  *arbiterv1.ScheduleRequest
	resp *arbiterv1.ScheduleResponse
}

func (r *recordingScheduler) Schedule(ctx context.Context, req *arbiterv1.ScheduleRequest) (*arbiterv1.ScheduleResponse, error) {
	resp, err := r.Scheduler.Schedule(ctx, req)
	r.req, r.resp = req, resp
	return resp, err
}

func (r *recordingScheduler) String() string {
	return "request: " + protojson.Format(r.req) + "\nresponse: " + protojson.Format(r.resp)
}

// TestEndToEndWithArbiterServer runs the shim against the real arbiter-server built from this
// repository: a fake cluster, real informers, two cycles each, and the Binding and Eviction calls
// that result.
func TestEndToEndWithArbiterServer(t *testing.T) {
	addr := e2e.ArbiterServer(t)
	arbiter, err := client.Dial(client.Config{Target: addr, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer arbiter.Close()

	t.Run("GangIsBoundWholeAndAGangThatCannotFitIsNot", func(t *testing.T) {
		rec := &recordingScheduler{Scheduler: arbiter}
		defer func() {
			if t.Failed() {
				t.Logf("last exchange with arbiter-server:\n%s", rec)
			}
		}()
		h := newHarness(t, harnessOpts{scheduler: rec}, queueConfigMap(twoTeams),
			node("n1", "8", 4), node("n2", "8", 4),
			pod(podSpec{name: "train-0", group: "train", minMember: 2, queue: "team-a", gpus: 4}),
			pod(podSpec{name: "train-1", group: "train", minMember: 2, queue: "team-a", gpus: 4}),
			pod(podSpec{name: "huge-0", group: "huge", minMember: 3, queue: "team-b", gpus: 4}),
			pod(podSpec{name: "huge-1", group: "huge", minMember: 3, queue: "team-b", gpus: 4}),
			pod(podSpec{name: "huge-2", group: "huge", minMember: 3, queue: "team-b", gpus: 4}))
		h.cycle()
		h.waitBound("ml", "train-0")
		h.waitBound("ml", "train-1")
		h.cycle()

		got := h.calls()
		if len(got) != 2 {
			t.Fatalf("calls = %v, want one binding per gang member", got)
		}
		nodes := map[string]string{}
		for _, c := range got {
			if c.verb != "bind" {
				t.Errorf("unexpected %v", c)
			}
			nodes[c.name] = c.node
		}
		if nodes["train-0"] == "" || nodes["train-1"] == "" || nodes["train-0"] == nodes["train-1"] {
			t.Errorf("gang placed as %v, want train-0 and train-1 on different nodes", nodes)
		}
		h.waitPod("ml", "huge-0", func(p *corev1.Pod) bool {
			return p != nil && len(p.Status.Conditions) == 1 && p.Status.Conditions[0].Status == corev1.ConditionFalse
		})
	})

	t.Run("ReclaimEvictsAVictimThenBindsTheReclaimerInItsPlace", func(t *testing.T) {
		rec := &recordingScheduler{Scheduler: arbiter}
		defer func() {
			if t.Failed() {
				t.Logf("last exchange with arbiter-server:\n%s", rec)
			}
		}()
		h := newHarness(t, harnessOpts{scheduler: rec}, queueConfigMap(twoTeams),
			node("n1", "8", 4), node("n2", "8", 4),
			// team-a borrowed team-b's share while team-b had nothing to run.
			pod(podSpec{name: "a-0", queue: "team-a", gpus: 4, node: "n1"}),
			pod(podSpec{name: "a-1", queue: "team-a", gpus: 4, node: "n2"}),
			pod(podSpec{name: "b-0", queue: "team-b", gpus: 4}))
		h.cycle() // evicts one of team-a's pods; b-0 waits for it (pipelined)
		first := h.calls()
		if len(first) == 0 || first[0].verb != "evict" {
			t.Fatalf("first cycle calls = %v, want the eviction first", first)
		}
		victim := first[0].name
		victimNode := map[string]string{"a-0": "n1", "a-1": "n2"}[victim]
		h.waitGone("ml", victim)
		// b-0 is bound where the victim ran once the live cache shows the victim gone: still in
		// the first cycle when the informer saw the deletion in time, else in this one. Either
		// way the binding comes after the eviction, exactly once.
		h.cycle()

		want := []call{{"evict", "ml", victim, ""}, {"bind", "ml", "b-0", victimNode}}
		if diff := cmp.Diff(want, h.calls(), cmp.AllowUnexported(call{})); diff != "" {
			t.Errorf("calls (-want +got):\n%s", diff)
		}
		var reclaimed bool
		for _, e := range h.events() {
			reclaimed = reclaimed || strings.Contains(e, "Preempted") && strings.Contains(e, "FAIR_SHARE_RECLAIM")
		}
		if !reclaimed {
			t.Error("no Preempted event naming FAIR_SHARE_RECLAIM")
		}
	})
}

// TestDumpedSnapshotReplaysWithTheCLI checks that a --dump-snapshot file is a request that
// `arbiter schedule` (the CLI built next to arbiter-server) answers as the server did.
func TestDumpedSnapshotReplaysWithTheCLI(t *testing.T) {
	addr := e2e.ArbiterServer(t)
	cli := filepath.Join(filepath.Dir(os.Getenv("ARBITER_SERVER_BIN")), "arbiter")
	if _, err := os.Stat(cli); err != nil {
		t.Skipf("no arbiter CLI next to ARBITER_SERVER_BIN (%v)", err)
	}
	arbiter, err := client.Dial(client.Config{Target: addr, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer arbiter.Close()
	rec := &recordingScheduler{Scheduler: arbiter}
	dir := t.TempDir()
	h := newHarness(t, harnessOpts{scheduler: rec, cfg: Config{DumpDir: dir}}, queueConfigMap(twoTeams),
		node("n1", "8", 4), node("n2", "8", 4),
		pod(podSpec{name: "train-0", group: "train", minMember: 2, queue: "team-a", gpus: 2, cpu: "1"}),
		pod(podSpec{name: "train-1", group: "train", minMember: 2, queue: "team-a", gpus: 2, cpu: "1"}),
		pod(podSpec{name: "solo", queue: "team-b", gpus: 4}))
	h.cycle()
	files, err := filepath.Glob(filepath.Join(dir, "schedule-*.json"))
	if err != nil || len(files) != 1 {
		t.Fatalf("dumps = %v (%v), want 1", files, err)
	}
	out, err := exec.Command(cli, "schedule", files[0], "--format", "json").Output()
	if err != nil {
		t.Fatalf("arbiter schedule %s: %v", files[0], err)
	}
	replayed := &arbiterv1.ScheduleResponse{}
	if err := protojson.Unmarshal(out, replayed); err != nil {
		t.Fatalf("CLI output is not a ScheduleResponse: %v\n%s", err, out)
	}
	if len(rec.resp.GetBindings()) == 0 {
		t.Fatalf("the server bound nothing; the replay would prove little:\n%s", rec)
	}
	if diff := cmp.Diff(rec.resp, replayed, protocmp.Transform()); diff != "" {
		t.Errorf("replayed answer differs from the server's (-server +cli):\n%s", diff)
	}
}
