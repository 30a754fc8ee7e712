package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"arbiter.dev/clients/go/test/controlplane"
	"arbiter.dev/clients/go/test/e2e"
)

var repoRoot = filepath.Join("..", "..", "..", "..", "..")

// TestHelpPrintsTheUsageAtOnce (issue 32): local-cluster.sh --help prints its usage and exits,
// building nothing: here neither go nor arbiter-server is there to build or run.
func TestHelpPrintsTheUsageAtOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(repoRoot, "tests", "k8s", "local-cluster.sh"), "--help")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "ARBITER_SERVER_BIN=/nonexistent/arbiter-server", "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("local-cluster.sh --help: %v\n%s", err, out)
	}
	for _, want := range []string{"tests/k8s/local-cluster.sh [--extender]", "--check"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("--help does not mention %q:\n%s", want, out)
		}
	}
}

// TestExtenderModeRunsTheExamplesThroughKubeScheduler (issue 32): with --extender the trial runs
// kube-scheduler with the chart's extender configuration and arbiter-extender with the overlay's
// RBAC, instead of arbiter-k8s; the example manifests' pods are all bound and running.
func TestExtenderModeRunsTheExamplesThroughKubeScheduler(t *testing.T) {
	server := os.Getenv("ARBITER_SERVER_BIN")
	if server == "" || os.Getenv(controlplane.BinDirEnv) == "" {
		if os.Getenv("ARBITER_REQUIRE_K8S") != "" {
			t.Fatal("ARBITER_SERVER_BIN and " + controlplane.BinDirEnv + " are needed (ARBITER_REQUIRE_K8S is set)")
		}
		t.Skip("ARBITER_SERVER_BIN or " + controlplane.BinDirEnv + " is not set")
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	err = run(ctx, options{
		dir:             filepath.Join(t.TempDir(), "local"),
		repo:            root,
		arbiterServer:   server,
		arbiterExtender: e2e.Binary(t, "arbiter.dev/clients/go/cmd/arbiter-extender"),
		extender:        true,
		nodes:           4, cpu: "32", memory: "256Gi", gpus: 8,
		check:   []string{filepath.Join(root, "examples", "k8s", "two-teams.yaml")},
		timeout: 2 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
}
