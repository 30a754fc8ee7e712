package translate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
)

// QueueConfigKey is the ConfigMap key that holds the queue configuration.
const QueueConfigKey = "queues.yaml"

// QueueConfig is the content of the queue ConfigMap:
//
//	policy:            # optional, the contract's Policy (proto3 JSON field names)
//	  kValue: 1
//	queues:            # the contract's Queue messages
//	- name: team-a
//	  parent: research
//	  deserved: {cpu: -1, memory: -1, nvidia.com/gpu: 8}
//	  overQuotaWeight: {nvidia.com/gpu: 2}
//	  reclaimMinRuntime: 600s
//
// Every queue is a Queue message written in YAML with the proto3 JSON mapping (lowerCamelCase or
// the original snake_case names, durations like "600s", timestamps in RFC 3339). Quantities are
// in the contract's units: cpu in millicores, memory in bytes, other resources in counts.
// Unknown fields are errors, so a typo does not silently change a quota.
type QueueConfig struct {
	Policy *arbiterv1.Policy
	Queues []*arbiterv1.Queue
}

// ParseQueueConfig parses the YAML of the queue ConfigMap. An empty document is an empty config.
func ParseQueueConfig(data []byte) (*QueueConfig, error) {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("queue config: %w", err)
	}
	cfg := &QueueConfig{}
	if len(bytes.TrimSpace(js)) == 0 || string(bytes.TrimSpace(js)) == "null" {
		return cfg, nil
	}
	var top struct {
		Policy json.RawMessage   `json:"policy"`
		Queues []json.RawMessage `json:"queues"`
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&top); err != nil {
		return nil, fmt.Errorf("queue config: %w (allowed keys: policy, queues)", err)
	}
	if len(top.Policy) > 0 && string(top.Policy) != "null" {
		cfg.Policy = &arbiterv1.Policy{}
		if err := protojson.Unmarshal(top.Policy, cfg.Policy); err != nil {
			return nil, fmt.Errorf("queue config: policy: %w", err)
		}
	}
	for i, raw := range top.Queues {
		q := &arbiterv1.Queue{}
		if err := protojson.Unmarshal(raw, q); err != nil {
			return nil, fmt.Errorf("queue config: queues[%d]: %w", i, err)
		}
		cfg.Queues = append(cfg.Queues, q)
	}
	return cfg, nil
}

// KAIQueueResource is KAI Scheduler's Queue custom resource.
var KAIQueueResource = schema.GroupVersionResource{Group: "scheduling.run.ai", Version: "v2", Resource: "queues"}

// KAI's queue quotas use its own units: cpu in millicores (as ours), memory in megabytes (10^6
// bytes) and gpu in devices.
const (
	kaiMemoryUnit = 1e6
	// GPUResource is the Kubernetes name of the GPU resource that KAI's "gpu" quota governs.
	GPUResource = "nvidia.com/gpu"
)

// QueueFromKAI translates a KAI Queue (scheduling.run.ai/v2) into a contract Queue.
//
// KAI's CRD has no defaults: an omitted quota, limit or over-quota weight is 0 there, so every
// value is sent explicitly for cpu, memory and nvidia.com/gpu (SEMANTICS §0.2, adapters). -1 is
// kept as -1 in every unit. spec.parentQueue, spec.priority, spec.preemptMinRuntime and
// spec.reclaimMinRuntime map to the fields of the same meaning; creation_time is the object's.
func QueueFromKAI(u *unstructured.Unstructured) (*arbiterv1.Queue, error) {
	name := u.GetName()
	q := &arbiterv1.Queue{
		Name:            name,
		Deserved:        map[string]float64{},
		Limit:           map[string]float64{},
		OverQuotaWeight: map[string]float64{},
	}
	if parent, _, err := unstructured.NestedString(u.Object, "spec", "parentQueue"); err != nil {
		return nil, fmt.Errorf("kai queue %s: spec.parentQueue: %w", name, err)
	} else {
		q.Parent = parent
	}
	if p, found, err := nestedNumber(u.Object, "spec", "priority"); err != nil {
		return nil, fmt.Errorf("kai queue %s: %w", name, err)
	} else if found {
		if p != math.Trunc(p) || p < math.MinInt32 || p > math.MaxInt32 {
			return nil, fmt.Errorf("kai queue %s: spec.priority %v is not a 32-bit integer", name, p)
		}
		q.Priority = int32(p)
	}
	for _, r := range []struct{ kai, name string }{{"cpu", "cpu"}, {"memory", "memory"}, {"gpu", GPUResource}} {
		for _, f := range []struct {
			field string
			dst   map[string]float64
			scale bool
		}{{"quota", q.Deserved, true}, {"limit", q.Limit, true}, {"overQuotaWeight", q.OverQuotaWeight, false}} {
			v, _, err := nestedNumber(u.Object, "spec", "resources", r.kai, f.field)
			if err != nil {
				return nil, fmt.Errorf("kai queue %s: %w", name, err)
			}
			if f.scale && r.kai == "memory" && v != -1 {
				v *= kaiMemoryUnit
			}
			f.dst[r.name] = v
		}
	}
	for _, d := range []struct {
		field string
		dst   **durationpb.Duration
	}{{"preemptMinRuntime", &q.PreemptMinRuntime}, {"reclaimMinRuntime", &q.ReclaimMinRuntime}} {
		s, found, err := unstructured.NestedString(u.Object, "spec", d.field)
		if err != nil {
			return nil, fmt.Errorf("kai queue %s: spec.%s: %w", name, d.field, err)
		}
		if !found || s == "" {
			continue
		}
		dur, err := time.ParseDuration(s)
		if err != nil {
			return nil, fmt.Errorf("kai queue %s: spec.%s: %w", name, d.field, err)
		}
		*d.dst = durationpb.New(dur)
	}
	if ts := u.GetCreationTimestamp(); !ts.IsZero() {
		q.CreationTime = timestamppb.New(ts.Time)
	}
	return q, nil
}

// nestedNumber reads an int64 or float64 field (JSON numbers decode as either).
func nestedNumber(obj map[string]any, fields ...string) (float64, bool, error) {
	v, found, err := unstructured.NestedFieldNoCopy(obj, fields...)
	if err != nil || !found || v == nil {
		return 0, false, err
	}
	switch n := v.(type) {
	case int64:
		return float64(n), true, nil
	case float64:
		return n, true, nil
	case int:
		return float64(n), true, nil
	}
	return 0, false, fmt.Errorf("%v: %T is not a number", fields, v)
}

// MergeQueues joins the queues of the ConfigMap and of KAI's custom resources, sorted by name
// (stably). A ConfigMap queue replaces every KAI queue of the same name, so an administrator can
// override one queue without editing KAI's objects. Duplicates within the ConfigMap are kept, so
// that arbiter's validation reports them.
func MergeQueues(configMap, kai []*arbiterv1.Queue) []*arbiterv1.Queue {
	out := append([]*arbiterv1.Queue(nil), configMap...)
	own := map[string]bool{}
	for _, q := range configMap {
		own[q.GetName()] = true
	}
	for _, q := range kai {
		if !own[q.GetName()] {
			out = append(out, q)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out
}
