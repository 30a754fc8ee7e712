package arbiterv1_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// protocVersionLine is the one header line that names the local protoc version; it is ignored so
// that a patch release of the system protoc does not count as a stale API.
var protocVersionLine = regexp.MustCompile(`(?m)^// \tprotoc +v.*\n`)

// TestGeneratedCodeIsCurrent regenerates the stubs from proto/arbiter/v1 into a temporary
// directory with hack/gen-proto.sh and fails when the committed files differ.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	if _, err := exec.LookPath("protoc"); err != nil {
		t.Skip("protoc is not installed (apt-get install protobuf-compiler): cannot check the generated code")
	}
	out := t.TempDir()
	cmd := exec.Command("bash", filepath.Join("..", "hack", "gen-proto.sh"), out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/gen-proto.sh failed: %v\n%s", err, msg)
	}
	for _, name := range []string{"arbiter.pb.go", "arbiter_grpc.pb.go"} {
		want, err := os.ReadFile(filepath.Join(out, "arbiterv1", name))
		if err != nil {
			t.Fatalf("regenerated %s: %v", name, err)
		}
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatalf("committed %s: %v", name, err)
		}
		if !bytes.Equal(protocVersionLine.ReplaceAll(got, nil), protocVersionLine.ReplaceAll(want, nil)) {
			t.Errorf("arbiterv1/%s is stale: run clients/go/hack/gen-proto.sh and commit the result", name)
		}
	}
	entries, err := os.ReadDir(filepath.Join(out, "arbiterv1"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Errorf("generator wrote %d files, the committed set has 2: update this test and commit them", len(entries))
	}
}
