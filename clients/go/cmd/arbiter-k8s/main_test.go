package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
	"arbiter.dev/clients/go/k8s/shim"
)

func TestFlagDefaults(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	o, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.cfg.SchedulerName != "arbiter" || o.cfg.Period != time.Second || o.cfg.MinCycleGap != 50*time.Millisecond ||
		o.cfg.Namespace != "arbiter-system" ||
		o.kaiQueues != "auto" || !o.leader.Elect || o.server.Target != "localhost:50051" {
		t.Errorf("defaults = %+v", o)
	}
	if diff := cmp.Diff([]string{}, o.cfg.IgnoredResources); diff != "" {
		t.Errorf("ignored resources (-want +got):\n%s", diff)
	}
}

func TestFlagErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"UnknownKAIQueuesMode", []string{"--kai-queues=maybe"}, "--kai-queues"},
		{"PositionalArgument", []string{"extra"}, "unexpected arguments"},
		{"UnknownFlag", []string{"--nope"}, "nope"},
		{"ZeroMinCycleGap", []string{"--min-cycle-gap=0"}, "--min-cycle-gap"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := parseFlags(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

// TestDeployedArgsAreFlagsOfThisCommand parses the container arguments of the shipped manifests
// (deploy/kustomize/base, the chart's default rendering) with this command's flag set.
func TestDeployedArgsAreFlagsOfThisCommand(t *testing.T) {
	path := filepath.Join("..", "..", "..", "..", "deploy", "kustomize", "base", "scheduler-deployment.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := yaml.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name != "arbiter-k8s" {
			continue
		}
		args := make([]string, len(c.Args))
		for i, a := range c.Args {
			args[i] = strings.ReplaceAll(a, "$(POD_NAMESPACE)", "arbiter-system")
		}
		o, err := parseFlags(args)
		if err != nil {
			t.Fatalf("deployed args %v: %v", c.Args, err)
		}
		if o.cfg.QueueConfigMap != "arbiter-queues" || o.usageConfigMap != "arbiter-usage" || o.leader.LeaseName != "arbiter-k8s" {
			t.Errorf("deployed names = %s, %s, %s", o.cfg.QueueConfigMap, o.usageConfigMap, o.leader.LeaseName)
		}
		return
	}
	t.Fatal("no arbiter-k8s container in the deployed manifest")
}

func TestHealthEndpoints(t *testing.T) {
	s, err := shim.New(shim.Config{}, shim.Deps{Kube: fake.NewClientset(), Scheduler: nopScheduler{}})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	shim.NewMetrics(reg)
	h := httpHandler(s, reg)
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d, want 200", code)
	}
	if code, _ := get("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz before the caches sync = %d, want 503", code)
	}
	if code, body := get("/metrics"); code != http.StatusOK || !strings.Contains(body, "arbiter_k8s_errors_total") {
		t.Errorf("/metrics = %d without arbiter_k8s_errors_total", code)
	}
}

type nopScheduler struct{}

func (nopScheduler) Schedule(context.Context, *arbiterv1.ScheduleRequest) (*arbiterv1.ScheduleResponse, error) {
	return &arbiterv1.ScheduleResponse{}, nil
}
