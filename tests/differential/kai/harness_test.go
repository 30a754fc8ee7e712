package main

import (
	"slices"
	"strings"
	"testing"
)

// modelTree divides the whole tree with the model, level by level, as arbiter specifies it.
func (t *tree) modelTree(m remainderModel) []quota {
	out := make([]quota, len(t.queues))
	for _, set := range t.siblingSets() {
		total := t.capacity
		if set.parent >= 0 {
			total = out[set.parent]
		}
		for r := range numResources {
			for j, v := range t.model(set.members, r, total[r], m) {
				out[set.members[j]][r] = v
			}
		}
	}
	return out
}

// The exclusion rules lean on the model reproducing KAI when it follows KAI's remainder phase.
func TestModelWithKAIBehaviourGivesOneOfKAIsAnswers(t *testing.T) {
	for seed := int64(1); seed <= 300; seed++ {
		tr := generate(seed)
		kai := tr.kaiTree()
		for _, set := range tr.siblingSets() {
			total := tr.capacity
			if set.parent >= 0 {
				total = kai[set.parent]
			}
			var runs [][]quota
			for r := range numResources {
				m := tr.model(set.members, r, total[r], kaiBehaviour)
				found := false
				for n := 0; n < searchRuns && !found; n++ {
					if n >= len(runs) {
						runs = append(runs, tr.kaiLevel(set.members, total))
					}
					found = sameOn(m, runs[n], r)
				}
				if !found {
					t.Errorf("seed %d, %s: the model gives %v, KAI %v", seed, resourceNames[r], m, runs[0])
				}
			}
		}
	}
}

// A tree divided as arbiter specifies passes; the same answer with one share moved by a unit
// fails.
func TestCompareAcceptsTheSpecifiedAnswerAndCatchesAChange(t *testing.T) {
	changed := 0
	for seed := int64(1); seed <= 100; seed++ {
		tr := generate(seed)
		arb := tr.modelTree(arbiterBehaviour)
		units := unitCounts{byRule: map[string]int{}}
		if o := tr.compare(arb, &units); o.Failure != "" {
			t.Fatalf("seed %d: the specified answer fails: %s", seed, o.Failure)
		}
		// Move one unit of some leaf's largest share to nowhere.
		for i := range tr.queues {
			if len(tr.queues[i].children) == 0 && arb[i][gpu] >= 1 {
				wrong := slices.Clone(arb)
				wrong[i][gpu]--
				if o := tr.compare(wrong, &units); o.Failure == "" {
					t.Errorf("seed %d: taking a GPU from %s went unnoticed", seed, tr.queues[i].name)
				}
				changed++
				break
			}
		}
	}
	if changed < 20 {
		t.Fatalf("only %d trees had a leaf with a GPU to take", changed)
	}
}

// ruleRemainderCap's claim: in whole-number trees capping the remainder unit changes nothing.
func TestWholeNumberTreesNeverNeedTheCap(t *testing.T) {
	checked := 0
	for seed := int64(1); seed <= 1000; seed++ {
		tr := generate(seed)
		if tr.fractional {
			continue
		}
		checked++
		capped := tr.modelTree(remainderModel{tolerantTies: true, capUnit: true})
		uncapped := tr.modelTree(remainderModel{tolerantTies: true})
		for i := range tr.queues {
			for r := range numResources {
				if capped[i][r] != uncapped[i][r] {
					t.Errorf("seed %d: %s on %s: capped %v, uncapped %v", seed, tr.queues[i].name, resourceNames[r], capped[i][r], uncapped[i][r])
				}
			}
		}
	}
	if checked < 500 {
		t.Fatalf("only %d whole-number trees", checked)
	}
}

// The generator must reach the cases the rules are about; a change that made every tree
// trivial would otherwise pass silently.
func TestGeneratorReachesTheInterestingCases(t *testing.T) {
	var divisions, overQuota, remainder, capped, timeAware int
	for seed := int64(1); seed <= 1000; seed++ {
		tr := generate(seed)
		if tr.k > 0 {
			timeAware++
		}
		whole := tr.modelTree(kaiBehaviour)
		for _, set := range tr.siblingSets() {
			for r := range numResources {
				divisions++
				total := tr.capacity[r]
				if set.parent >= 0 {
					total = whole[set.parent][r]
				}
				full := tr.model(set.members, r, total, kaiBehaviour)
				if !slices.Equal(full, tr.model(set.members, r, total, remainderModel{noRemainder: true})) {
					remainder++
				}
				for j, i := range set.members {
					q := &tr.queues[i]
					if full[j] > q.deserved[r] && q.deserved[r] != -1 {
						overQuota++
						break
					}
				}
			}
		}
		if tr.fractional {
			a := tr.modelTree(remainderModel{tolerantTies: true, capUnit: true})
			b := tr.modelTree(remainderModel{tolerantTies: true})
			if !slices.Equal(a, b) {
				capped++
			}
		}
	}
	t.Logf("%d divisions: over-quota given in %d, remainder phase used in %d; trees the cap changes %d, time-aware trees %d",
		divisions, overQuota, remainder, capped, timeAware)
	if overQuota < divisions/5 || remainder < divisions/20 || capped < 1 || timeAware < 300 {
		t.Errorf("the generator no longer reaches the interesting cases")
	}
}

// A rule may accept a few divisions, never many: above its bound the run fails.
func TestRuleBoundsFailARunThatLeansOnARule(t *testing.T) {
	for _, name := range []string{ruleMapOrder, ruleNearTie, ruleRemainderCap} {
		limit := ruleBounds[name].limit(4452)
		if limit < ruleBounds[name].floor || limit > 50 {
			t.Errorf("%s: a bound of %d divisions in 4,452", name, limit)
		}
		within := unitCounts{compared: 4452, byRule: map[string]int{name: limit}}
		if over := within.overBounds(); len(over) != 0 {
			t.Errorf("%s: %d divisions, at the bound, fail: %v", name, limit, over)
		}
		above := unitCounts{compared: 4452, byRule: map[string]int{name: limit + 1}}
		if over := above.overBounds(); len(over) != 1 || !strings.Contains(over[0], name) {
			t.Errorf("%s: %d divisions, above the bound, pass: %v", name, limit+1, over)
		}
	}
	// The fraction decides on a long run.
	if got := ruleBounds[ruleMapOrder].limit(151809); got != 151 {
		t.Errorf("kai-map-order over 151,809 divisions: bound %d, want 151", got)
	}
}
