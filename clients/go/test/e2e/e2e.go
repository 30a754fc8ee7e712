// Package e2e starts the real programs the end-to-end tests run against: arbiter-server (the
// binary named by $ARBITER_SERVER_BIN) and a Kubernetes control plane (package controlplane,
// binaries in $ARBITER_K8S_BIN_DIR), optionally with Kueue (binary and CRDs in
// $ARBITER_KUEUE_DIR). A test whose program is not configured is skipped, and fails instead
// when $ARBITER_REQUIRE_K8S is set (as `make test` does), so that a missing install step cannot
// pass unnoticed.
package e2e

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"arbiter.dev/clients/go/test/controlplane"
)

// ArbiterServer runs arbiter-server on a free loopback port for the test's duration and returns
// its gRPC address, read from its first line of output. The test is skipped without
// $ARBITER_SERVER_BIN.
func ArbiterServer(t testing.TB, args ...string) string {
	t.Helper()
	return StartArbiterServer(t, 0, args...).Addr
}

// Server is one arbiter-server process.
type Server struct {
	Addr    string // host:port of its gRPC API
	cmd     *exec.Cmd
	stopped sync.Once
}

// Stop stops the server (SIGTERM, then SIGKILL after 10s) and waits until it has exited.
func (s *Server) Stop() { s.stopped.Do(func() { stop(s.cmd, 10*time.Second) }) }

// StartArbiterServer runs arbiter-server on loopback port (0 = a free one) until Stop or the end
// of the test, and returns once it listens. The test is skipped without $ARBITER_SERVER_BIN.
func StartArbiterServer(t testing.TB, port int, args ...string) *Server {
	t.Helper()
	bin := os.Getenv("ARBITER_SERVER_BIN")
	if bin == "" {
		t.Skip("ARBITER_SERVER_BIN is not set: build arbiter-server and point it at the binary to run the end-to-end tests")
	}
	cmd := exec.Command(bin, append([]string{"--host", "127.0.0.1", "--port", strconv.Itoa(port), "--metrics-port", "-1"}, args...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	s := &Server{cmd: cmd}
	t.Cleanup(s.Stop)
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		for sc.Scan() { // keep draining so the server never blocks on stdout
		}
	}()
	select {
	case line, ok := <-lines:
		addr, found := strings.CutPrefix(line, "listening on ")
		if !ok || !found {
			t.Fatalf("arbiter-server's first line is %q, want \"listening on HOST:PORT\"", line)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			t.Fatalf("arbiter-server listens on %q: %v", addr, err)
		}
		s.Addr = addr
		return s
	case <-time.After(30 * time.Second):
		t.Fatal("arbiter-server printed nothing within 30s")
	}
	return nil
}

// ArbiterCLI returns the arbiter CLI built next to $ARBITER_SERVER_BIN.
func ArbiterCLI(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("ARBITER_SERVER_BIN")
	if bin == "" {
		t.Skip("ARBITER_SERVER_BIN is not set")
	}
	cli := filepath.Join(filepath.Dir(bin), "arbiter")
	if _, err := os.Stat(cli); err != nil {
		t.Fatalf("no arbiter CLI next to ARBITER_SERVER_BIN: %v", err)
	}
	return cli
}

// ControlPlane starts a Kubernetes control plane for the test's duration. When the test fails,
// the end of each process's log is written to the test's output.
func ControlPlane(t testing.TB, opts controlplane.Options) *controlplane.ControlPlane {
	t.Helper()
	if opts.BinDir == "" && os.Getenv(controlplane.BinDirEnv) == "" {
		missing(t, controlplane.BinDirEnv+" is not set: run tests/k8s/control-plane/build.sh and point it at the folder it prints")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts.KeepDir = true // removed below, after a failure's logs are shown
	cp, err := controlplane.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cp.Stop()
		if t.Failed() {
			for _, name := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"} {
				if tail := controlplane.Tail(filepath.Join(cp.Dir, name+".log"), 1500); tail != "" {
					t.Logf("--- end of %s.log:\n%s", name, tail)
				}
			}
		}
		_ = os.RemoveAll(cp.Dir)
	})
	return cp
}

// ControlPlaneWithKueue starts a Kubernetes control plane and Kueue's controller manager on it
// (ControlPlane.StartKueue) for the test's duration. The test is skipped (or fails, as above)
// unless both $ARBITER_K8S_BIN_DIR and $ARBITER_KUEUE_DIR are set; it checks both before it
// starts anything. When the test fails, the end of Kueue's log is written to its output too.
func ControlPlaneWithKueue(t testing.TB, opts controlplane.Options, kopts controlplane.KueueOptions) (*controlplane.ControlPlane, *controlplane.Kueue) {
	t.Helper()
	if kopts.Dir == "" && os.Getenv(controlplane.KueueDirEnv) == "" {
		missing(t, controlplane.KueueDirEnv+" is not set: run tests/k8s/kueue/build.sh and point it at the folder it prints")
	}
	cp := ControlPlane(t, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	k, err := cp.StartKueue(ctx, kopts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Kueue installed and ready in %s", time.Since(start).Round(time.Millisecond))
	// Runs before ControlPlane's clean-up, which removes the folder the log is in.
	t.Cleanup(func() {
		if t.Failed() {
			if tail := controlplane.Tail(k.Log, 3000); tail != "" {
				t.Logf("--- end of %s:\n%s", filepath.Base(k.Log), tail)
			}
		}
	})
	return cp, k
}

// Binary builds the Go command pkg (e.g. "arbiter.dev/clients/go/cmd/arbiter-k8s") into the
// test's temporary folder and returns its path.
func Binary(t testing.TB, pkg string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", out, pkg)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

func missing(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("ARBITER_REQUIRE_K8S") != "" {
		t.Fatal(why + " (ARBITER_REQUIRE_K8S is set)")
	}
	t.Skip(why)
}

func stop(cmd *exec.Cmd, grace time.Duration) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-done
	}
}
