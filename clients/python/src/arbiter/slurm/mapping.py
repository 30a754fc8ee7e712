"""A Slurm cluster, as ``sinfo --json`` and ``squeue --json`` print it, as an arbiter snapshot.

The mapping:

* a node of a managed partition is a node: CPUs as ``cpu`` millicores, RealMemory as ``memory``
  bytes, ``gres/gpu`` as ``nvidia.com/gpu``, each feature as the label ``slurm.feature/<f>=true``;
  a drained, down or failing node is unschedulable. What jobs of other partitions hold on it is
  taken off its allocatable;
* a job of a managed partition is a pod group and each of its nodes a pod, so a job of N nodes is
  a gang of N whose pods go to N distinct nodes (``one_pod_per_node``). The pod's requests are
  the job's per-node share (GPUs per job as Slurm shares them out: 3 over 2 nodes is 2 + 1);
  an exclusive job's pods hold whole nodes. Its queue is the one its account feeds;
  ``--requeue`` makes it preemptible and ``--no-requeue`` not; its priority is minus its nice
  value; submit and start times carry over;
* a pending job is one that waits for arbiter: held (priority 0). A job released onto the nodes
  arbiter chose but not started yet is counted as running there, so it is never placed twice.

Jobs arbiter cannot express (heterogeneous jobs, pending arrays, constraints with alternatives,
``--exclusive=user``/``mcs``) are skipped with a reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Collection, Iterable, Mapping, Sequence

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
    requeued: bool = False  # requeued before: Slurm delays its next start (its begin time)
    slurm_reason: str = ""  # Slurm's reason for the job's state: "Resources", "JobHeldAdmin"…

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
    # Held jobs whose hold their owner could release (a user hold): made admin holds.
    to_admin_hold: list[int] = field(default_factory=list)
    # Jobs released by arbiter that Slurm did not start in time: held again, decided afresh.
    reheld: list[int] = field(default_factory=list)
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


def pod_requests(job: Mapping[str, Any], running: bool) -> list[dict[str, float]]:
    """What the job holds (or asks for) on each of its nodes, one entry per node.

    CPUs and memory are the job's totals shared out evenly (``memory_per_node`` when given).
    GPUs are ``tres_per_node`` on every node plus ``tres_per_job`` shared out as Slurm does: each
    node gets the whole part and the first nodes one more each for the remainder (``-N 2
    --gpus=3`` is 2 + 1). A running job's GPUs are what Slurm allocated on each node
    (``gres_detail``), when it says.
    """
    count = max(1, int(_number(job.get("node_count"), 1)))
    totals = resources.tres(_text(job.get("tres_alloc_str" if running else "tres_req_str")))
    if not running or resources.CPU not in totals:
        totals.setdefault(resources.CPU, resources.cpus(_number(job.get("cpus"), 1)))
    shared = {r: totals[r] / count for r in (resources.CPU, resources.MEMORY) if r in totals}
    memory_per_node = _number(job.get("memory_per_node"))
    if memory_per_node > 0:
        shared[resources.MEMORY] = resources.megabytes(memory_per_node)
    gpus = _gpus_per_node(job, count, running)
    out = []
    for i in range(count):
        requests = dict(shared)
        if gpus[i]:
            requests[resources.GPU] = gpus[i]
        out.append(requests)
    return out


def _gpus_per_node(job: Mapping[str, Any], count: int, running: bool) -> list[float]:
    detail = job.get("gres_detail")
    if running and isinstance(detail, list) and len(detail) == count:
        return [resources.gpus_in_gres(str(d)) for d in detail]
    per_node = resources.gpus_in_gres(_text(job.get("tres_per_node")))
    per_job = int(resources.gpus_in_gres(_text(job.get("tres_per_job"))))
    whole, remainder = divmod(per_job, count)
    return [per_node + whole + (1 if i < remainder else 0) for i in range(count)]


def _whole_node(shape: Mapping[str, float]) -> dict[str, float]:
    return {r: v for r, v in shape.items() if v > 0}


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


def exclusivity(job: Mapping[str, Any]) -> str:
    """How a job shares its nodes: ``"whole-node"`` (``--exclusive``, or a partition with
    ``OverSubscribe=EXCLUSIVE``: Slurm gives it every CPU and GPU of each node), ``"user"`` or
    ``"mcs"`` (``--exclusive=user``/``mcs``: nodes shared only with the owner's or the MCS
    label's jobs), or ``""`` (plain; ``--oversubscribe`` too, which arbiter counts as plain)."""
    shared = job.get("shared")
    values = [str(v).lower() for v in (shared if isinstance(shared, list) else [shared])
              if v is not None]
    exclusive = job.get("exclusive")  # later versions: a list of flags
    values += [str(v).lower() for v in (exclusive if isinstance(exclusive, list) else [])]
    if "user" in values:
        return "user"
    if "mcs" in values:
        return "mcs"
    if "none" in values or "true" in values or "0" in values:
        return "whole-node"
    return ""


def build_cycle(
    nodes_json: Sequence[Mapping[str, Any]],
    jobs_json: Sequence[Mapping[str, Any]],
    tree: QueueTree,
    partitions: Iterable[str],
    now: float,
    reason_field: str = "comment",
    rehold: Collection[int] = (),
) -> Cycle:
    """The snapshot of one cycle (queues, nodes and pod groups; no usage or policy yet).

    ``rehold``: jobs released by arbiter that Slurm has not started in time; they are mapped as
    held, so that arbiter decides for them afresh, and listed in ``Cycle.reheld``.
    """
    managed = set(partitions)
    cycle = Cycle(request=arbiter_pb2.ScheduleRequest())
    snapshot = cycle.request.snapshot
    snapshot.now.CopyFrom(_timestamp(now))
    snapshot.queues.extend(tree.queues)

    node_by_name: dict[str, arbiter_pb2.Node] = {}
    shapes: dict[str, dict[str, float]] = {}  # each managed node's whole capacity
    for raw in sorted(nodes_json, key=lambda n: str(n.get("name", ""))):
        name = str(raw.get("name", ""))
        if not name or name in node_by_name or not managed & set(raw.get("partitions") or []):
            continue
        node = arbiter_pb2.Node(name=name, unschedulable=node_unschedulable(raw))
        shapes[name] = node_capacity(raw)
        for resource, amount in shapes[name].items():
            node.allocatable[resource] = amount
        features = _text(raw.get("active_features") or raw.get("features"))
        for feature in sorted({f for f in features.split(",") if f}):
            node.labels[FEATURE_LABEL + feature] = "true"
        node_by_name[name] = node
    # An exclusive job that waits asks for the largest node shape: it fits only on a node of
    # that shape with nothing else on it, where it holds everything, as in Slurm.
    largest: dict[str, float] = {}
    for name, shape in shapes.items():
        if not node_by_name[name].unschedulable:
            for resource, amount in shape.items():
                largest[resource] = max(largest.get(resource, 0.0), amount)

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
                _take_off_job(node_by_name, job)
            continue
        if state not in ("PENDING",) and not running:
            continue  # finished, failed, cancelled: holds nothing
        account = _text(job.get("account"))
        queue = tree.queue_of(account)
        reason_text = _text(job.get(reason_field))
        if queue is None:
            if running:
                _take_off_job(node_by_name, job)
            cycle.skipped.append(SkippedJob(job_id, "no-queue",
                                            f"account {account!r} feeds no arbiter queue"))
            continue
        if int(_number(job.get("het_job_id"))) != 0 or _text(job.get("array_task_string")):
            cycle.skipped.append(SkippedJob(job_id, "unsupported-job",
                                            "heterogeneous jobs and job arrays are not supported"))
            continue
        sharing = exclusivity(job)
        if sharing in ("user", "mcs"):
            if running:
                _take_off_job(node_by_name, job)
            cycle.skipped.append(SkippedJob(
                job_id, "unsupported-exclusive",
                f"--exclusive={sharing} shares a node only with some jobs, which arbiter cannot "
                "express; submit with --exclusive or without it"))
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
        if placed and job_id in rehold:
            placed = False
            cycle.reheld.append(job_id)
        elif state == "PENDING" and slurm_priority > 0 and not placed:
            cycle.to_hold.append(job_id)  # pending but not held: hold it, decide next cycle
            continue
        elif state == "PENDING" and _text(job.get("state_reason")) == "JobHeldUser":
            cycle.to_admin_hold.append(job_id)  # its owner could release it: make it an admin hold
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
        whole_node = largest if sharing == "whole-node" else None
        group.pods.extend(_pods(job, state, placed, node_count, selector, now, whole_node, shapes))
        if running or placed:
            held_nodes = [p.node_name for p in group.pods]
            job_state = "completing" if state == "COMPLETING" else ("placed" if placed else "running")
        else:
            held_nodes, job_state = [], "held"
        cycle.jobs[group.name] = ManagedJob(
            job_id=job_id, state=job_state, queue=queue, node_count=node_count,
            nodes=held_nodes, requeueable=bool(job.get("requeue")), reason_text=reason_text,
            requeued=int(_number(job.get("restart_cnt"))) > 0,
            slurm_reason=_text(job.get("state_reason")),
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
          selector: Mapping[str, str], now: float, whole_node: Mapping[str, float] | None,
          shapes: Mapping[str, Mapping[str, float]]) -> list[arbiter_pb2.Pod]:
    running = state != "PENDING"
    requests = pod_requests(job, running=running)
    if placed:
        nodes = hostlist.expand(_text(job.get("required_nodes")))
    elif running:
        nodes = _job_nodes(job)
    else:
        nodes = []
    pods = []
    for i in range(node_count):
        pod = arbiter_pb2.Pod(name=f"{_number(job.get('job_id')):.0f}-{i}")
        if whole_node is not None:
            # Exclusive: the whole of the node it holds, or of the largest shape while it waits.
            shape = shapes.get(nodes[i], whole_node) if i < len(nodes) else whole_node
            pod_request: Mapping[str, float] = _whole_node(shape)
        else:
            pod_request = requests[i]
        for resource, amount in pod_request.items():
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


def _take_off_job(nodes: Mapping[str, arbiter_pb2.Node], job: Mapping[str, Any]) -> None:
    """Takes what a running job arbiter does not decide for holds off the allocatable of the
    managed nodes it runs on; an exclusive job holds all of each."""
    names = _job_nodes(job)
    whole = exclusivity(job) != ""
    per_node = pod_requests(job, running=True)
    for i, name in enumerate(names):
        requests = per_node[min(i, len(per_node) - 1)]
        node = nodes.get(name)
        if node is None:
            continue
        for resource in list(node.allocatable):
            amount = node.allocatable[resource] if whole else requests.get(resource, 0.0)
            node.allocatable[resource] = max(0.0, node.allocatable[resource] - amount)


def _add(allocated: dict[str, dict[str, float]], queues: Iterable[str],
         requests: Mapping[str, float]) -> None:
    for queue in queues:
        held = allocated.setdefault(queue, {})
        for resource, amount in requests.items():
            held[resource] = held.get(resource, 0.0) + amount
