"""``arbiter-slurm``: Slurm places and requeues the jobs of its managed partitions by arbiter's
decisions.

This module is the command line: it parses the flags, builds the adapter's collaborators (Slurm's
commands, the arbiter client, metrics and logging) and hands them to the cycle loop,
:mod:`arbiter.slurm.loop`, which says what a cycle does.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from types import FrameType
from typing import Sequence

from arbiter.client import Client, TLSFiles
from arbiter.slurm import loop
from arbiter.slurm.commands import SlurmCommands
from arbiter.slurm.observe import Metrics, setup_logging
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
    p.add_argument("--start-timeout-cycles", type=int, default=3,
                   help="hold again, and decide afresh, a job released by arbiter that Slurm "
                        "has not started after this many cycles; 0 = never")
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
    if args.start_timeout_cycles < 0:
        p.error("--start-timeout-cycles must not be negative")
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


def settings_from(args: argparse.Namespace) -> loop.Settings:
    """The cycle loop's settings, from the parsed flags."""
    return loop.Settings(
        partitions=tuple(args.partitions),
        policy=policy_from(args),
        queue_file=None if args.queues_from_sacctmgr else args.queues,
        reason_field=args.reason_field,
        dry_run=args.dry_run,
        dump_snapshot=args.dump_snapshot,
        ledger=args.ledger,
        half_life=args.half_life,
        start_timeout_cycles=args.start_timeout_cycles,
    )


def stop_on_signals() -> threading.Event:
    """An event that SIGTERM and SIGINT set: the loop stops after the cycle under way."""
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        log.info("stopping after this cycle", extra={"signal": signal.Signals(signum).name})
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    return stop


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
            adapter = loop.Adapter(settings_from(args), slurm, client, metrics, loop.Stdout())
            adapter.load_queues()
        except (OSError, ValueError) as err:
            log.error("cannot start", extra={"error": str(err)})
            return 2
        if args.once:
            return 0 if adapter.cycle() else 1
        stop = stop_on_signals()
        log.info("started", extra={"server": args.server, "partitions": args.partitions,
                                   "interval": args.interval, "dry_run": args.dry_run})
        loop.run(adapter, args.interval, stop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
