package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"arbiter.dev/clients/go/k8s/kueue/report"
)

// explain prints what arbiter's Kueue model would do now with every pending workload (and in
// which flavors), Kueue's flavors of reserved workloads beside arbiter's, and the shares beside
// Kueue's.
func explain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c common
	c.register(fs)
	var opts report.ExplainOptions
	fs.StringVar(&opts.Namespace, "namespace", "", "only the workloads of this namespace; empty = all")
	fs.StringVar(&opts.Workload, "workload", "", "only this workload (with --namespace)")
	checkFlavors := fs.Bool("check-flavors", true, "set Kueue's flavors of reserved workloads beside arbiter's (one Schedule per workload of a ClusterQueue with a choice of flavors)")
	format := formatFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkFormat(*format); err != nil {
		return err
	}
	if opts.Workload != "" && opts.Namespace == "" {
		return usageError{errors.New("--workload needs --namespace")}
	}
	s, err := c.open(ctx, "arbiter-kueue-explain")
	if err != nil {
		return err
	}
	defer s.arbiter.Close()
	if err := c.dump("explain", s.model.Request, stderr); err != nil {
		return err
	}
	opts.SkipFlavorCheck = !*checkFlavors
	rep, err := report.Explain(ctx, s.arbiter, s.state, s.model, opts)
	if err != nil {
		return err
	}
	if opts.Workload != "" && len(rep.Workloads) == 0 && len(rep.Skipped) == 0 && len(rep.Reserved) == 0 {
		return fmt.Errorf("no pending workload %s/%s", opts.Namespace, opts.Workload)
	}
	if *format == "json" {
		return rep.WriteJSON(stdout)
	}
	return rep.WriteTable(stdout)
}
