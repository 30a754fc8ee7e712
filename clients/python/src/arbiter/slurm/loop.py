"""The adapter's cycle loop: each cycle reads Slurm, decides with arbiter and applies the answer.

A cycle reads the cluster with ``sinfo --json`` and ``squeue --json``, builds a snapshot,
advances the usage ledger of time-aware fairness, calls ``Schedule`` and applies the answer:
held jobs are pinned to the chosen nodes and released, victims are requeued and held, and the
reason a job waits is written where ``squeue`` shows it. Jobs are held with admin holds, which
only an operator (the adapter) can release; a job released by arbiter that Slurm does not start
within a few cycles is held again and decided afresh. A cycle that cannot complete is counted
and logged; the next one reads the cluster again and decides afresh.

:class:`Adapter` runs one cycle; :func:`run` repeats it until told to stop. The command line
(:mod:`arbiter.slurm.cli`) builds the :class:`Settings` and the adapter's collaborators.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from google.protobuf import json_format

from arbiter.client import ArbiterError
from arbiter.slurm import apply, mapping, queues
from arbiter.slurm.commands import Slurm, SlurmCommandError
from arbiter.slurm.observe import Metrics
from arbiter.usage import AccountingError, Ledger
from arbiter.v1 import arbiter_pb2

log = logging.getLogger("arbiter.slurm")


@dataclass(frozen=True)
class Settings:
    """What a cycle needs to know; the command line's flags of the same names."""

    partitions: tuple[str, ...]
    # The policy sent with every Schedule call.
    policy: arbiter_pb2.Policy = field(default_factory=arbiter_pb2.Policy)
    # The queue file (YAML), re-read every cycle; None: one queue per account, from sacctmgr.
    queue_file: str | None = None
    # The job field where pending reasons go: "comment" or "admin_comment".
    reason_field: str = "comment"
    # Print the decisions and the commands they need; change nothing.
    dry_run: bool = False
    # Write each cycle's ScheduleRequest here (binary if it ends in .pb, else proto3 JSON).
    dump_snapshot: str | None = None
    # The usage ledger of time-aware fairness (JSON); None: no ledger.
    ledger: str | None = None
    # Seconds for past usage to count half; 0 = no decay.
    half_life: float = 0.0
    # A job released by arbiter that Slurm has not started after this many cycles is held again
    # and decided afresh; 0 = never.
    start_timeout_cycles: int = 3


class Scheduler(Protocol):
    """What a cycle needs from arbiter; :class:`arbiter.client.Client` is one."""

    def schedule(self, request: arbiter_pb2.ScheduleRequest, /) -> arbiter_pb2.ScheduleResponse:
        ...


class Writer(Protocol):
    """Where a dry run's lines go."""

    def write(self, line: str) -> None: ...


class Stdout:
    """Writes a dry run's lines to standard output, flushed line by line."""

    def write(self, line: str) -> None:
        print(line, flush=True)


