"""A Slurm cluster, as ``sinfo --json`` and ``squeue --json`` print it, as an arbiter snapshot.

The mapping:

* a node of a managed partition is a node: CPUs as ``cpu`` millicores, RealMemory as ``memory``
  bytes, ``gres/gpu`` as ``nvidia.com/gpu``, each feature as the label ``slurm.feature/<f>=true``;
  a drained, down or failing node is unschedulable. What jobs of other partitions hold on it is
  taken off its allocatable;
* a job of a managed partition is a pod group and each of its nodes a pod, so a job of N nodes is
  a gang of N whose pods go to N distinct nodes (``one_pod_per_node``). The pod's requests are
  the job's per-node share. Its queue is the one its account
  feeds; ``--requeue`` makes it preemptible and ``--no-requeue`` not; its priority is minus its
  nice value; submit and start times carry over;
* a pending job is one that waits for arbiter: held (priority 0). A job released onto the nodes
  arbiter chose but not started yet is counted as running there, so it is never placed twice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from google.protobuf.timestamp_pb2 import Timestamp

from arbiter.slurm import hostlist, resources
from arbiter.slurm.queues import QueueTree
from arbiter.v1 import arbiter_pb2

FEATURE_LABEL = "slurm.feature/"
# The marker the adapter writes in a job's reason field when it releases the job onto nodes.
PLACED_MARKER = "arbiter: placed on "

_UNSCHEDULABLE_STATES = {"down", "drained", "draining", "fail", "failing", "future", "unknown", "error"}
_UNSCHEDULABLE_FLAGS = {
    "DRAIN", "DRAINED", "DRAINING", "FAIL", "FAILING", "MAINTENANCE", "NOT_RESPONDING",
    "POWERED_DOWN", "POWERING_DOWN", "POWER_DOWN", "REBOOT_REQUESTED", "REBOOT_ISSUED",
}
_INT32_MAX = 2**31 - 1


@dataclass
class ManagedJob:
    """A job arbiter decides for, as the adapter needs it to apply decisions."""

    job_id: int
    state: str  # "held", "placed" (released, not started yet), "running", "completing"
    queue: str
    node_count: int
    nodes: list[str]
    requeueable: bool
    reason_text: str  # the current text of the field where the adapter writes reasons

    @property
    def name(self) -> str:
        return str(self.job_id)


@dataclass
class SkippedJob:
    job_id: int
    reason: str  # stable code
    message: str


@dataclass
class Cycle:
    """One cycle's snapshot and what the adapter needs beside it."""

    request: arbiter_pb2.ScheduleRequest
    jobs: dict[str, ManagedJob] = field(default_factory=dict)
    skipped: list[SkippedJob] = field(default_factory=list)
    to_hold: list[int] = field(default_factory=list)  # pending jobs nobody held: hold them first
    allocated: dict[str, dict[str, float]] = field(default_factory=dict)  # per queue, subtree
    capacity: dict[str, float] = field(default_factory=dict)


def _timestamp(seconds: float) -> Timestamp:
    ts = Timestamp()
    ts.FromNanoseconds(int(round(seconds * 1e9)))
    return ts


def _number(value: Any, default: float = 0.0) -> float:
    """Slurm 22.05 prints plain numbers; later versions wrap them as {set, infinite, number}."""
    if isinstance(value, dict):
        if not value.get("set", True) or value.get("infinite"):
            return default
        value = value.get("number", default)
    if value is None or isinstance(value, bool):
        return default
    return float(value)


