// Package usage keeps the per-queue decayed usage of time-aware fairness (SEMANTICS §3) for the
// Kubernetes adapter. Arbiter is stateless; the adapter advances the usage between cycles with
// the accounting step below and sends it as Snapshot.usage and Snapshot.usage_capacity.
package usage

import (
	"fmt"
	"math"
	"sort"
)

// DecayFactor is 0.5^(interval/halfLife), or exactly 1 when halfLife is not positive (no
// decay); an infinite half-life also gives 1.
func DecayFactor(interval, halfLife float64) float64 {
	if !(halfLife > 0) {
		return 1
	}
	return math.Pow(0.5, interval/halfLife)
}

// Accumulate is one accounting step (SEMANTICS §3):
//
//	usage'[r] = usage[r]·0.5^(Δ/H) + rate[r]·Δ
//
// for every r in the union of the keys (a missing key is 0). Use it with (usage, allocated) for
// a queue and with (usage_capacity, capacity) for the cluster. interval Δ and halfLife H share a
// unit (seconds here). It fails when the interval is negative or not finite, the half-life is
// NaN, or an amount is negative or not finite; the message names the argument and key.
func Accumulate(usage, rate map[string]float64, interval, halfLife float64) (map[string]float64, error) {
	if math.IsNaN(interval) || math.IsInf(interval, 0) || interval < 0 {
		return nil, fmt.Errorf("interval: must be finite and not negative, got %v", interval)
	}
	if math.IsNaN(halfLife) {
		return nil, fmt.Errorf("half_life: NaN")
	}
	if err := checkAmounts("usage", usage); err != nil {
		return nil, err
	}
	if err := checkAmounts("rate", rate); err != nil {
		return nil, err
	}
	factor := DecayFactor(interval, halfLife)
	out := make(map[string]float64, len(usage)+len(rate))
	for r, v := range usage {
		// The explicit conversions round each product, so no fused multiply-add changes the
		// result from the one other implementations compute.
		out[r] = float64(v * factor)
	}
	for r, v := range rate {
		out[r] = out[r] + float64(v*interval)
	}
	return out, nil
}

func checkAmounts(argument string, m map[string]float64) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys) // report the first offending key deterministically
	for _, k := range keys {
		if v := m[k]; math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return fmt.Errorf("%s[%q]: must be finite and not negative, got %v", argument, k, v)
		}
	}
	return nil
}
