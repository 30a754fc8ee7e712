// Package replay writes the requests an adapter sends to arbiter as files that
// `arbiter schedule` replays.
package replay

import (
	"os"
	"path/filepath"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
)

// Write writes req as proto3 JSON to dir/<stem>-<now>.json, atomically, and returns the path.
func Write(dir, stem string, now time.Time, req *arbiterv1.ScheduleRequest) (string, error) {
	data, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(req)
	if err != nil {
		return "", err
	}
	name := filepath.Join(dir, stem+"-"+now.UTC().Format("20060102T150405.000000000Z")+".json")
	tmp, err := os.CreateTemp(dir, "."+stem+"-*.json")
	if err != nil {
		return "", err
	}
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return "", err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return name, os.Rename(tmp.Name(), name)
}
