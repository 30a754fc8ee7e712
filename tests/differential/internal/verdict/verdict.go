// Package verdict holds what both differential programs share: the comparison tolerance, the
// command-line flags, and the tally of outcomes that ends every run with a summary.
package verdict

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Close reports whether a and b agree to 1e-6 relative; below magnitude 1 the difference is
// compared absolutely (so that 0 and 1e-17 agree). Equal infinities agree.
func Close(a, b float64) bool {
	if a == b {
		return true
	}
	scale := math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
	return math.Abs(a-b) <= 1e-6*scale
}

// Flags are the command-line flags of a differential program.
type Flags struct {
	CLI     string // the arbiter CLI binary
	First   int64  // first seed
	Seeds   int64  // number of seeds
	KeepDir string // where requests of failing and excluded seeds are written ("" = nowhere)
	Verbose bool
}

// ParseFlags parses the command line. The CLI defaults to $ARBITER_CLI.
func ParseFlags(program string) Flags { return ParseFlagsWith(program, nil) }

// ParseFlagsWith parses the command line with the program's own flags, which extra defines.
func ParseFlagsWith(program string, extra func(*flag.FlagSet)) Flags {
	var f Flags
	fs := flag.NewFlagSet(program, flag.ExitOnError)
	if extra != nil {
		extra(fs)
	}
	fs.StringVar(&f.CLI, "cli", os.Getenv("ARBITER_CLI"), "the arbiter CLI binary (default $ARBITER_CLI)")
	fs.Int64Var(&f.First, "first", 1, "first seed")
	fs.Int64Var(&f.Seeds, "seeds", 300, "number of seeds: first .. first+seeds-1")
	fs.StringVar(&f.KeepDir, "keep", "", "write the arbiter request of every failing or excluded seed to this directory")
	fs.BoolVar(&f.Verbose, "v", false, "print one line per seed")
	_ = fs.Parse(os.Args[1:])
	if f.CLI == "" {
		fmt.Fprintf(os.Stderr, "%s: no arbiter CLI: pass -cli or set ARBITER_CLI\n", program)
		os.Exit(2)
	}
	if f.Seeds < 0 {
		fmt.Fprintf(os.Stderr, "%s: -seeds must not be negative\n", program)
		os.Exit(2)
	}
	return f
}

// Outcome is what comparing one request ended in.
type Outcome struct {
	// Rules names the exclusion rules the request needed; empty for a plain agreement.
	Rules []string
	// Failure describes a divergence no rule explains; empty when none.
	Failure string
}

// Tally counts outcomes over a run.
type Tally struct {
	Model      string
	Requests   int
	Agreements int
	Excluded   int            // requests that agreed only under some rule
	ByRule     map[string]int // requests that needed each rule (one request may need several)
	Units      map[string]int // finer counts, named by the program
	Failures   []string
}

// NewTally starts an empty tally.
func NewTally(model string) *Tally {
	return &Tally{Model: model, ByRule: map[string]int{}, Units: map[string]int{}}
}

// Add records the outcome of the request made from seed.
func (t *Tally) Add(seed int64, o Outcome) {
	t.Requests++
	switch {
	case o.Failure != "":
		t.Failures = append(t.Failures, fmt.Sprintf("seed %d: %s", seed, o.Failure))
	case len(o.Rules) > 0:
		t.Excluded++
		for _, r := range o.Rules {
			t.ByRule[r]++
		}
	default:
		t.Agreements++
	}
}

// Print writes the summary.
func (t *Tally) Print(w io.Writer) {
	fmt.Fprintf(w, "%s: %d requests compared, %d agree, %d agree only under an exclusion rule, %d fail\n",
		t.Model, t.Requests, t.Agreements, t.Excluded, len(t.Failures))
	for _, name := range sortedKeys(t.ByRule) {
		fmt.Fprintf(w, "  excluded by rule %-27s %d requests\n", name+":", t.ByRule[name])
	}
	for _, name := range sortedKeys(t.Units) {
		fmt.Fprintf(w, "  %-43s %d\n", name+":", t.Units[name])
	}
	for _, f := range t.Failures {
		fmt.Fprintf(w, "  FAIL %s\n", strings.ReplaceAll(f, "\n", "\n       "))
	}
}

// Keep writes body to dir/name when dir is set, and returns the path ("" when not written).
func Keep(dir, name string, body []byte) string {
	if dir == "" {
		return ""
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ""
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, body, 0o644); err != nil {
		return ""
	}
	return path
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// KeepRequest keeps the request of a seed (Keep; body and err are its encoding) and, when the
// seed failed, names the kept file in the failure the tally recorded last.
func (t *Tally) KeepRequest(dir, name string, body []byte, err error, failed bool) {
	if err != nil {
		return
	}
	if path := Keep(dir, name, body); path != "" && failed && len(t.Failures) > 0 {
		t.Failures[len(t.Failures)-1] += "\n(request: " + path + ")"
	}
}

// KeepShrunk keeps the shrunk request of a failing seed and appends its path and its own
// failure, which failure computes, to the failure the tally recorded last.
func (t *Tally) KeepShrunk(dir, name string, body []byte, err error, failure func() string) {
	if err != nil {
		return
	}
	if path := Keep(dir, name, body); path != "" && len(t.Failures) > 0 {
		t.Failures[len(t.Failures)-1] += "\n(shrunk: " + path + ")\n" + failure()
	}
}
