package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Result is what one run measured; it is written as JSON. Times are seconds from the first pod
// created.
type Result struct {
	Label     string    `json:"label"`
	Scheduler string    `json:"scheduler"`
	Started   time.Time `json:"started"`
	Machine   Machine   `json:"machine"`
	Versions  string    `json:"versions"`
	Command   string    `json:"command"`
	Dir       string    `json:"dir"`

	Nodes      int    `json:"nodes"`
	Pods       int    `json:"pods"`
	Namespaces int    `json:"namespaces"`
	GangSize   int    `json:"gangSize,omitempty"`
	NodeSize   string `json:"nodeSize"`
	PodSize    string `json:"podSize"`
	ClientQPS  string `json:"clientQPS"`

	NodesReadySeconds      float64 `json:"nodesReadySeconds"`
	Created                int     `json:"created"`
	CreateSeconds          float64 `json:"createSeconds"`
	Bound                  int     `json:"bound"`
	Complete               bool    `json:"complete"`
	NodesUsed              int     `json:"nodesUsed"`
	FirstBindSeconds       float64 `json:"firstBindSeconds"`
	LastBindSeconds        float64 `json:"lastBindSeconds"`
	PodsPerSecond          float64 `json:"podsPerSecond"`
	BindPhasePodsPerSecond float64 `json:"bindPhasePodsPerSecond"`

	// ScheduledEvents counts the pods' Scheduled events, counted after the run.
	ScheduledEvents int `json:"scheduledEvents"`
	// FailedSchedulingEvents counts the pods' FailedScheduling events (a gang seen before all its
	// pods were created, say), counted after the run.
	FailedSchedulingEvents int `json:"failedSchedulingEvents"`

	// Latency is set by --one-by-one runs.
	Latency     *Latency              `json:"latency,omitempty"`
	Gang        *GangResult           `json:"gang,omitempty"`
	CPUSeconds  *CPU                  `json:"cpuSeconds,omitempty"`
	APIRequests map[string]APIRequest `json:"apiRequests,omitempty"`
	Shim        *ShimFigures          `json:"shim,omitempty"`
	Server      *ServerFigures        `json:"server,omitempty"`
	Timeline    []Sample              `json:"timeline,omitempty"`
}

// Machine describes where the run took place.
type Machine struct {
	CPUs        int     `json:"cpus"`
	CPUModel    string  `json:"cpuModel"`
	MemoryGiB   float64 `json:"memoryGiB"`
	LoadAverage string  `json:"loadAverageAtStart"`
}

// GangResult counts the gangs bound whole, in part and not at all when the run ended.
type GangResult struct {
	Size    int `json:"size"`
	Groups  int `json:"groups"`
	Whole   int `json:"whole"`
	Partial int `json:"partial"`
	None    int `json:"none"`
}

