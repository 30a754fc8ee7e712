package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"

	"arbiter.dev/tests/differential/internal/verdict"
)

// seedsPerProcess bounds the seeds one process checks. KAI's test sessions never stop the
// informers that test_utils.GetTestCacheMock starts on context.Background(): each session
// leaves 17 goroutines and about 150 KB of heap behind (300 KB with their stacks), and a seed
// that agrees only under a late combination of the rebuilt changes, or fails, builds up to 510
// sessions. A run of more than inProcessSeeds seeds checks them in child processes of this
// program (-decision-worker) of seedsPerProcess seeds, at most processesAtOnce at a time, each
// freeing its sessions when it exits. Shorter runs (make test's) stay in one process: a child
// waits for its slowest seed, which cost `make test`'s 150 eviction-feature seeds 298 s against
// 205 s in one process, and 150 seeds stay within a few GB.
const (
	inProcessSeeds   = 200
	seedsPerProcess  = 20
	processesAtOnce  = 2
	decisionWorkerOn = "decision-worker"
)

// featureArg is the -features argument as given, handed on to the child processes.
var featureArg = defaultFeatures

// seedResult is one line a worker writes: a seed's outcome and counts.
type seedResult struct {
	Seed      int64          `json:"seed"`
	Rules     []string       `json:"rules,omitempty"`
	Failure   string         `json:"failure,omitempty"`
	PodsBound map[string]int `json:"pods_bound,omitempty"`
	Classes   map[string]int `json:"classes,omitempty"`
}

// runDecisionWorker checks flags' seeds (as checkSeedsConcurrently does in-process) and writes
// one seedResult per seed, in seed order, to stdout.
func runDecisionWorker(flags verdict.Flags, feat features) error {
	checked := checkSeedsInProcess(flags, feat)
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	for i := range checked {
		done := <-checked[i]
		r := seedResult{Seed: flags.First + int64(i), Rules: done.outcome.Rules, Failure: done.outcome.Failure,
			PodsBound: done.counts.podsBound, Classes: done.counts.classes}
		if err := enc.Encode(r); err != nil {
			return err
		}
		if err := out.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// checkSeedsInChildren is checkSeedsConcurrently over child processes of seedsPerProcess seeds.
// A child that fails makes each of its seeds that it did not report a failure naming the error.
func checkSeedsInChildren(flags verdict.Flags, feat features) []chan checkedSeed {
	out := make([]chan checkedSeed, flags.Seeds)
	for i := range out {
		out[i] = make(chan checkedSeed, 1)
	}
	self, err := os.Executable()
	slots := make(chan struct{}, processesAtOnce)
	go func() {
		for first := int64(0); first < flags.Seeds; first += seedsPerProcess {
			n := min(seedsPerProcess, flags.Seeds-first)
			slots <- struct{}{}
			go func() {
				defer func() { <-slots }()
				reported := map[int64]bool{}
				report := func(i int64, o verdict.Outcome, counts *decisionCounts) {
					reported[i] = true
					out[i] <- checkedSeed{generateCluster(flags.First+i, feat), o, counts}
				}
				childErr := err
				if childErr == nil {
					childErr = runChild(self, flags, first, n, func(r seedResult) {
						counts := newDecisionCounts()
						for k, v := range r.PodsBound {
							counts.podsBound[k] = v
						}
						for k, v := range r.Classes {
							counts.classes[k] = v
						}
						report(r.Seed-flags.First, verdict.Outcome{Rules: r.Rules, Failure: r.Failure}, counts)
					})
				}
				for i := first; i < first+n; i++ {
					if !reported[i] {
						msg := "the child process checking it ended without an answer"
						if childErr != nil {
							msg = "the child process checking it failed: " + childErr.Error()
						}
						report(i, verdict.Outcome{Failure: msg}, newDecisionCounts())
					}
				}
			}()
		}
	}()
	return out
}

// runChild runs `self -decision-worker` on seeds flags.First+first .. +n-1 and hands each line
// it writes to each.
func runChild(self string, flags verdict.Flags, first, n int64, each func(seedResult)) error {
	cmd := exec.Command(self, "-"+decisionWorkerOn, "-decisions-only", "-cli", flags.CLI, "-features", featureArg,
		"-first", strconv.FormatInt(flags.First+first, 10), "-seeds", strconv.FormatInt(n, 10))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	scanner := bufio.NewScanner(stdout)
	scanner.Buffer(make([]byte, 1<<20), 64<<20)
	var parseErr error
	for scanner.Scan() {
		var r seedResult
		if err := json.Unmarshal(scanner.Bytes(), &r); err != nil {
			parseErr = fmt.Errorf("reading a worker's line: %w", err)
			continue
		}
		each(r)
	}
	if err := cmd.Wait(); err != nil {
		return err
	}
	return parseErr
}
