package shim

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/testing/protocmp"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
	"arbiter.dev/clients/go/test/e2e"
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

// TestRealDumpedSnapshotReplaysWithTheCLI checks that a --dump-snapshot file, written from a
// real API server's objects, is a request that `arbiter schedule` (the CLI built next to
// arbiter-server) answers as the server did.
func TestRealDumpedSnapshotReplaysWithTheCLI(t *testing.T) {
	cli := e2e.ArbiterCLI(t)
	dir := t.TempDir()
	c := newCluster(t, clusterOpts{cfg: Config{DumpDir: dir}})
	c.apply(kwokNode("n1", "8", 4), kwokNode("n2", "8", 4),
		pod(podSpec{name: "train-0", group: "train", minMember: 2, queue: "team-a", gpus: 2, cpu: "1"}),
		pod(podSpec{name: "train-1", group: "train", minMember: 2, queue: "team-a", gpus: 2, cpu: "1"}),
		pod(podSpec{name: "solo", queue: "team-b", gpus: 4}))
	c.cycle()
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
	if len(c.rec.resp.GetBindings()) != 3 {
		t.Fatalf("the server bound %d pods, want 3; the replay would prove little:\n%s", len(c.rec.resp.GetBindings()), c.rec)
	}
	if diff := cmp.Diff(c.rec.resp, replayed, protocmp.Transform()); diff != "" {
		t.Errorf("replayed answer differs from the server's (-server +cli):\n%s", diff)
	}
}