def _text(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return "" if value is None else str(value)


def _partitions(job: Mapping[str, Any]) -> list[str]:
    return [p for p in _text(job.get("partition")).split(",") if p]


def _job_state(job: Mapping[str, Any]) -> str:
    state = job.get("job_state")
    if isinstance(state, list):  # later versions print a list of flags
        state = state[0] if state else ""
    return str(state or "").upper()


def node_capacity(node: Mapping[str, Any]) -> dict[str, float]:
    capacity = {
        resources.CPU: resources.cpus(_number(node.get("cpus"))),
        resources.MEMORY: resources.megabytes(_number(node.get("real_memory"))),
    }
    gpus = resources.gpus_in_gres(_text(node.get("gres")))
    if gpus:
        capacity[resources.GPU] = gpus
    return capacity


def node_unschedulable(node: Mapping[str, Any]) -> bool:
    state = node.get("state")
    states = [str(s) for s in state] if isinstance(state, list) else [str(state or "")]
    flags = {str(f).upper() for f in node.get("state_flags") or []}
    flags.update(s.upper() for s in states[1:])
    return states[0].lower() in _UNSCHEDULABLE_STATES or bool(flags & _UNSCHEDULABLE_FLAGS)


def per_node_requests(job: Mapping[str, Any], running: bool) -> dict[str, float]:
    """What the job holds (or asks for) on each of its nodes."""
    count = max(1, int(_number(job.get("node_count"), 1)))
    totals = resources.tres(_text(job.get("tres_alloc_str" if running else "tres_req_str")))
    if not running or resources.CPU not in totals:
        totals.setdefault(resources.CPU, resources.cpus(_number(job.get("cpus"), 1)))
    requests = {r: totals[r] / count for r in (resources.CPU, resources.MEMORY) if r in totals}
    memory_per_node = _number(job.get("memory_per_node"))
    if memory_per_node > 0:
        requests[resources.MEMORY] = resources.megabytes(memory_per_node)
    gpus = resources.gpus_in_gres(_text(job.get("tres_per_node")))
    gpus += resources.gpus_in_gres(_text(job.get("tres_per_job"))) / count
    if gpus:
        requests[resources.GPU] = gpus
    return requests


def node_selector(constraint: str) -> dict[str, str] | None:
    """``a100&ib`` as labels every node must carry; None for constraints arbiter cannot express
    (alternatives, counts, brackets)."""
    if not constraint:
        return {}
    if re.search(r"[|\[\]*()]", constraint):
        return None
    return {FEATURE_LABEL + f.strip(): "true" for f in re.split(r"[&,]", constraint) if f.strip()}


def _job_nodes(job: Mapping[str, Any]) -> list[str]:
    allocated = (job.get("job_resources") or {}).get("allocated_nodes")
    if isinstance(allocated, list) and allocated and all("nodename" in n for n in allocated):
        return [str(n["nodename"]) for n in allocated]
    return hostlist.expand(_text(job.get("nodes")))


def build_cycle(
    nodes_json: Sequence[Mapping[str, Any]],
    jobs_json: Sequence[Mapping[str, Any]],
    tree: QueueTree,
    partitions: Iterable[str],
    now: float,
    reason_field: str = "comment",
) -> Cycle:
    """The snapshot of one cycle (queues, nodes and pod groups; no usage or policy yet)."""
    managed = set(partitions)
    cycle = Cycle(request=arbiter_pb2.ScheduleRequest())
    snapshot = cycle.request.snapshot
    snapshot.now.CopyFrom(_timestamp(now))
    snapshot.queues.extend(tree.queues)

    node_by_name: dict[str, arbiter_pb2.Node] = {}
    for raw in sorted(nodes_json, key=lambda n: str(n.get("name", ""))):
        name = str(raw.get("name", ""))
        if not name or name in node_by_name or not managed & set(raw.get("partitions") or []):
            continue
        node = arbiter_pb2.Node(name=name, unschedulable=node_unschedulable(raw))
        for resource, amount in node_capacity(raw).items():
            node.allocatable[resource] = amount
        features = _text(raw.get("active_features") or raw.get("features"))
        for feature in sorted({f for f in features.split(",") if f}):
            node.labels[FEATURE_LABEL + feature] = "true"
        node_by_name[name] = node

    groups: list[arbiter_pb2.PodGroup] = []
    for job in sorted(jobs_json, key=lambda j: int(_number(j.get("job_id")))):
        job_id = int(_number(job.get("job_id")))
        state = _job_state(job)
        running = state in ("RUNNING", "SUSPENDED", "CONFIGURING", "COMPLETING", "STOPPED")
        if not managed.issuperset(_partitions(job)) or not _partitions(job):
            if running and managed & set(_partitions(job)):
                cycle.skipped.append(SkippedJob(job_id, "mixed-partitions",
                                                "the job names managed and unmanaged partitions"))
            if running:
                _take_off(node_by_name, _job_nodes(job), per_node_requests(job, running=True))
            continue
        if state not in ("PENDING",) and not running:
            continue  # finished, failed, cancelled: holds nothing
        account = _text(job.get("account"))
        queue = tree.queue_of(account)
        reason_text = _text(job.get(reason_field))
        if queue is None:
            if running:
                _take_off(node_by_name, _job_nodes(job), per_node_requests(job, running=True))
            cycle.skipped.append(SkippedJob(job_id, "no-queue",
                                            f"account {account!r} feeds no arbiter queue"))
            continue
        if int(_number(job.get("het_job_id"))) != 0 or _text(job.get("array_task_string")):
            cycle.skipped.append(SkippedJob(job_id, "unsupported-job",
                                            "heterogeneous jobs and job arrays are not supported"))
            continue
        selector = node_selector(_text(job.get("features")))
        if selector is None:
            cycle.skipped.append(SkippedJob(job_id, "unsupported-constraint",
                                            f"constraint {_text(job.get('features'))!r} is not a "
                                            "plain list of features"))
            continue
        node_count = max(1, int(_number(job.get("node_count"), 1)))
        # Slurm's own priority of a pending job: 0 while it is held.
        slurm_priority = 0 if running else int(_number(job.get("priority")))
        placed = (state == "PENDING" and slurm_priority > 0
                  and reason_text.startswith(PLACED_MARKER))
        if state == "PENDING" and slurm_priority > 0 and not placed:
            cycle.to_hold.append(job_id)  # pending but not held: hold it, decide next cycle
            continue
        nice = int(_number(job.get("nice")))
        group = arbiter_pb2.PodGroup(
            name=str(job_id),
            queue=queue,
            priority=max(-_INT32_MAX, min(_INT32_MAX, -nice)),
            preemptibility=arbiter_pb2.PREEMPTIBLE if job.get("requeue") else arbiter_pb2.NON_PREEMPTIBLE,
            min_member=node_count,
            creation_time=_timestamp(_number(job.get("submit_time"))),
            one_pod_per_node=node_count > 1,  # a job's nodes are distinct nodes
        )
        group.pods.extend(_pods(job, state, placed, node_count, selector, now))
        if running or placed:
            held_nodes = [p.node_name for p in group.pods]
            job_state = "completing" if state == "COMPLETING" else ("placed" if placed else "running")
        else:
            held_nodes, job_state = [], "held"
        cycle.jobs[group.name] = ManagedJob(
            job_id=job_id, state=job_state, queue=queue, node_count=node_count,
            nodes=held_nodes, requeueable=bool(job.get("requeue")), reason_text=reason_text,
        )
        if job_state in ("running", "placed"):
            for pod in group.pods:
                _add(cycle.allocated, tree.ancestry(queue), pod.requests)
        groups.append(group)

    snapshot.nodes.extend(node_by_name.values())
    snapshot.pod_groups.extend(groups)
    for node in snapshot.nodes:
        if not node.unschedulable:
            for resource, amount in node.allocatable.items():
                cycle.capacity[resource] = cycle.capacity.get(resource, 0.0) + amount
    return cycle


def _pods(job: Mapping[str, Any], state: str, placed: bool, node_count: int,
          selector: Mapping[str, str], now: float) -> list[arbiter_pb2.Pod]:
    running = state != "PENDING"
    requests = per_node_requests(job, running=running)
    if placed:
        nodes = hostlist.expand(_text(job.get("required_nodes")))
    elif running:
        nodes = _job_nodes(job)
    else:
        nodes = []
    pods = []
    for i in range(node_count):
        pod = arbiter_pb2.Pod(name=f"{_number(job.get('job_id')):.0f}-{i}")
        for resource, amount in requests.items():
            pod.requests[resource] = amount
        pod.node_selector.update(selector)
        if i < len(nodes):
            pod.node_name = nodes[i]
            if state == "COMPLETING":
                pod.phase = arbiter_pb2.POD_PHASE_RELEASING
            else:
                pod.phase = arbiter_pb2.POD_PHASE_RUNNING
                start = _number(job.get("start_time"))
                pod.start_time.CopyFrom(_timestamp(start if running and start > 0 else now))
        pods.append(pod)
    return pods


def _take_off(nodes: Mapping[str, arbiter_pb2.Node], names: Iterable[str],
              requests: Mapping[str, float]) -> None:
    """Takes what an unmanaged job holds off the allocatable of the managed nodes it runs on."""
    for name in names:
        node = nodes.get(name)
        if node is None:
            continue
        for resource, amount in requests.items():
            if resource in node.allocatable:
                node.allocatable[resource] = max(0.0, node.allocatable[resource] - amount)


def _add(allocated: dict[str, dict[str, float]], queues: Iterable[str],
         requests: Mapping[str, float]) -> None:
    for queue in queues:
        held = allocated.setdefault(queue, {})
        for resource, amount in requests.items():
            held[resource] = held.get(resource, 0.0) + amount
