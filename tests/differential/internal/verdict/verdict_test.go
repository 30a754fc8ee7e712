package verdict

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKeepRequestNamesTheFileInTheFailure(t *testing.T) {
	dir := t.TempDir()
	tally := NewTally("test")
	tally.Add(1, Outcome{Failure: "differs"})
	tally.KeepRequest(dir, "seed-1.json", []byte("{}"), nil, true)
	tally.KeepShrunk(dir, "seed-1-shrunk.json", []byte("{}"), nil, func() string { return "still differs" })
	want := "seed 1: differs\n(request: " + filepath.Join(dir, "seed-1.json") + ")\n(shrunk: " +
		filepath.Join(dir, "seed-1-shrunk.json") + ")\nstill differs"
	if tally.Failures[0] != want {
		t.Fatalf("failure = %q, want %q", tally.Failures[0], want)
	}
	for _, name := range []string{"seed-1.json", "seed-1-shrunk.json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Fatalf("%s not kept: %v", name, err)
		}
	}
}

func TestKeepRequestOfAnExcludedSeedLeavesTheFailuresAlone(t *testing.T) {
	dir := t.TempDir()
	tally := NewTally("test")
	tally.Add(1, Outcome{Failure: "differs"})
	tally.Add(2, Outcome{Rules: []string{"rule"}})
	tally.KeepRequest(dir, "seed-2.json", []byte("{}"), nil, false)
	tally.KeepRequest(dir, "seed-3.json", nil, errors.New("cannot encode"), true)
	tally.KeepRequest("", "seed-4.json", []byte("{}"), nil, true)
	if len(tally.Failures) != 1 || strings.Contains(tally.Failures[0], "request") {
		t.Fatalf("failures = %q", tally.Failures)
	}
	if _, err := os.Stat(filepath.Join(dir, "seed-2.json")); err != nil {
		t.Fatalf("the excluded seed's request is not kept: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "seed-3.json")); err == nil {
		t.Fatal("a request that failed to encode was written")
	}
}
