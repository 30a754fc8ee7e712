package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCommandLineErrorsAreUsageErrors(t *testing.T) {
	for name, c := range map[string]struct {
		args []string
		code int
		want string
	}{
		"no command":          {nil, 2, "Usage:"},
		"help":                {[]string{"help"}, 0, "Usage:"},
		"unknown command":     {[]string{"admit"}, 2, `unknown command "admit"`},
		"bad format":          {[]string{"explain", "--format", "yaml"}, 2, "want table or json"},
		"workload alone":      {[]string{"explain", "--workload", "w"}, 2, "--workload needs --namespace"},
		"what-if without -f":  {[]string{"what-if"}, 2, "-f FILE is required"},
		"negative k":          {[]string{"check", "--k-value", "-1"}, 2, "must be 0 or more"},
		"unknown strategy":    {[]string{"check", "--preemption-strategies", "Greedy"}, 2, `unknown strategy "Greedy"`},
		"unknown flag":        {[]string{"explain", "--nope"}, 2, "flag provided but not defined"},
		"stray argument":      {[]string{"explain", "extra"}, 2, "unexpected arguments"},
		"flags of a command":  {[]string{"check", "-h"}, 0, "-k-value"},
		"no kubeconfig there": {[]string{"explain", "--kubeconfig", "/nonexistent"}, 1, "kubernetes config"},
	} {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), c.args, &stdout, &stderr)
			if code != c.code || !strings.Contains(stderr.String(), c.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr.String(), c.code, c.want)
			}
		})
	}
}

func TestWhatIfRefusesAManifestBeyondItsBound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.yaml")
	if err := os.WriteFile(path, make([]byte, maxManifestBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readManifest(path); err == nil || !strings.Contains(err.Error(), "larger than 64 MiB") {
		t.Fatalf("err = %v, want the bound named", err)
	}
	if data, err := readManifest(path[:len(path)-len("huge.yaml")] + "missing.yaml"); err == nil {
		t.Fatalf("read %d bytes of a missing file", len(data))
	}
}
