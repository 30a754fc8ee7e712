"""``arbiter-slurm``: Slurm places and requeues the jobs of its managed partitions by arbiter's
decisions.

Each cycle it reads the cluster with ``sinfo --json`` and ``squeue --json``, builds a snapshot,
advances the usage ledger of time-aware fairness, calls ``Schedule`` and applies the answer:
held jobs are pinned to the chosen nodes and released, victims are requeued and held, and the
reason a job waits is written where ``squeue`` shows it.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time
from types import FrameType
from typing import Sequence

from google.protobuf import json_format

from arbiter.client import ArbiterError, Client, TLSFiles
from arbiter.slurm import apply, mapping, queues
from arbiter.slurm.commands import Slurm, SlurmCommandError, SlurmCommands
from arbiter.slurm.observe import Metrics, setup_logging
from arbiter.usage import AccountingError, Ledger
from arbiter.v1 import arbiter_pb2

log = logging.getLogger("arbiter.slurm")

_ACTIONS = {
    "allocate": arbiter_pb2.ACTION_ALLOCATE,
    "consolidate": arbiter_pb2.ACTION_CONSOLIDATE,
    "reclaim": arbiter_pb2.ACTION_RECLAIM,
    "preempt": arbiter_pb2.ACTION_PREEMPT,
}


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows a flag's default only when it has a meaningful one."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default in (None, False) or action.default is argparse.SUPPRESS:
            return action.help
        return super()._get_help_string(action)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="arbiter-slurm",
        description="Place and requeue the jobs of Slurm partitions by arbiter's decisions.",
        epilog="Documented in clients/python/SLURM.md.",
        formatter_class=_HelpFormatter,
    )
    p.add_argument("--server", required=True, help="arbiter-server address, HOST:PORT")
    p.add_argument("--partition", action="append", required=True, dest="partitions",
                   help="a partition whose jobs arbiter decides (repeat for several)")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--queues", metavar="FILE", help="the queue file (YAML)")
    source.add_argument("--queues-from-sacctmgr", action="store_true",
                        help="one queue per Slurm account, from slurmdbd's associations")
    when = p.add_mutually_exclusive_group()
    when.add_argument("--once", action="store_true", help="run one cycle and exit")
    when.add_argument("--interval", type=float, default=10.0, help="seconds between cycles")
    p.add_argument("--dry-run", action="store_true",
                   help="print the decisions and the commands they need; change nothing")
    p.add_argument("--dump-snapshot", metavar="FILE",
                   help="write each cycle's ScheduleRequest here (binary if it ends in .pb, "
                        "else proto3 JSON), for replay with `arbiter schedule FILE`")
    p.add_argument("--ledger", metavar="FILE",
                   help="usage ledger of time-aware fairness (JSON, written atomically)")
    p.add_argument("--half-life", type=float, default=0.0,
                   help="seconds for past usage to count half; 0 = no decay")
    p.add_argument("--k-value", type=float, default=0.0,
                   help="weight of past usage in fair shares; 0 = time-aware fairness off")
    p.add_argument("--placement", choices=["binpack", "spread"], default="binpack")
    p.add_argument("--actions", default="allocate,consolidate,reclaim,preempt",
                   help="comma-separated actions, in order")
    p.add_argument("--reason-field", choices=["comment", "admin_comment"], default="comment",
                   help="the job field where pending reasons go (squeue -o %%k shows comment)")
    p.add_argument("--deadline", type=float, default=10.0, help="seconds per Schedule attempt")
    p.add_argument("--retries", type=int, default=3, help="retries of Schedule on UNAVAILABLE")
    p.add_argument("--tls-ca", help="CA bundle: enables TLS to arbiter-server")
    p.add_argument("--tls-cert", help="client certificate, for mutual TLS")
    p.add_argument("--tls-key", help="client key, for mutual TLS")
    p.add_argument("--slurm-bin-dir", help="the directory of sinfo, squeue and scontrol; unset: the PATH")
    p.add_argument("--command-timeout", type=float, default=10.0,
                   help="seconds a Slurm command may take")
    p.add_argument("--metrics-port", type=int, default=0,
                   help="serve Prometheus /metrics on this port; 0 = off")
    p.add_argument("--log-format", choices=["json", "text"], default="json")
    p.add_argument("--log-level", default="info")
    args = p.parse_args(argv)
    if args.interval <= 0:
        p.error("--interval must be positive")
    try:
        args.action_list = [_ACTIONS[a.strip()] for a in args.actions.split(",") if a.strip()]
    except KeyError as err:
        p.error(f"--actions: unknown action {err.args[0]!r} (known: {', '.join(_ACTIONS)})")
    return args


def policy_from(args: argparse.Namespace) -> arbiter_pb2.Policy:
    return arbiter_pb2.Policy(
        fairness_model=arbiter_pb2.FAIRNESS_MODEL_KAI,
        k_value=args.k_value,
        placement=(arbiter_pb2.PLACEMENT_SPREAD if args.placement == "spread"
                   else arbiter_pb2.PLACEMENT_BINPACK),
        actions=args.action_list,
    )


class Adapter:
    """One adapter: its Slurm, its arbiter client, its ledger and its metrics."""

    def __init__(self, args: argparse.Namespace, slurm: Slurm, client: Client,
                 metrics: Metrics, out: "Writer") -> None:
        self.args = args
        self.slurm = slurm
        self.client = client
        self.metrics = metrics
        self.out = out
        self.ledger = Ledger.load(args.ledger) if args.ledger else None
        self.tree: queues.QueueTree | None = None

    def load_queues(self) -> queues.QueueTree:
        """The queue tree; a broken edit keeps the last good tree (and says so)."""
        try:
            if self.args.queues_from_sacctmgr:
                tree = queues.read_sacctmgr()
            else:
                tree = queues.load_queue_file(self.args.queues)
        except (OSError, queues.QueueConfigError) as err:
            if self.tree is None:
                raise
            log.error("queue definitions unreadable; keeping the last good ones",
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
        cycle = mapping.build_cycle(nodes, jobs, tree, self.args.partitions, now,
                                    self.args.reason_field)
        request = cycle.request
        request.policy.CopyFrom(policy_from(self.args))
        if self.ledger is not None and not self._account(cycle, now):
            return False
        for state in ("held", "placed", "running", "completing"):
            self.metrics.jobs.labels(state).set(
                sum(1 for j in cycle.jobs.values() if j.state == state))
        if self.args.dump_snapshot:
            self._dump(request)
        try:
            response = self.client.schedule(request)
        except ArbiterError as err:
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
        if self.args.dry_run:
            for job_plan in plans:
                self.out.write(_describe(job_plan, self.args.reason_field))
            self.metrics.cycles.labels("ok").inc()
            return True
        report = apply.execute(plans, self.slurm, self.args.reason_field)
        for kind, jobs_done in (("start", report.started), ("requeue", report.requeued),
                                ("hold", report.held), ("reason", report.reasons)):
            self.metrics.actions.labels(kind).inc(len(jobs_done))
        for verb in report.failed_verbs:
            self.metrics.command_failures.labels(verb).inc()
        outcome = "ok" if not report.failures else "apply_error"
        self.metrics.cycles.labels(outcome).inc()
        return not report.failures

    def _account(self, cycle: mapping.Cycle, now: float) -> bool:
        assert self.ledger is not None
        try:
            self.ledger.advance(now, cycle.allocated, cycle.capacity, self.args.half_life)
            if not self.args.dry_run:
                self.ledger.save(self.args.ledger)
        except (AccountingError, OSError) as err:
            self.metrics.cycles.labels("ledger_error").inc()
            log.error("cannot advance the usage ledger", extra={"error": str(err)})
            return False
        snapshot = cycle.request.snapshot
        for queue in sorted(self.ledger.queues):
            snapshot.usage.add(queue=queue, usage=self.ledger.queues[queue])
        snapshot.usage_capacity.update(self.ledger.capacity)
        return True

    def _dump(self, request: arbiter_pb2.ScheduleRequest) -> None:
        path = self.args.dump_snapshot
        if path.endswith(".pb"):
            data = request.SerializeToString(deterministic=True)
            with open(path, "wb") as f:
                f.write(data)
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(json_format.MessageToJson(request, sort_keys=True))


class Writer:
    def write(self, line: str) -> None:
        print(line, flush=True)


def _describe(job_plan: apply.JobPlan, reason_field: str) -> str:
    commands = "; ".join(s.describe(job_plan.job_id, reason_field) for s in job_plan.steps)
    why = f"  # {job_plan.why}" if job_plan.why and job_plan.kind != "reason" else ""
    return f"{job_plan.kind:7} job {job_plan.job_id}: {commands}{why}"


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    setup_logging(args.log_format, args.log_level)
    metrics = Metrics()
    if args.metrics_port:
        metrics.serve(args.metrics_port)
    tls = None
    if args.tls_ca or args.tls_cert:
        tls = TLSFiles(ca=args.tls_ca, cert=args.tls_cert, key=args.tls_key)
    slurm = SlurmCommands(bin_dir=args.slurm_bin_dir, timeout=args.command_timeout)
    with Client(args.server, tls=tls, deadline=args.deadline, retries=args.retries) as client:
        try:
            adapter = Adapter(args, slurm, client, metrics, Writer())
            adapter.load_queues()
        except (OSError, ValueError) as err:
            log.error("cannot start", extra={"error": str(err)})
            return 2
        if args.once:
            return 0 if adapter.cycle() else 1
        stop = threading.Event()

        def on_signal(signum: int, frame: FrameType | None) -> None:
            log.info("stopping after this cycle", extra={"signal": signal.Signals(signum).name})
            stop.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        log.info("started", extra={"server": args.server, "partitions": args.partitions,
                                   "interval": args.interval, "dry_run": args.dry_run})
        while not stop.is_set():
            adapter.cycle()
            stop.wait(args.interval)
    return 0


if __name__ == "__main__":
    sys.exit(main())
