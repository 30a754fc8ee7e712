package translate

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
)

// GPU sharing (SEMANTICS.md §4.13), read as KAI Scheduler v0.12.0 reads it. A pod shares a GPU
// device when it carries one of the annotations AnnotationGPUFraction or AnnotationGPUMemory; it
// then requests no nvidia.com/gpu of its own. Once bound, the devices it uses are named by the
// GPU group labels, and each device is held in the API server's accounting by a reservation pod
// (one whole nvidia.com/gpu) in the reservation namespace.
const (
	// AnnotationGPUFraction is the share of each device, a number in (0, 1) ("0.5").
	AnnotationGPUFraction = "gpu-fraction"
	// AnnotationGPUMemory is the memory needed on each device, in MiB, a positive integer.
	AnnotationGPUMemory = "gpu-memory"
	// AnnotationGPUFractionDevices is how many distinct devices (on one node) the pod shares, each
	// at the same size; absent means 1.
	AnnotationGPUFractionDevices = "gpu-fraction-num-devices"
	// LabelGPUGroup names the device of a pod sharing one device; a reservation pod carries it too.
	LabelGPUGroup = "runai-gpu-group"
	// LabelGPUGroupPrefix starts the labels of a pod sharing several devices: one label
	// "runai-gpu-group/<group>: <group>" per device, as KAI's binder writes them.
	LabelGPUGroupPrefix = LabelGPUGroup + "/"
	// LabelNodeGPUMemory is the memory of each GPU device of a node (MiB), as NVIDIA's GPU feature
	// discovery labels it.
	LabelNodeGPUMemory = "nvidia.com/gpu.memory"
	// LabelApp and ReservationApp mark a reservation pod (KAI: app=kai-resource-reservation).
	LabelApp       = "app"
	ReservationApp = "arbiter-gpu-reservation"
)

// maxGPUMemory is the largest gpu-memory the contract takes (2^53, exact in a double).
const maxGPUMemory = 1 << 53

// tibInMiB: a gpu.memory label at or above it is in bytes, not MiB (GPU feature discovery once
// wrote bytes; KAI converts them the same way).
const tibInMiB = 1024 * 1024

// NodeGPUMemory is the Node.gpu_device_memory of n: its LabelNodeGPUMemory as KAI reads it (an
// integer; a value of a TiB or more is taken as bytes and converted to MiB; then floored to a
// multiple of 100), or 0 (unknown) when the label is absent, malformed or not positive.
func NodeGPUMemory(n *corev1.Node) float64 {
	v, err := strconv.ParseInt(n.Labels[LabelNodeGPUMemory], 10, 64)
	if err != nil || v <= 0 {
		return 0
	}
	if v >= tibInMiB {
		v /= 1024 * 1024
	}
	return float64(v - v%100)
}

// SharesGPU reports whether pod asks for a share of GPU devices (valid or not).
func SharesGPU(pod *corev1.Pod) bool {
	_, f := pod.Annotations[AnnotationGPUFraction]
	_, m := pod.Annotations[AnnotationGPUMemory]
	return f || m
}

// gpuShare is what a pod's sharing annotations ask for.
type gpuShare struct {
	fraction, memory *float64
	devices          int32 // as the annotation says; 0 when absent
}

// shares reports whether the pod shares devices.
func (s gpuShare) shares() bool { return s.fraction != nil || s.memory != nil }

// Devices is the number of devices a sharing pod uses (absent = 1).
func (s gpuShare) Devices() int {
	if s.devices > 0 {
		return int(s.devices)
	}
	return 1
}

// parseGPUShare reads pod's sharing annotations, with the checks of KAI's admission webhook and
// of SEMANTICS.md §4.13.6 (rules 1 to 5) that the annotations alone decide. The error names the
// annotation.
func parseGPUShare(pod *corev1.Pod, ignored map[string]bool) (gpuShare, error) {
	var s gpuShare
	if v, ok := pod.Annotations[AnnotationGPUFraction]; ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || !(f > 0 && f < 1) {
			return s, fmt.Errorf("annotation %s=%q: want a number above 0 and below 1", AnnotationGPUFraction, v)
		}
		s.fraction = &f
	}
	if v, ok := pod.Annotations[AnnotationGPUMemory]; ok {
		m, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil || m == 0 || m > maxGPUMemory {
			return s, fmt.Errorf("annotation %s=%q: want a whole number of MiB, at least 1", AnnotationGPUMemory, v)
		}
		f := float64(m)
		s.memory = &f
	}
	if s.fraction != nil && s.memory != nil {
		return s, fmt.Errorf("annotations %s and %s are both set; a pod asks for one of them", AnnotationGPUFraction, AnnotationGPUMemory)
	}
	if v, ok := pod.Annotations[AnnotationGPUFractionDevices]; ok {
		d, err := strconv.ParseUint(strings.TrimSpace(v), 10, 31)
		if err != nil || d == 0 {
			return s, fmt.Errorf("annotation %s=%q: want a whole number of devices, at least 1", AnnotationGPUFractionDevices, v)
		}
		if !s.shares() {
			return s, fmt.Errorf("annotation %s needs %s or %s", AnnotationGPUFractionDevices, AnnotationGPUFraction, AnnotationGPUMemory)
		}
		s.devices = int32(d)
	}
	if s.shares() && !ignored[GPUResource] && requests(pod, ignored)[GPUResource] > 0 {
		return s, fmt.Errorf("annotation %s or %s is set and a container requests %s: a pod shares devices or takes whole ones, not both",
			AnnotationGPUFraction, AnnotationGPUMemory, GPUResource)
	}
	return s, nil
}