class Adapter:
    """One adapter: its Slurm, its arbiter client, its ledger and its metrics.

    Raises OSError or ValueError from the constructor when the ledger file is unreadable.
    """

    def __init__(self, settings: Settings, slurm: Slurm, client: Scheduler,
                 metrics: Metrics, out: Writer) -> None:
        self.settings = settings
        self.slurm = slurm
        self.client = client
        self.metrics = metrics
        self.out = out
        self.ledger = Ledger.load(settings.ledger) if settings.ledger else None
        self.tree: queues.QueueTree | None = None
        # Consecutive cycles each job released by arbiter has been seen still pending.
        self.placed_cycles: dict[int, int] = {}

    def load_queues(self) -> queues.QueueTree:
        """The queue tree; a broken or invalid edit keeps the last good tree (and says so, and
        counts it in ``arbiter_slurm_config_errors_total``). Raises OSError or QueueConfigError
        when there is no good tree yet."""
        try:
            if self.settings.queue_file is None:
                tree = queues.read_sacctmgr()
            else:
                tree = queues.load_queue_file(self.settings.queue_file)
        except (OSError, queues.QueueConfigError) as err:
            self.metrics.config_errors.inc()
            if self.tree is None:
                raise
            log.error("queue definitions refused; keeping the last good ones",
                      extra={"error": str(err)})
            return self.tree
        self.tree = tree
        return tree

    def cycle(self) -> bool:
        """One cycle; False when it could not complete (the next one retries)."""
        started = time.monotonic()
        try:
            ok = self._cycle()
        finally:
            self.metrics.cycle_seconds.observe(time.monotonic() - started)
        if ok:
            self.metrics.last_success.set(time.time())
        return ok

    def _cycle(self) -> bool:
        try:
            nodes, jobs = self.slurm.nodes(), self.slurm.jobs()
        except SlurmCommandError as err:
            self.metrics.cycles.labels("slurm_error").inc()
            self.metrics.command_failures.labels(err.verb).inc()
            log.error("cannot read the cluster; retrying next cycle", extra={"error": str(err)})
            return False
        try:
            tree = self.load_queues()
        except (OSError, queues.QueueConfigError) as err:
            self.metrics.cycles.labels("config_error").inc()
            log.error("cannot read the queue definitions", extra={"error": str(err)})
            return False
        now = time.time()
        cycle = self._map(nodes, jobs, tree, now)
        request = cycle.request
        request.policy.CopyFrom(self.settings.policy)
        if self.ledger is not None and not self._account(cycle, now):
            return False
        for state in ("held", "placed", "running", "completing"):
            self.metrics.jobs.labels(state).set(
                sum(1 for j in cycle.jobs.values() if j.state == state))
        if self.settings.dump_snapshot:
            self._dump(request, self.settings.dump_snapshot)
        try:
            response = self.client.schedule(request)
        except ArbiterError as err:
            origin = tree.origin_of(err.field_path) if err.code.name == "INVALID_ARGUMENT" else None
            if origin is not None:
                # Only a server with stricter limits than the loader's checks gets here.
                self.metrics.cycles.labels("config_error").inc()
                log.error("arbiter refused the queue definitions", extra={
                    "queue": origin, "error": err.message, "field": err.field_path})
                return False
            self.metrics.cycles.labels("arbiter_error").inc()
            log.error("Schedule failed; retrying next cycle",
                      extra={"code": err.code.name, "error": err.message,
                             "field": err.field_path})
            return False
        plans = apply.plan(response, cycle)
        log.info("cycle decided", extra={
            "jobs": len(cycle.jobs), "nodes": len(request.snapshot.nodes),
            "bindings": len(response.bindings), "evictions": len(response.evictions),
            "pending": len(response.pending), "skipped": len(cycle.skipped)})
        if self.settings.dry_run:
            for job_plan in plans:
                self.out.write(describe(job_plan, self.settings.reason_field))
            self.metrics.cycles.labels("ok").inc()
            return True
        return self._apply(plans)

    def _map(self, nodes: list[dict[str, Any]], jobs: list[dict[str, Any]],
              tree: queues.QueueTree, now: float) -> mapping.Cycle:
        """The cycle's snapshot. A job that arbiter released and that is still pending after
        ``start_timeout_cycles`` cycles (not counting those while a job it waits for is still
        leaving its nodes) is mapped as held, to be held again and decided afresh:
        whatever kept Slurm from starting it (a reservation, a node's specialised cores, a job
        of another partition) is not in arbiter's model."""
        partitions, reason_field = list(self.settings.partitions), self.settings.reason_field
        cycle = mapping.build_cycle(nodes, jobs, tree, partitions, now, reason_field)
        limit = self.settings.start_timeout_cycles
        # A pipelined placement waits for its victims: cycles while one is still leaving its
        # nodes do not count.
        leaving = {node for job in cycle.jobs.values() if job.state == "completing"
                   for node in job.nodes}
        self.placed_cycles = {
            job.job_id: self.placed_cycles.get(job.job_id, 0) + (0 if leaving & set(job.nodes)
                                                                 else 1)
            for job in cycle.jobs.values() if job.state == "placed"}
        stuck = {j for j, seen in self.placed_cycles.items() if limit > 0 and seen >= limit}
        if not stuck:
            return cycle
        for job_id in stuck:
            del self.placed_cycles[job_id]
        log.warning("released jobs not started by Slurm; deciding afresh",
                    extra={"jobs": sorted(stuck), "cycles": limit})
        return mapping.build_cycle(nodes, jobs, tree, partitions, now, reason_field, rehold=stuck)

    def _apply(self, plans: list[apply.JobPlan]) -> bool:
        report = apply.execute(plans, self.slurm, self.settings.reason_field)
        for kind, jobs_done in (("start", report.started), ("requeue", report.requeued),
                                ("hold", report.held), ("rehold", report.reheld),
                                ("reason", report.reasons)):
            self.metrics.actions.labels(kind).inc(len(jobs_done))
        for verb in report.failed_verbs:
            self.metrics.command_failures.labels(verb).inc()
        outcome = "ok" if not report.failures else "apply_error"
        self.metrics.cycles.labels(outcome).inc()
        return not report.failures

    def _account(self, cycle: mapping.Cycle, now: float) -> bool:
        assert self.ledger is not None and self.settings.ledger is not None  # by the caller
        try:
            self.ledger.advance(now, cycle.allocated, cycle.capacity, self.settings.half_life)
            if not self.settings.dry_run:
                self.ledger.save(self.settings.ledger)
        except (AccountingError, OSError) as err:
            self.metrics.cycles.labels("ledger_error").inc()
            log.error("cannot advance the usage ledger", extra={"error": str(err)})
            return False
        snapshot = cycle.request.snapshot
        for queue in sorted(self.ledger.queues):
            snapshot.usage.add(queue=queue, usage=self.ledger.queues[queue])
        snapshot.usage_capacity.update(self.ledger.capacity)
        return True

    @staticmethod
    def _dump(request: arbiter_pb2.ScheduleRequest, path: str) -> None:
        if path.endswith(".pb"):
            data = request.SerializeToString(deterministic=True)
            with open(path, "wb") as f:
                f.write(data)
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(json_format.MessageToJson(request, sort_keys=True))


def describe(job_plan: apply.JobPlan, reason_field: str) -> str:
    """A dry run's line for one job: its plan's kind, the commands it needs, and why."""
    commands = "; ".join(s.describe(job_plan.job_id, reason_field) for s in job_plan.steps)
    why = f"  # {job_plan.why}" if job_plan.why and job_plan.kind != "reason" else ""
    return f"{job_plan.kind:7} job {job_plan.job_id}: {commands}{why}"


def run(adapter: Adapter, interval: float, stop: threading.Event) -> None:
    """Runs a cycle every ``interval`` seconds until ``stop`` is set. A failed cycle is counted
    and logged by the adapter; the loop goes on. The cycle under way when ``stop`` is set ends
    first; the wait after it does not."""
    while not stop.is_set():
        adapter.cycle()
        stop.wait(interval)