// Latency sums up the pods' times from their create call to the watch seeing them bound, in
// seconds; a quantile is the nearest rank (p99 of 100 pods is the 99th fastest).
type Latency struct {
	Pods int     `json:"pods"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

func latencyOf(ds []time.Duration) *Latency {
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	rank := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(sorted)))) - 1
		return round(sorted[max(i, 0)].Seconds(), 4)
	}
	var sum time.Duration
	for _, d := range sorted {
		sum += d
	}
	return &Latency{
		Pods: len(sorted), Mean: round((sum / time.Duration(len(sorted))).Seconds(), 4),
		P50: rank(0.5), P90: rank(0.9), P99: rank(0.99), Max: rank(1),
	}
}

// CPU holds the CPU seconds used during the measured window, per process and by the machine.
type CPU struct {
	WindowSeconds float64            `json:"windowSeconds"`
	Cores         int                `json:"cores"`
	Processes     map[string]float64 `json:"processes"`
	MachineBusy   float64            `json:"machineBusy"`
}

// other is the machine's busy CPU seconds that no process of the run used: other programs, and
// the kernel's own work.
func (c *CPU) other() float64 {
	v := c.MachineBusy
	for _, p := range c.Processes {
		v -= p
	}
	return max(v, 0)
}

// ShimFigures are arbiter-k8s's own metrics at the end of the run.
type ShimFigures struct {
	Cycles            float64            `json:"cycles"`
	CycleSecondsTotal float64            `json:"cycleSecondsTotal"`
	CycleSecondsMean  float64            `json:"cycleSecondsMean"`
	CycleSecondsP50   string             `json:"cycleSecondsP50"`
	CycleSecondsP99   string             `json:"cycleSecondsP99"`
	Binds             float64            `json:"binds"`
	BindConflicts     float64            `json:"bindConflicts"`
	Errors            map[string]float64 `json:"errors,omitempty"`
}

// ServerFigures are arbiter-server's metrics at the end of the run.
type ServerFigures struct {
	ScheduleCalls        float64            `json:"scheduleCalls"`
	ScheduleSecondsTotal float64            `json:"scheduleSecondsTotal"`
	ScheduleSecondsMean  float64            `json:"scheduleSecondsMean"`
	ScheduleSecondsMax   string             `json:"scheduleSecondsMax"`
	PhaseSecondsTotal    map[string]float64 `json:"phaseSecondsTotal,omitempty"`
}

// Sample is one point of the timeline, every second.
type Sample struct {
	Seconds float64 `json:"t"`
	Created int     `json:"created"`
	Bound   int     `json:"bound"`
}

func newResult(c *config) *Result {
	r := &Result{
		Label: c.Label, Scheduler: c.Scheduler, Started: time.Now().UTC().Truncate(time.Second),
		Machine: machine(), Versions: filepath.Base(c.BinDir), Command: strings.Join(os.Args, " "),
		Nodes: c.Nodes, Pods: c.Pods, Namespaces: c.Namespaces, GangSize: c.GangSize,
		NodeSize: fmt.Sprintf("%s cpu, %s, %d pods", c.NodeCPU, c.NodeMemory, c.NodePods),
		PodSize:  fmt.Sprintf("%s cpu, %s", c.PodCPU, c.PodMemory),
	}
	switch {
	case c.Scheduler == "arbiter":
		r.ClientQPS = "arbiter-k8s default"
		if c.ShimQPS > 0 {
			r.ClientQPS = fmt.Sprintf("%g/%d", c.ShimQPS, c.ShimBurst)
		}
	case c.KubeSchedulerQPS > 0:
		r.ClientQPS = fmt.Sprintf("%g/%d", c.KubeSchedulerQPS, c.KubeSchedulerBurst)
	default:
		r.ClientQPS = "kube-scheduler default (50/100)"
	}
	return r
}

func numCPU() int { return runtime.NumCPU() }

func machine() Machine {
	m := Machine{CPUs: numCPU()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				m.MemoryGiB = round(kb/(1<<20), 1)
			}
		}
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(b))
		if len(f) >= 3 {
			m.LoadAverage = strings.Join(f[:3], " ")
		}
	}
	return m
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

func writeJSON(path string, res *Result) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// sample is one line of a Prometheus text exposition.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// scrape reads a Prometheus /metrics page (text format).
func scrape(ctx context.Context, url, token string) ([]sample, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	hc := &http.Client{Transport: &http.Transport{
		// Loopback only; the API server's certificate is self-signed for the test.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec
	}}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return parseMetrics(resp.Body)
}

func parseMetrics(r io.Reader) ([]sample, error) {
	var out []sample
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		s := sample{labels: map[string]string{}}
		rest := line
		if i := strings.IndexByte(line, '{'); i >= 0 {
			j := strings.LastIndexByte(line, '}')
			if j < i {
				continue
			}
			s.name = line[:i]
			parseLabels(line[i+1:j], s.labels)
			rest = strings.TrimSpace(line[j+1:])
		} else {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			s.name, rest = f[0], f[1]
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		s.value = v
		out = append(out, s)
	}
	return out, sc.Err()
}

// parseLabels reads a="x",b="y" (values may hold escaped quotes and commas).
func parseLabels(s string, into map[string]string) {
	for len(s) > 0 {
		eq := strings.IndexByte(s, '=')
		if eq < 0 || eq+1 >= len(s) || s[eq+1] != '"' {
			return
		}
		key := strings.TrimSpace(strings.TrimPrefix(s[:eq], ","))
		var val strings.Builder
		i := eq + 2
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
			}
			val.WriteByte(s[i])
		}
		into[key] = val.String()
		s = strings.TrimPrefix(s[min(i+1, len(s)):], ",")
	}
}

// sum adds the samples named name whose labels include want.
func sum(ss []sample, name string, want map[string]string) float64 {
	var total float64
	for _, s := range ss {
		if s.name != name || !matches(s.labels, want) {
			continue
		}
		total += s.value
	}
	return total
}

func matches(labels, want map[string]string) bool {
	for k, v := range want {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// quantile bounds a quantile of a histogram by its cumulative buckets: "<= X" with X the upper
// bound of the bucket it falls in, or "> X" above the largest finite bound.
func quantile(ss []sample, name string, want map[string]string, q float64) string {
	type bucket struct{ le, count float64 }
	var bs []bucket
	for _, s := range ss {
		if s.name != name+"_bucket" || !matches(s.labels, want) {
			continue
		}
		le, err := strconv.ParseFloat(s.labels["le"], 64)
		if err != nil {
			continue
		}
		bs = append(bs, bucket{le, s.value})
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].le < bs[j].le })
	if len(bs) == 0 || bs[len(bs)-1].count == 0 {
		return "-"
	}
	target := q * bs[len(bs)-1].count
	finite := 0.0
	for _, b := range bs {
		if math.IsInf(b.le, 1) {
			break
		}
		if b.count >= target {
			return fmt.Sprintf("<= %g", b.le)
		}
		finite = b.le
	}
	return fmt.Sprintf("> %g", finite)
}

func shimFigures(ss []sample) *ShimFigures {
	const cycle = "arbiter_k8s_cycle_duration_seconds"
	f := &ShimFigures{
		Cycles:            sum(ss, cycle+"_count", nil),
		CycleSecondsTotal: round(sum(ss, cycle+"_sum", nil), 3),
		CycleSecondsP50:   quantile(ss, cycle, nil, 0.5),
		CycleSecondsP99:   quantile(ss, cycle, nil, 0.99),
		Binds:             sum(ss, "arbiter_k8s_binds_total", nil),
		BindConflicts:     sum(ss, "arbiter_k8s_bind_conflicts_total", nil),
		Errors:            map[string]float64{},
	}
	if f.Cycles > 0 {
		f.CycleSecondsMean = round(f.CycleSecondsTotal/f.Cycles, 3)
	}
	for _, s := range ss {
		if s.name == "arbiter_k8s_errors_total" && s.value > 0 {
			f.Errors[s.labels["stage"]] = s.value
		}
	}
	return f
}

func serverFigures(ss []sample) *ServerFigures {
	const rpc = "arbiter_rpc_duration_seconds"
	sched := map[string]string{"method": "Schedule"}
	f := &ServerFigures{
		ScheduleCalls:        sum(ss, rpc+"_count", sched),
		ScheduleSecondsTotal: round(sum(ss, rpc+"_sum", sched), 3),
		ScheduleSecondsMax:   quantile(ss, rpc, sched, 1),
		PhaseSecondsTotal:    map[string]float64{},
	}
	if f.ScheduleCalls > 0 {
		f.ScheduleSecondsMean = round(f.ScheduleSecondsTotal/f.ScheduleCalls, 4)
	}
	for _, s := range ss {
		if s.name == "arbiter_cycle_phase_duration_seconds_sum" && s.value > 0 {
			f.PhaseSecondsTotal[s.labels["phase"]] = round(f.PhaseSecondsTotal[s.labels["phase"]]+s.value, 3)
		}
	}
	return f
}

// APIRequest is one kind of request the API server answered during the window.
type APIRequest struct {
	Count float64 `json:"count"`
	// Seconds is the sum of their latencies (apiserver_request_duration_seconds), a rough
	// measure of the server's time, waits included.
	Seconds float64 `json:"seconds"`
}

// apiRequests are the requests the API server answered between two scrapes, by verb, resource,
// subresource and scope ("POST pods/binding", "LIST pods (cluster)"), leaving out watches and
// the counts below 10.
func apiRequests(before, after []sample) map[string]APIRequest {
	key := func(s sample) string {
		r := s.labels["resource"]
		if sub := s.labels["subresource"]; sub != "" {
			r += "/" + sub
		}
		k := s.labels["verb"] + " " + r
		if s.labels["verb"] == "LIST" {
			k += " (" + s.labels["scope"] + ")"
		}
		return k
	}
	sums := func(ss []sample) map[string]APIRequest {
		m := map[string]APIRequest{}
		for _, s := range ss {
			if s.labels["verb"] == "WATCH" {
				continue
			}
			switch s.name {
			case "apiserver_request_total":
				r := m[key(s)]
				r.Count += s.value
				m[key(s)] = r
			case "apiserver_request_duration_seconds_sum":
				r := m[key(s)]
				r.Seconds += s.value
				m[key(s)] = r
			}
		}
		return m
	}
	b, a := sums(before), sums(after)
	out := map[string]APIRequest{}
	for k, v := range a {
		if d := v.Count - b[k].Count; d >= 10 {
			out[k] = APIRequest{Count: d, Seconds: round(v.Seconds-b[k].Seconds, 2)}
		}
	}
	return out
}

// printResult writes one run's summary.
func printResult(w io.Writer, r *Result) {
	fmt.Fprintf(w, "\n== %s: %d nodes (%s), %d pods (%s) in %d namespaces", r.Label, r.Nodes, r.NodeSize, r.Pods, r.PodSize, r.Namespaces)
	if r.GangSize > 0 {
		fmt.Fprintf(w, ", gangs of %d", r.GangSize)
	}
	fmt.Fprintf(w, "; client QPS/burst %s\n", r.ClientQPS)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	state := "all bound"
	if !r.Complete {
		state = "NOT all bound"
	}
	fmt.Fprintf(tw, "  pods bound\t%d of %d (%s), on %d nodes\n", r.Bound, r.Pods, state, r.NodesUsed)
	fmt.Fprintf(tw, "  pods/s\t%.1f\t(first pod created to last pod bound: %.1f s)\n", r.PodsPerSecond, r.LastBindSeconds)
	fmt.Fprintf(tw, "  pods/s while binding\t%.1f\t(first to last binding)\n", r.BindPhasePodsPerSecond)
	createRate := 0.0
	if r.CreateSeconds > 0 {
		createRate = float64(r.Created) / r.CreateSeconds
	}
	fmt.Fprintf(tw, "  time to create\t%.1f s\t(%d pods, %.0f pods/s)\n", r.CreateSeconds, r.Created, createRate)
	fmt.Fprintf(tw, "  time to first bind\t%.2f s\n", r.FirstBindSeconds)
	if l := r.Latency; l != nil {
		fmt.Fprintf(tw, "  created to bound, one by one\tp50 %.0f ms, p90 %.0f ms, p99 %.0f ms, slowest %.0f ms, mean %.0f ms\t(%d pods)\n",
			1000*l.P50, 1000*l.P90, 1000*l.P99, 1000*l.Max, 1000*l.Mean, l.Pods)
	}
	fmt.Fprintf(tw, "  nodes Ready after\t%.1f s\n", r.NodesReadySeconds)
	fmt.Fprintf(tw, "  Scheduled events\t%d\t(counted after the run; FailedScheduling: %d)\n", r.ScheduledEvents, r.FailedSchedulingEvents)
	if g := r.Gang; g != nil {
		fmt.Fprintf(tw, "  gangs\t%d: %d whole, %d in part, %d not at all\n", g.Groups, g.Whole, g.Partial, g.None)
	}
	if c := r.CPUSeconds; c != nil {
		fmt.Fprintf(tw, "  CPU seconds\t%.1f s window x %d cores = %.0f available; machine busy %.0f\n",
			c.WindowSeconds, c.Cores, c.WindowSeconds*float64(c.Cores), c.MachineBusy)
		fmt.Fprintf(tw, "    other programs on the machine\t%.1f\n", c.other())
		for _, name := range sortedByValue(c.Processes) {
			perPod := 0.0
			if r.Bound > 0 {
				perPod = 1000 * c.Processes[name] / float64(r.Bound)
			}
			fmt.Fprintf(tw, "    %s\t%.1f\t(%.1f ms per pod bound)\n", name, c.Processes[name], perPod)
		}
	}
	if len(r.APIRequests) > 0 {
		fmt.Fprintf(tw, "  API requests\t(during the window, 10 or more; the sum of their latencies)\n")
		counts := map[string]float64{}
		for k, v := range r.APIRequests {
			counts[k] = v.Count
		}
		for _, k := range sortedByValue(counts) {
			fmt.Fprintf(tw, "    %s\t%.0f\t%.1f s\n", k, counts[k], r.APIRequests[k].Seconds)
		}
	}
	if s := r.Shim; s != nil {
		fmt.Fprintf(tw, "  arbiter-k8s cycles\t%.0f, %.1f s in all, mean %.3f s, p50 %s s, p99 %s s\n",
			s.Cycles, s.CycleSecondsTotal, s.CycleSecondsMean, s.CycleSecondsP50, s.CycleSecondsP99)
		fmt.Fprintf(tw, "  arbiter-k8s binds\t%.0f (conflicts %.0f)", s.Binds, s.BindConflicts)
		for _, k := range sortedByValue(s.Errors) {
			fmt.Fprintf(tw, ", %s errors %.0f", k, s.Errors[k])
		}
		fmt.Fprintln(tw)
	}
	if s := r.Server; s != nil {
		fmt.Fprintf(tw, "  Schedule calls\t%.0f, %.2f s in all, mean %.3f s, slowest %s s\n",
			s.ScheduleCalls, s.ScheduleSecondsTotal, s.ScheduleSecondsMean, s.ScheduleSecondsMax)
		for _, k := range sortedByValue(s.PhaseSecondsTotal) {
			fmt.Fprintf(tw, "    server phase %s\t%.2f s\n", k, s.PhaseSecondsTotal[k])
		}
	}
	tw.Flush()
}

func sortedByValue(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}

// compare prints runs side by side and the ratio of each arbiter run's pods/s to each
// kube-scheduler run's.
func compare(w io.Writer, files []string) error {
	if len(files) == 0 {
		return fmt.Errorf("compare: name the result files")
	}
	var rs []*Result
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		r := &Result{}
		if err := json.Unmarshal(b, r); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		rs = append(rs, r)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(name string, f func(r *Result) string) {
		fmt.Fprintf(tw, "%s\t", name)
		for _, r := range rs {
			fmt.Fprintf(tw, "%s\t", f(r))
		}
		fmt.Fprintln(tw)
	}
	cpu := func(name string) func(r *Result) string {
		return func(r *Result) string {
			if r.CPUSeconds == nil {
				return "-"
			}
			v, ok := r.CPUSeconds.Processes[name]
			if !ok {
				return "-"
			}
			return fmt.Sprintf("%.1f", v)
		}
	}
	row("run", func(r *Result) string { return r.Label })
	row("nodes / pods", func(r *Result) string { return fmt.Sprintf("%d / %d", r.Nodes, r.Pods) })
	row("client QPS/burst", func(r *Result) string { return r.ClientQPS })
	row("bound (nodes used)", func(r *Result) string { return fmt.Sprintf("%d (%d)", r.Bound, r.NodesUsed) })
	row("pods/s (create to last bind)", func(r *Result) string { return fmt.Sprintf("%.1f", r.PodsPerSecond) })
	row("pods/s (first to last bind)", func(r *Result) string { return fmt.Sprintf("%.1f", r.BindPhasePodsPerSecond) })
	row("last bind (s)", func(r *Result) string { return fmt.Sprintf("%.1f", r.LastBindSeconds) })
	row("time to create (s)", func(r *Result) string { return fmt.Sprintf("%.1f", r.CreateSeconds) })
	row("Scheduled / FailedScheduling events", func(r *Result) string {
		return fmt.Sprintf("%d / %d", r.ScheduledEvents, r.FailedSchedulingEvents)
	})
	row("time to first bind (s)", func(r *Result) string { return fmt.Sprintf("%.2f", r.FirstBindSeconds) })
	latency := func(f func(l *Latency) float64) func(r *Result) string {
		return func(r *Result) string {
			if r.Latency == nil {
				return "-"
			}
			return fmt.Sprintf("%.0f", 1000*f(r.Latency))
		}
	}
	row("created to bound p50 (ms)", latency(func(l *Latency) float64 { return l.P50 }))
	row("created to bound p99 (ms)", latency(func(l *Latency) float64 { return l.P99 }))
	row("created to bound slowest (ms)", latency(func(l *Latency) float64 { return l.Max }))
	for _, name := range []string{"kube-apiserver", "etcd", "kwok", "kube-controller-manager", "kube-scheduler", "arbiter-k8s", "arbiter-server", "arbiter-k8s-bench"} {
		row("CPU s "+name, cpu(name))
	}
	row("CPU s machine busy", func(r *Result) string {
		if r.CPUSeconds == nil {
			return "-"
		}
		return fmt.Sprintf("%.0f of %.0f", r.CPUSeconds.MachineBusy, r.CPUSeconds.WindowSeconds*float64(r.CPUSeconds.Cores))
	})
	row("CPU s other programs", func(r *Result) string {
		if r.CPUSeconds == nil {
			return "-"
		}
		return fmt.Sprintf("%.1f", r.CPUSeconds.other())
	})
	row("gangs whole / in part", func(r *Result) string {
		if r.Gang == nil {
			return "-"
		}
		return fmt.Sprintf("%d / %d", r.Gang.Whole, r.Gang.Partial)
	})
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, a := range rs {
		if a.Scheduler != "arbiter" {
			continue
		}
		for _, k := range rs {
			if k.Scheduler != "kube-scheduler" || k.PodsPerSecond == 0 {
				continue
			}
			fmt.Fprintf(w, "%s / %s: %.2f x pods/s\n", a.Label, k.Label, a.PodsPerSecond/k.PodsPerSecond)
		}
	}
	return nil
}