// GPUGroupsOf is the GPU groups a pod's labels name: LabelGPUGroup and the value of every
// LabelGPUGroupPrefix label, without duplicates, ascending. (KAI's reader needs LabelGPUGroup to
// be set before it looks at the others; this one reads either.)
func GPUGroupsOf(pod *corev1.Pod) []string {
	seen := map[string]bool{}
	var out []string
	add := func(g string) {
		if !seen[g] {
			seen[g] = true
			out = append(out, g)
		}
	}
	if g, ok := pod.Labels[LabelGPUGroup]; ok {
		add(g)
	}
	for k, v := range pod.Labels {
		if strings.HasPrefix(k, LabelGPUGroupPrefix) {
			add(v)
		}
	}
	sort.Strings(out)
	return out
}

// GPUGroupLabels are the labels that name groups on a pod sharing devices, as KAI's binder
// writes them: LabelGPUGroup for one device; one LabelGPUGroupPrefix label per group for a pod
// whose annotation asks for more than one (even when it lists one group).
func GPUGroupLabels(pod *corev1.Pod, groups []string) map[string]string {
	out := map[string]string{}
	d, err := strconv.ParseUint(strings.TrimSpace(pod.Annotations[AnnotationGPUFractionDevices]), 10, 31)
	if err != nil || d <= 1 {
		for _, g := range groups {
			out[LabelGPUGroup] = g
		}
		return out
	}
	for _, g := range groups {
		out[LabelGPUGroupPrefix+g] = g
	}
	return out
}

// IsGPUGroupLabel reports whether a label key names a GPU group.
func IsGPUGroupLabel(key string) bool {
	return key == LabelGPUGroup || strings.HasPrefix(key, LabelGPUGroupPrefix)
}

// NewDeviceKey reports whether a Binding's gpu_groups key names a device the answer opened
// ("new-<j>", SEMANTICS.md §4.13.2).
func NewDeviceKey(key string) bool {
	j, ok := strings.CutPrefix(key, "new-")
	if !ok || j == "" {
		return false
	}
	_, err := strconv.ParseUint(j, 10, 64)
	return err == nil
}

