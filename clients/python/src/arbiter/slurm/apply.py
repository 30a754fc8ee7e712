"""Applying an arbiter answer to Slurm.

The answer becomes a plan: per job, the Slurm commands to run, in order. Holds come first (a
user hold is made an admin hold, which only an operator can release; a released job Slurm did
not start in time is held again), then evictions, so that the capacity a pipelined binding
waits for is on its way out before the binding's job is released. Within a job, a step runs
only when the steps before it succeeded; a failed step is logged and the rest of that job's plan
waits for the next cycle, which decides afresh. Hence a job is released only after ``scontrol
update`` has pinned it to exactly the nodes arbiter chose.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Sequence

from arbiter.slurm.commands import Slurm, SlurmCommandError
from arbiter.slurm.mapping import PLACED_MARKER, Cycle, ManagedJob
from arbiter.v1 import arbiter_pb2

log = logging.getLogger("arbiter.slurm")

# Slurm caps a comment's length; arbiter's messages are short, but be safe.
_MAX_REASON = 1000


@dataclass
class Step:
    verb: str  # "requeuehold", "hold", "place", "release", "begin-now", "reason"
    nodes: tuple[str, ...] = ()
    text: str = ""

    def describe(self, job_id: int, reason_field: str) -> str:
        if self.verb == "place":
            return (f"scontrol update JobId={job_id} ReqNodeList={','.join(self.nodes)} "
                    f"{reason_field}={self.text!r}")
        if self.verb == "reason":
            return f"scontrol update JobId={job_id} {reason_field}={self.text!r}"
        if self.verb == "begin-now":
            return f"scontrol update JobId={job_id} StartTime=now"
        return f"scontrol {self.verb} {job_id}"


@dataclass
class JobPlan:
    job_id: int
    kind: str  # "evict", "start", "move", "hold", "rehold", "reason"
    steps: list[Step]
    why: str = ""


@dataclass
class Report:
    """What one cycle changed, and what it could not."""

    started: list[int] = field(default_factory=list)
    requeued: list[int] = field(default_factory=list)
    held: list[int] = field(default_factory=list)
    reheld: list[int] = field(default_factory=list)
    reasons: list[int] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    failed_verbs: list[str] = field(default_factory=list)


def reason_text(code: str, message: str) -> str:
    text = f"arbiter: {code}: {message}" if message else f"arbiter: {code}"
    return " ".join(text.split())[:_MAX_REASON]


def plan(response: arbiter_pb2.ScheduleResponse, cycle: Cycle) -> list[JobPlan]:
    """The commands that carry out ``response`` on the jobs of ``cycle``."""
    plans: list[JobPlan] = []
    evictions: dict[str, list[arbiter_pb2.Eviction]] = {}
    for eviction in response.evictions:
        evictions.setdefault(eviction.pod_group, []).append(eviction)
    bindings: dict[str, list[arbiter_pb2.Binding]] = {}
    for binding in response.bindings:
        bindings.setdefault(binding.pod_group, []).append(binding)

    for job_id in cycle.to_hold:
        plans.append(JobPlan(job_id, "hold", [Step("hold")],
                             "pending in a managed partition without a hold"))
    for job_id in cycle.to_admin_hold:
        plans.append(JobPlan(job_id, "hold", [Step("hold")],
                             "a user hold, which the job's owner could release"))
    for job_id in cycle.reheld:
        stuck = cycle.jobs.get(str(job_id))
        slurm_says = f" (Slurm: {stuck.slurm_reason})" if stuck and stuck.slurm_reason else ""
        plans.append(JobPlan(job_id, "rehold", [Step("hold")],
                             f"released by arbiter but not started by Slurm{slurm_says}; "
                             "decided afresh"))

    for name in sorted(evictions, key=_job_order):
        job = cycle.jobs.get(name)
        if job is None:
            log.warning("eviction names unknown job", extra={"job": name})
            continue
        why = _eviction_why(evictions[name][0])
        # requeuehold leaves a user hold, which the owner could release: hold makes it an
        # admin hold.
        if job.state == "running":
            steps = [Step("requeuehold"), Step("hold")]
        elif job.state == "placed":
            steps = [Step("hold")]
        else:
            continue  # completing: already leaving its nodes
        kind = "evict"
        placement = None
        if name in bindings:
            placement = _placement(job, bindings.pop(name))
            if placement is None:
                log.warning("moved job's new placement is incomplete; it stays held",
                            extra={"job": name})
        if placement is None:
            # The comment no longer says where it was placed.
            steps.append(Step("reason", text=reason_text("evicted", why)))
        else:
            steps += placement
            kind = "move"
        plans.append(JobPlan(job.job_id, kind, steps, why))

    for name in sorted(bindings, key=_job_order):
        job = cycle.jobs.get(name)
        if job is None or job.state != "held":
            continue  # running jobs keep their nodes; a placed one is on its way
        placement = _placement(job, bindings[name])
        if placement is None:
            log.warning("binding covers only part of a job; it stays held",
                        extra={"job": name, "pods": len(bindings[name]),
                               "nodes": job.node_count})
            continue
        plans.append(JobPlan(job.job_id, "start", placement))

    for pending in response.pending:
        job = cycle.jobs.get(pending.pod_group)
        if job is not None and job.state == "held":
            _reason(plans, job, reason_text(pending.reason, pending.message))
    for skipped in cycle.skipped:
        held = ManagedJob(skipped.job_id, "held", "", 1, [], False, "")
        _reason(plans, held, reason_text(skipped.reason, skipped.message))
    return plans


def _eviction_why(eviction: arbiter_pb2.Eviction) -> str:
    why = arbiter_pb2.EvictionReason.Name(eviction.reason)
    if eviction.preemptor_pod_group:
        why += f" for job {eviction.preemptor_pod_group}"
    return f"{why}: {eviction.message}" if eviction.message else why


def _reason(plans: list[JobPlan], job: ManagedJob, text: str) -> None:
    if text != job.reason_text:
        plans.append(JobPlan(job.job_id, "reason", [Step("reason", text=text)], text))


def _job_order(name: str) -> tuple[int, str]:
    return (int(name), name) if name.isdigit() else (2**63, name)


def _placement(job: ManagedJob, bindings: Sequence[arbiter_pb2.Binding]) -> list[Step] | None:
    """``place`` then ``release`` for a whole job, or None when the bindings are not whole."""
    by_pod = sorted(bindings, key=lambda b: _pod_index(b.pod))
    nodes = tuple(b.node for b in by_pod)
    if len(nodes) != job.node_count or len(set(b.pod for b in by_pod)) != job.node_count:
        return None
    after = any(b.after_evictions for b in by_pod)
    text = PLACED_MARKER + ",".join(nodes) + (" after evictions" if after else "")
    steps = [Step("place", nodes=nodes, text=text), Step("release")]
    if job.requeued and job.state == "held":
        steps.append(Step("begin-now"))  # a requeue delays the start; arbiter placed it now
    return steps


def _pod_index(pod: str) -> int:
    tail = pod.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def execute(plans: Sequence[JobPlan], slurm: Slurm, reason_field: str) -> Report:
    """Runs each job's steps in order, stopping that job's plan at its first failure."""
    report = Report()
    for job_plan in plans:
        done = True
        for step in job_plan.steps:
            try:
                _run(step, job_plan.job_id, slurm, reason_field)
            except SlurmCommandError as err:
                report.failures.append(str(err))
                report.failed_verbs.append(err.verb)
                log.error("slurm command failed; retried next cycle",
                          extra={"job": job_plan.job_id, "step": step.verb, "error": err.detail})
                done = False
                break
        if not done:
            continue
        if job_plan.kind in ("start", "move"):
            report.started.append(job_plan.job_id)
        if job_plan.kind in ("evict", "move"):
            report.requeued.append(job_plan.job_id)
        if job_plan.kind == "hold":
            report.held.append(job_plan.job_id)
        if job_plan.kind == "rehold":
            report.reheld.append(job_plan.job_id)
        if job_plan.kind == "reason":
            report.reasons.append(job_plan.job_id)
        log.info("applied", extra={"job": job_plan.job_id, "action": job_plan.kind,
                                   "why": job_plan.why,
                                   "commands": [s.describe(job_plan.job_id, reason_field)
                                                for s in job_plan.steps]})
    return report


def _run(step: Step, job_id: int, slurm: Slurm, reason_field: str) -> None:
    if step.verb == "requeuehold":
        slurm.requeue_hold(job_id)
    elif step.verb == "hold":
        slurm.hold(job_id)
    elif step.verb == "place":
        slurm.place(job_id, step.nodes, reason_field, step.text)
    elif step.verb == "release":
        slurm.release(job_id)
    elif step.verb == "begin-now":
        slurm.begin_now(job_id)
    elif step.verb == "reason":
        slurm.set_reason(job_id, reason_field, step.text)
    else:
        raise ValueError(f"unknown step {step.verb!r}")
