package main

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/actions/utils"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/api/common_info"
)

// A cluster is one generated KAI scheduling snapshot for the decision comparison: nodes,
// departments (top-level queues) with leaf queues under them, and jobs whose pods are PENDING,
// RUNNING or RELEASING. It is written both as KAI's test topology (topology.go) and as arbiter's
// ScheduleRequest (decisions.go), so every field here has a meaning on both sides.

// features switch the generated features one by one, so that a class of divergence can be
// isolated (-features on the command line).
type features struct {
	gangs          bool // jobs of several pods, all needed (minAvailable = pods)
	elastic        bool // minAvailable below the number of pods
	running        bool // RUNNING pods on the nodes
	releasing      bool // RELEASING pods on the nodes
	nonPreemptible bool // priorities of 100 and more (KAI: non-preemptible)
	priorities     bool // several job priorities in one queue (preempt)
	selectors      bool // node pools: a node label and pods that select it
	quotas         bool // deserved quotas, limits and over-quota weights (reclaim)
	cpuRequests    bool // pods of more than KAI's default 1 cpu (cpu-bound nodes)
	taints         bool // node taints and pod tolerations (decision_rules_place.go)
	minRuntime     bool // queues' reclaim and preempt min-runtimes, running jobs' start times
}

var allFeatures = features{true, true, true, true, true, true, true, true, true, true, true}

// defaultFeatures are the features the comparison runs with unless -features says otherwise:
// the cheap ones. -features all generates everything; no seed of 1..2000 fails with it either
// (docs/conformance.md, "Decisions: KAI"), but a seed costs about 300 times as much, most of it
// in the rebuilt runs of the rules.
const defaultFeatures = "gangs,elastic,running,releasing,minruntime"

// featureNames are the names -features takes, in the struct's order.
var featureNames = []string{"gangs", "elastic", "running", "releasing", "nonpreemptible", "priorities", "selectors", "quotas", "cpu", "taints", "minruntime"}

func (f *features) flags() []*bool {
	return []*bool{&f.gangs, &f.elastic, &f.running, &f.releasing, &f.nonPreemptible, &f.priorities, &f.selectors, &f.quotas, &f.cpuRequests, &f.taints, &f.minRuntime}
}

// parseFeatures reads a comma-separated list: "all", or feature names, each optionally
// prefixed with "-" to switch it off ("all,-selectors").
func parseFeatures(s string) (features, error) {
	var f features
	for _, word := range splitComma(s) {
		on := true
		if len(word) > 0 && word[0] == '-' {
			on, word = false, word[1:]
		}
		if word == "all" {
			for _, p := range f.flags() {
				*p = on
			}
			continue
		}
		i := slices.Index(featureNames, word)
		if i < 0 {
			return f, fmt.Errorf("unknown feature %q (known: all, %v)", word, featureNames)
		}
		*f.flags()[i] = on
	}
	return f, nil
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}

// KAI's test nodes: 20000 cpus and 20G memory allocatable (nodes_fake), in KAI's own units
// (millicores, bytes); a pod asks for 1 cpu and 1G memory unless it says otherwise
// (resources_fake).
const (
	nodeMilliCPU    = 20000 * 1000
	nodeMemory      = 20e9
	podMilliCPU     = 1000
	podMemory       = 1e9
	poolLabel       = "kai.scheduler/type" // tasks_fake.NodeAffinityKey; KAI sets it to the node's name
	maxTasksPerJob  = 4
	departmentPrio  = 100 // KAI's DefaultQueuePriority: test departments set none
	nonPreemptiblep = 100 // jobs of this priority and above are non-preemptible (KAI's rule)
)

type cnode struct {
	name string
	gpus int
	// cpu is the node's allocatable cpu in millicores (KAI's test default unless cpu requests
	// are on: then small, so that cpu decides as well).
	cpu    float64
	pool   string // "" = the node's own name (KAI's label default)
	taints []ctaint
}

// label is the node's value of poolLabel.
func (n *cnode) label() string {
	if n.pool == "" {
		return n.name
	}
	return n.pool
}

// cqueue is a department (parent "") or a leaf queue. Quotas are GPU quotas (KAI's test queues
// leave cpu and memory at -1); limit 0 means none, as in test_utils.
type cqueue struct {
	name     string
	parent   string
	deserved float64
	limit    float64
	weight   float64 // leaf queues only; a department's GPU over-quota weight is its deserved
	priority int
	index    int // creation order among its kind (test_utils: now + index minutes)
	// reclaimMin and preemptMin are min-runtimes in minutes; 0 = unset (inherited).
	reclaimMin, preemptMin int
}

