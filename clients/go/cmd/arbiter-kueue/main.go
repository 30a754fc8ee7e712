// Command arbiter-kueue delegates Kueue's decisions to arbiter.
//
//	arbiter-kueue explain  [--namespace NS] [--workload NAME] [--format table|json]
//	arbiter-kueue what-if  -f job.yaml [--namespace NS] [--format table|json]
//	arbiter-kueue check    [--k-value K] [--usage-half-life D] ...
//
// explain shows, for every pending Workload, what arbiter's Kueue model would do (admit, preempt
// which workloads by which rule, or why not) and in which flavors, Kueue's flavors of reserved
// Workloads beside arbiter's, and every ClusterQueue's and Cohort's weighted share beside the one
// Kueue publishes. what-if says what a Job, JobSet or Workload manifest would get if it were
// submitted now, in which flavors, changing nothing. check runs the arbiter.dev/time-aware
// AdmissionCheck controller. See k8s/kueue/README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	kueueclient "sigs.k8s.io/kueue/client-go/clientset/versioned"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
	"arbiter.dev/clients/go/client"
	"arbiter.dev/clients/go/internal/cmdutil"
	"arbiter.dev/clients/go/internal/replay"
	"arbiter.dev/clients/go/k8s/kueue"
)

const usageText = `arbiter-kueue: Kueue decisions, explained and gated by arbiter

Usage:
  arbiter-kueue explain [flags]          what arbiter would admit or preempt now, in which flavors, and every share
  arbiter-kueue what-if -f FILE [flags]  what a Job, JobSet or Workload would get if submitted now, in which flavors
  arbiter-kueue check [flags]            run the arbiter.dev/time-aware AdmissionCheck controller

Run "arbiter-kueue COMMAND -h" for the flags of a command.
`

// common are the flags of every command.
type common struct {
	kube       cmdutil.KubeFlags
	server     cmdutil.ServerFlags
	log        cmdutil.LogFlags // check only
	timeout    time.Duration
	dumpDir    string
	strategies string
}

func (c *common) register(fs *flag.FlagSet) {
	c.kube.Register(fs, os.Getenv("KUBECONFIG"))
	c.server.Register(fs, "arbiter-server gRPC target")
	c.server.RegisterTLS(fs)
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "bound on each call to arbiter")
	fs.StringVar(&c.dumpDir, "dump-snapshot", "", "write every request sent to arbiter to this directory (proto3 JSON, replayable with: arbiter schedule FILE)")
	fs.StringVar(&c.strategies, "preemption-strategies", "",
		"Kueue's fairSharing.preemptionStrategies, comma-separated (LessThanOrEqualToFinalShare, LessThanInitialShare); empty = Kueue's default")
}

// policyStrategies parses --preemption-strategies.
func (c *common) policyStrategies() ([]arbiterv1.KueuePreemptionStrategy, error) {
	var out []arbiterv1.KueuePreemptionStrategy
	for _, s := range strings.Split(c.strategies, ",") {
		switch strings.TrimSpace(s) {
		case "":
		case "LessThanOrEqualToFinalShare":
			out = append(out, arbiterv1.KueuePreemptionStrategy_LESS_THAN_OR_EQUAL_TO_FINAL_SHARE)
		case "LessThanInitialShare":
			out = append(out, arbiterv1.KueuePreemptionStrategy_LESS_THAN_INITIAL_SHARE)
		default:
			return nil, fmt.Errorf("--preemption-strategies: unknown strategy %q", s)
		}
	}
	return out, nil
}

// clusterView is what explain and what-if share: clients, and the model of the cluster now.
type clusterView struct {
	kueue   kueueclient.Interface
	kube    kubernetes.Interface
	arbiter *client.Client
	state   *kueue.State
	model   *kueue.Model
}

func (c *common) open(ctx context.Context, agent string) (*clusterView, error) {
	strategies, err := c.policyStrategies()
	if err != nil {
		return nil, err
	}
	cfg, err := c.kube.RESTConfig(agent)
	if err != nil {
		return nil, err
	}
	s := &clusterView{}
	if s.kueue, err = kueueclient.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if s.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if s.state, err = kueue.Read(ctx, s.kueue, s.kube, time.Now()); err != nil {
		return nil, err
	}
	if s.model, err = kueue.Build(s.state, kueue.Options{Strategies: strategies}); err != nil {
		return nil, err
	}
	if s.arbiter, err = c.server.Dial(c.timeout); err != nil {
		return nil, err
	}
	return s, nil
}

func (c *common) dump(stem string, req *arbiterv1.ScheduleRequest, stderr io.Writer) error {
	if c.dumpDir == "" {
		return nil
	}
	path, err := replay.Write(c.dumpDir, stem, time.Now(), req)
	if err != nil {
		return fmt.Errorf("--dump-snapshot: %w", err)
	}
	fmt.Fprintf(stderr, "request written to %s (replay: arbiter schedule %s)\n", path, path)
	return nil
}

func main() {
	ctx, stop := cmdutil.SignalContext()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the command line; it returns the exit code: 0 done, 1 failed, 2 bad usage.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usageText)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	commands := map[string]func(context.Context, []string, io.Writer, io.Writer) error{
		"explain": explain, "what-if": whatIf, "check": check,
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "arbiter-kueue: unknown command %q\n\n%s", args[0], usageText)
		return 2
	}
	err := cmd(ctx, args[1:], stdout, stderr)
	var usageErr usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &usageErr):
		fmt.Fprintf(stderr, "arbiter-kueue %s: %v\n", args[0], err)
		return 2
	default:
		fmt.Fprintf(stderr, "arbiter-kueue %s: %v\n", args[0], err)
		return 1
	}
}

type usageError struct{ error }

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments: %v", fs.Args())}
	}
	return nil
}

func formatFlag(fs *flag.FlagSet) *string {
	return fs.String("format", "table", "output: table or json")
}

func checkFormat(f string) error {
	if f != "table" && f != "json" {
		return usageError{fmt.Errorf("--format=%q: want table or json", f)}
	}
	return nil
}
