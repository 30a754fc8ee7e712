package main

import (
	"fmt"
	"strings"

	"github.com/go-logr/logr"
)

// SEMANTICS §5.5 step 6 reruns the first fair-sharing pass over the retry list when that pass
// evicted from the preemptor's own ClusterQueue x and the workload still does not fit (x's share
// has dropped). That is Kueue's later upstream fix; v0.17.0 goes straight to the second strategy.
// The deviation is documented outside §5.8.10, so it gets no exclusion rule: a scenario in which
// Kueue's preemptor, in any oracle call or target search, ends its first pass in that state is
// left out of the comparison (and counted). Kueue reports that state only in its log ("First fair
// sharing strategy failed, trying second strategy", with the first pass's targets and the retry
// list), which rerunDetector reads.
type rerunDetector struct {
	x   string // prefix of x's workloads' names: "<x>-"
	hit bool
}

// logger returns a logger that passes Kueue's messages to the detector and drops everything else.
func (d *rerunDetector) logger() logr.Logger { return logr.New(rerunSink{d}) }

type rerunSink struct{ d *rerunDetector }

func (rerunSink) Init(logr.RuntimeInfo)       {}
func (rerunSink) Enabled(level int) bool      { return level <= 6 }
func (rerunSink) Error(error, string, ...any) {}

func (s rerunSink) Info(_ int, msg string, kv ...any) {
	if msg != "First fair sharing strategy failed, trying second strategy" {
		return
	}
	targets, retry := secondStrategyTargets(kv)
	// The values are lists of namespace/name references, every workload in "default".
	if strings.Contains(targets, "default/"+s.d.x) && retry != "[]" && retry != "" {
		s.d.hit = true
	}
}

func (s rerunSink) WithValues(...any) logr.LogSink { return s }
func (s rerunSink) WithName(string) logr.LogSink   { return s }

// secondStrategyTargets reads the targets and retry candidates Kueue's preemptor logs when its
// first fair-sharing strategy failed, each as printed (a list of namespace/name references).
func secondStrategyTargets(kv []any) (targets, retry string) {
	for k := 0; k+1 < len(kv); k += 2 {
		switch kv[k] {
		case "targets":
			targets = fmt.Sprint(kv[k+1])
		case "retryCandidates":
			retry = fmt.Sprint(kv[k+1])
		}
	}
	return targets, retry
}