type ctask struct {
	state string // "Pending", "Running", "Releasing"
	node  string
}

type cjob struct {
	name         string
	queue        string
	gpus         float64 // per task, whole
	cpu          float64 // per task in millicores; 0 = KAI's default of 1 cpu
	priority     int32
	minAvailable int // 0 = every task (test_utils' default gang)
	age          int // minutes before now; distinct per job
	pool         string
	tasks        []ctask
	tolerations  []ctoleration
	started      int // minutes since its RUNNING pods started; 0 = test_utils' default
}

// gang is the job's gang size g.
func (j *cjob) gang() int {
	if j.minAvailable == 0 {
		return len(j.tasks)
	}
	return j.minAvailable
}

func (j *cjob) milliCPU() float64 {
	if j.cpu == 0 {
		return podMilliCPU
	}
	return j.cpu
}

type cluster struct {
	seed        int64
	feat        features
	nodes       []cnode
	departments []cqueue
	queues      []cqueue
	jobs        []cjob
	// rebuilt: KAI's eviction actions as the rules of decision_rules_evict.go rebuild them (the
	// zero value: KAI's own).
	rebuilt rebuiltActions
	// overdrawnIdle: KAI's node scores corrected for releasing capacity overdrawn by pipelining
	// (kai-overdrawn-idle).
	overdrawnIdle bool
	// observed: when set, KAI's deallocations and the pods it places then takes are recorded
	// into it (spec questions (o) and (a); observeKAI).
	observed *kaiObservation
	// heldEvictions: when set, a rebuilt run sets it when its proportion plugin was held to one
	// count per pod (kai-evicts-twice, installEvictedOnce).
	heldEvictions *bool
	// evictedTwice: a rebuilt run leaves the proportion plugin's count as KAI keeps it, evictions
	// of evicted pods included (without kai-evicts-twice).
	evictedTwice bool
	// victimOrder: the victim queue the rebuilt reclaim or preempt draws from at the moment
	// (kai-victim-queue-order reads the jobs drawn so far from it).
	victimOrder *utils.JobsOrderByQueues
	// releasingBefore: during an attempt of the rebuilt reclaim or preempt with whole victims,
	// the pods that were Releasing when it began (kai-victim-replaced-whole re-places the others
	// a scenario evicted); nil outside one.
	releasingBefore map[common_info.PodID]bool
}

