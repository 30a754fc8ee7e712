package usage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// vectorsFile holds the accounting vectors shared with the C++ core's tests.
var vectorsFile = filepath.Join("..", "..", "..", "..", "tests", "testdata", "usage_accounting_vectors.json")

// number reads a JSON number or one of the strings "+Inf", "-Inf", "Inf", "NaN".
type number float64

func (n *number) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("number %q: %w", s, err)
		}
		*n = number(f)
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*n = number(f)
	return nil
}

type vector struct {
	Name              string             `json:"name"`
	Usage             map[string]number  `json:"usage"`
	Rate              map[string]number  `json:"rate"`
	Interval          number             `json:"interval"`
	HalfLife          number             `json:"half_life"`
	Expected          map[string]float64 `json:"expected"`
	Error             bool               `json:"error"`
	RelativeTolerance float64            `json:"relative_tolerance"`
}

func floats(m map[string]number) map[string]float64 {
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = float64(v)
	}
	return out
}

// TestAccumulateMatchesSharedVectors checks SEMANTICS §3 accounting against the vectors the C++
// core is tested with: exact results unless a vector allows a relative tolerance (math.Pow and
// std::pow may differ in the last bit for fractional exponents).
func TestAccumulateMatchesSharedVectors(t *testing.T) {
	raw, err := os.ReadFile(vectorsFile)
	if err != nil {
		t.Fatalf("read shared vectors: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var vectors []vector
	if err := dec.Decode(&vectors); err != nil {
		t.Fatalf("parse %s: %v", vectorsFile, err)
	}
	if len(vectors) == 0 {
		t.Fatal("no vectors")
	}
	for _, v := range vectors {
		t.Run(v.Name, func(t *testing.T) {
			got, err := Accumulate(floats(v.Usage), floats(v.Rate), float64(v.Interval), float64(v.HalfLife))
			if v.Error {
				if err == nil {
					t.Fatalf("Accumulate = %v, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(v.Expected) {
				t.Errorf("keys = %v, want those of %v", got, v.Expected)
			}
			for r, want := range v.Expected {
				g, ok := got[r]
				switch {
				case !ok:
					t.Errorf("%s missing", r)
				case v.RelativeTolerance == 0 && g != want:
					t.Errorf("%s = %v, want exactly %v", r, g, want)
				case v.RelativeTolerance > 0 && math.Abs(g-want) > v.RelativeTolerance*math.Abs(want):
					t.Errorf("%s = %v, want %v within relative %v", r, g, want, v.RelativeTolerance)
				}
			}
		})
	}
}

func TestAccumulateNamesTheOffendingKey(t *testing.T) {
	_, err := Accumulate(map[string]float64{"cpu": 1, "memory": -1}, nil, 1, 60)
	if err == nil || err.Error() != `usage["memory"]: must be finite and not negative, got -1` {
		t.Fatalf("err = %v", err)
	}
}
