package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"arbiter.dev/clients/go/k8s/kueue/report"
)

// whatIf prints what each manifest of -f would get if it were submitted now.
func whatIf(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("what-if", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c common
	c.register(fs)
	file := fs.String("f", "", "manifest: a Job, JobSet or Workload (YAML or JSON; several documents allowed; - = standard input)")
	namespace := fs.String("namespace", "default", "namespace of manifests that name none")
	format := formatFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkFormat(*format); err != nil {
		return err
	}
	if *file == "" {
		return usageError{errors.New("-f FILE is required")}
	}
	data, err := readManifest(*file)
	if err != nil {
		return err
	}
	s, err := c.open(ctx, "arbiter-kueue-what-if")
	if err != nil {
		return err
	}
	defer s.arbiter.Close()
	prio, err := priorities(ctx, s)
	if err != nil {
		return err
	}
	candidates, err := report.WorkloadsFromManifests(data, *namespace, prio)
	if err != nil {
		return fmt.Errorf("%s: %w", *file, err)
	}
	var predictions []*report.Prediction
	for _, w := range candidates {
		p, err := report.WhatIf(ctx, s.arbiter, s.model, w)
		if err != nil {
			return err
		}
		predictions = append(predictions, p)
	}
	if err := c.dump("what-if", s.model.Request, stderr); err != nil {
		return err
	}
	if *format == "json" {
		return report.WritePredictionsJSON(stdout, predictions)
	}
	return report.WritePredictionsTable(stdout, predictions)
}

// maxManifestBytes bounds what what-if reads of a manifest.
const maxManifestBytes = 64 << 20

// readManifest reads name ("-" = standard input), refusing more than maxManifestBytes.
func readManifest(name string) ([]byte, error) {
	in := io.Reader(os.Stdin)
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		in = f
	}
	data, err := io.ReadAll(io.LimitReader(in, maxManifestBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxManifestBytes {
		return nil, fmt.Errorf("%s: larger than %d MiB", name, maxManifestBytes>>20)
	}
	return data, nil
}

// priorities reads the priority classes a manifest may name.
func priorities(ctx context.Context, s *clusterView) (report.Priorities, error) {
	p := report.Priorities{Workload: map[string]int32{}, Pod: map[string]int32{}}
	wpcs, err := s.kueue.KueueV1beta2().WorkloadPriorityClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return p, fmt.Errorf("list WorkloadPriorityClasses: %w", err)
	}
	for _, c := range wpcs.Items {
		p.Workload[c.Name] = c.Value
	}
	pcs, err := s.kube.SchedulingV1().PriorityClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return p, fmt.Errorf("list PriorityClasses: %w", err)
	}
	for _, c := range pcs.Items {
		p.Pod[c.Name] = c.Value
		if c.GlobalDefault {
			v := c.Value
			p.PodDefault = &v
		}
	}
	return p, nil
}