// generateCluster builds the cluster of a seed: one to eight nodes, one or two departments with
// one to four leaf queues among them, up to twenty jobs.
func generateCluster(seed int64, feat features) *cluster {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6b6169646563))
	chance := func(p float64) bool { return rng.Float64() < p }
	c := &cluster{seed: seed, feat: feat}

	pools := []string{"pool-a", "pool-b"}
	for i := range 1 + rng.IntN(8) {
		n := cnode{name: fmt.Sprintf("n%d", i), gpus: []int{0, 1, 2, 2, 4, 4, 8}[rng.IntN(7)], cpu: nodeMilliCPU}
		if feat.cpuRequests && chance(0.5) {
			n.cpu = float64(2+rng.IntN(14)) * 1000
		}
		if feat.selectors && chance(0.5) {
			n.pool = pools[rng.IntN(2)]
		}
		c.nodes = append(c.nodes, n)
	}
	totalGPUs := 0
	for _, n := range c.nodes {
		totalGPUs += n.gpus
	}

	nDept := 1 + rng.IntN(2)
	nQueues := max(nDept, 1+rng.IntN(4))
	for d := range nDept {
		dep := cqueue{name: fmt.Sprintf("d%d", d), index: d, priority: departmentPrio}
		if feat.quotas {
			dep.deserved = float64(rng.IntN(totalGPUs + 1))
			if chance(0.2) {
				dep.limit = float64(1 + rng.IntN(totalGPUs+1))
			}
		}
		c.departments = append(c.departments, dep)
	}
	for q := range nQueues {
		parent := c.departments[q%nDept].name
		if q >= nDept {
			parent = c.departments[rng.IntN(nDept)].name
		}
		lq := cqueue{name: fmt.Sprintf("q%d", q), parent: parent, index: q, weight: 1, priority: 100}
		if feat.quotas {
			lq.deserved = float64(rng.IntN(totalGPUs/2 + 2))
			if chance(0.2) {
				lq.limit = float64(1 + rng.IntN(totalGPUs+1))
			}
			lq.weight = []float64{0, 1, 1, 2, 3}[rng.IntN(5)]
			if chance(0.3) {
				lq.priority = []int{50, 100, 150}[rng.IntN(3)]
			}
		}
		c.queues = append(c.queues, lq)
	}

	// Jobs: distinct ages, so that no two are created at the same time (test_utils takes
	// time.Now() per job).
	nJobs := rng.IntN(21)
	ages := rng.Perm(nJobs * 3)
	free := make([]int, len(c.nodes))
	freeCPU := make([]float64, len(c.nodes))
	for i, n := range c.nodes {
		free[i] = n.gpus
		freeCPU[i] = n.cpu
	}
	for j := range nJobs {
		job := cjob{
			name:     fmt.Sprintf("j%02d", j),
			queue:    c.queues[rng.IntN(len(c.queues))].name,
			gpus:     float64([]int{0, 1, 1, 1, 2}[rng.IntN(5)]),
			priority: 50,
			age:      1 + ages[j],
		}
		if feat.cpuRequests && chance(0.3) {
			job.cpu = float64(1+rng.IntN(6)) * 1000
		}
		if feat.priorities {
			job.priority = []int32{25, 50, 50, 75}[rng.IntN(4)]
		}
		if feat.nonPreemptible && chance(0.3) {
			job.priority = []int32{100, 125}[rng.IntN(2)]
		}
		if feat.selectors && chance(0.3) {
			job.pool = pools[rng.IntN(2)]
		}
		nTasks := 1
		if feat.gangs || feat.elastic {
			nTasks = 1 + rng.IntN(maxTasksPerJob)
		}
		if feat.elastic && nTasks > 1 && (!feat.gangs || chance(0.5)) {
			job.minAvailable = 1 + rng.IntN(nTasks-1)
		} else if !feat.gangs && nTasks > 1 {
			job.minAvailable = 1
		}
		job.tasks = make([]ctask, nTasks)
		for t := range job.tasks {
			job.tasks[t].state = "Pending"
		}
		// Some jobs run: their first tasks (a gang's worth at least, when possible) are on
		// nodes with room, and some of those may be releasing.
		if feat.running && chance(0.5) {
			want := nTasks
			if job.minAvailable > 0 && chance(0.5) {
				want = job.minAvailable + rng.IntN(nTasks-job.minAvailable+1)
			}
			placed := c.placeRunning(&job, want, free, freeCPU, rng)
			if placed < job.gang() {
				// A job that cannot run whole stays pending.
				c.unplace(&job, free, freeCPU)
			}
		}
		if feat.releasing && chance(0.15) {
			for t := range job.tasks {
				if job.tasks[t].state == "Running" && chance(0.5) {
					job.tasks[t].state = "Releasing"
				}
			}
		}
		c.jobs = append(c.jobs, job)
	}
	if feat.taints {
		c.addTaints()
	}
	if feat.minRuntime {
		c.addMinRuntimes(rng)
	}
	return c
}

// placeRunning puts the job's first want tasks on nodes with room (first fit, in a random node
// order) and returns how many it placed.
func (c *cluster) placeRunning(job *cjob, want int, free []int, freeCPU []float64, rng *rand.Rand) int {
	order := rng.Perm(len(c.nodes))
	placed := 0
	for t := 0; t < want; t++ {
		for _, i := range order {
			n := &c.nodes[i]
			if job.pool != "" && n.label() != job.pool {
				continue
			}
			if float64(free[i]) >= job.gpus && freeCPU[i] >= job.milliCPU() {
				free[i] -= int(job.gpus)
				freeCPU[i] -= job.milliCPU()
				job.tasks[t] = ctask{state: "Running", node: n.name}
				placed++
				break
			}
		}
		if placed <= t {
			break
		}
	}
	return placed
}

func (c *cluster) unplace(job *cjob, free []int, freeCPU []float64) {
	for t := range job.tasks {
		if job.tasks[t].node == "" {
			continue
		}
		i := c.nodeIndex(job.tasks[t].node)
		free[i] += int(job.gpus)
		freeCPU[i] += job.milliCPU()
		job.tasks[t] = ctask{state: "Pending"}
	}
}

func (c *cluster) nodeIndex(name string) int {
	for i := range c.nodes {
		if c.nodes[i].name == name {
			return i
		}
	}
	return -1
}

// clone returns a deep copy (the shrinker edits copies).
func (c *cluster) clone() *cluster {
	d := *c
	d.nodes = slices.Clone(c.nodes)
	d.departments = slices.Clone(c.departments)
	d.queues = slices.Clone(c.queues)
	d.jobs = make([]cjob, len(c.jobs))
	for i := range c.jobs {
		d.jobs[i] = c.jobs[i]
		d.jobs[i].tasks = slices.Clone(c.jobs[i].tasks)
	}
	return &d
}