// GPUGroupName is the cluster-wide name of the device an answer opened on node under key
// ("new-<j>"), for the binding whose pods listing that key include the pod with UID opener (the
// smallest such UID). It is a UUID-shaped digest of the three: the same answer always gets the
// same name, and no other device gets it, since a pod's UID is unique and a pod is bound once.
func GPUGroupName(node, key, opener string) string {
	sum := sha256.Sum256([]byte(node + "\x00" + key + "\x00" + opener))
	h := hex.EncodeToString(sum[:16])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// ReservationPodName is the name of the reservation pod of group on node: deterministic, so that
// creating it twice (from a cache that has not shown the first one yet) fails with AlreadyExists
// instead of holding a second device. KAI names it "gpu-reservation-<node>-<5 random letters>".
func ReservationPodName(node, group string) string {
	sum := sha256.Sum256([]byte(node + "\x00" + group))
	if len(node) > 200 {
		node = node[:200]
	}
	return "gpu-reservation-" + strings.TrimRight(node, ".-") + "-" + hex.EncodeToString(sum[:5])
}

// Device is one GPU device: a group on a node.
type Device struct{ Node, Group string }

// Reservations is what the reservation pods need after a snapshot: the stale ones to delete and
// the devices in use that have none.
type Reservations struct {
	// Stale are reservation pods whose device no placed pod of this scheduler uses any more, and
	// duplicates; they are withheld from the snapshot until they are gone.
	Stale []*corev1.Pod
	// Missing are devices placed pods use that no reservation pod holds.
	Missing []Device
	// Leaving are the nodes with a stale or terminating reservation pod: the GPU it holds is
	// free for arbiter (the snapshot withholds the pod as long as it is there), but not yet for
	// the kubelet, so a pipelined binding onto the node waits until it is gone.
	Leaving map[string]bool
}

// isReservation reports whether pod is one of this scheduler's reservation pods.
func isReservation(pod *corev1.Pod, namespace string) bool {
	return namespace != "" && pod.Namespace == namespace && pod.Labels[LabelApp] == ReservationApp
}

// applyGPUShare sets p's sharing fields from the pod's annotations and, for a placed pod, its
// groups (assumed, else its labels). It checks rules 6 and 7 of SEMANTICS.md §4.13.6 for a
// placed pod; the error names what is wrong.
func applyGPUShare(pod *corev1.Pod, p *arbiterv1.Pod, node *arbiterv1.Node, in Input) error {
	s, err := parseGPUShare(pod, in.IgnoredResources)
	if err != nil || !s.shares() {
		return err
	}
	p.GpuFraction, p.GpuMemory, p.GpuFractionDevices = s.fraction, s.memory, s.devices
	if p.Phase == arbiterv1.PodPhase_POD_PHASE_PENDING {
		return nil
	}
	groups, assumed := in.AssumedGroups[pod.UID]
	if !assumed {
		groups = GPUGroupsOf(pod)
	}
	if len(groups) != s.Devices() {
		return fmt.Errorf("placed on node %s with %d GPU group label(s) (%s), want %d", p.NodeName, len(groups), LabelGPUGroup, s.Devices())
	}
	for _, g := range groups {
		if g == "" {
			return fmt.Errorf("placed on node %s with an empty GPU group label (%s)", p.NodeName, LabelGPUGroup)
		}
	}
	if s.memory != nil && node.GetGpuDeviceMemory() == 0 {
		return fmt.Errorf("asks for %s on node %s, which has no %s label", AnnotationGPUMemory, p.NodeName, LabelNodeGPUMemory)
	}
	p.GpuGroups = groups
	return nil
}

// gpuAmount is the GPU a placed sharing pod holds, in devices (SEMANTICS.md §4.13.1), for its
// queue's time-aware usage: d·fraction, or d·memory/M for the device memory M of its node.
func gpuAmount(p *arbiterv1.Pod, node *arbiterv1.Node) float64 {
	d := float64(max(p.GetGpuFractionDevices(), 1))
	switch {
	case p.GpuFraction != nil:
		return d * p.GetGpuFraction()
	case p.GpuMemory != nil && node.GetGpuDeviceMemory() > 0:
		return d * p.GetGpuMemory() / node.GetGpuDeviceMemory()
	}
	return 0
}

// reservations decides, once every pod is grouped, how each reservation pod counts:
//
//   - a device in use is held by its reservation pod, whose nvidia.com/gpu is not withheld: the
//     snapshot's sharing pods already count the device as one used (SEMANTICS.md §4.13.2, Pool),
//     so counting the reservation pod as well would count the device twice (KAI also leaves
//     reservation pods out of a node's used resources);
//   - everything else a reservation pod asks for (its pod slot) is withheld, and so is the whole
//     of a stale reservation pod (its device has no sharing pod left, or it is a duplicate, or it
//     is terminating): it holds its device until it is gone.
//
// inUse are the devices the snapshot's placed sharing pods list; live are those of every placed
// pod of this scheduler that carries groups, the snapshot's and the excluded ones (whose
// reservation pods are not stale while they run).
func (b *builder) reservations(inUse, live map[Device]bool) {
	held := map[Device]bool{}
	b.res.Reservations.Leaving = map[string]bool{}
	for _, pod := range SortedPods(b.reservationPods) {
		d := Device{Node: pod.Spec.NodeName, Group: pod.Labels[LabelGPUGroup]}
		switch {
		case pod.DeletionTimestamp != nil || d.Node == "":
			b.withhold(pod, d.Node)
			b.res.Reservations.Leaving[d.Node] = true
		case !live[d] || held[d]:
			b.withhold(pod, d.Node)
			b.res.Reservations.Stale = append(b.res.Reservations.Stale, pod)
			b.res.Reservations.Leaving[d.Node] = true
		default:
			held[d] = true
			if inUse[d] {
				b.withholdExcept(pod, d.Node, GPUResource)
			} else {
				b.withhold(pod, d.Node) // its pods are excluded: nothing else counts the device
			}
		}
	}
	for _, d := range sortedDevices(live) {
		if !held[d] {
			b.res.Reservations.Missing = append(b.res.Reservations.Missing, d)
		}
	}
}

func sortedDevices(m map[Device]bool) []Device {
	out := make([]Device, 0, len(m))
	for d := range m {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Node != out[j].Node {
			return out[i].Node < out[j].Node
		}
		return out[i].Group < out[j].Group
	})
	return out
}
