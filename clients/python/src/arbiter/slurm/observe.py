"""Structured logs and Prometheus metrics of the Slurm adapter."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

# The attributes every LogRecord has; anything else was passed with ``extra=`` and is a field.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message and the record's extra fields."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                out[key] = value
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str, sort_keys=False)


class TextFormatter(logging.Formatter):
    """``time level message key=value…`` for people at a terminal."""

    def format(self, record: logging.LogRecord) -> str:
        fields = " ".join(f"{k}={v}" for k, v in vars(record).items()
                          if k not in _STANDARD and not k.startswith("_"))
        stamp = time.strftime("%H:%M:%S", time.localtime(record.created))
        line = f"{stamp} {record.levelname.lower():7} {record.getMessage()}"
        return f"{line} {fields}" if fields else line


def setup_logging(fmt: str, level: str) -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())


class Metrics:
    """The adapter's metrics, in a registry of their own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.cycles = Counter("arbiter_slurm_cycles", "Cycles run, by outcome.", ["outcome"],
                              registry=self.registry)
        self.cycle_seconds = Histogram(
            "arbiter_slurm_cycle_seconds", "Duration of a whole cycle (read, decide, apply).",
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30), registry=self.registry)
        self.actions = Counter("arbiter_slurm_actions", "Job changes applied, by kind.", ["action"],
                               registry=self.registry)
        self.command_failures = Counter(
            "arbiter_slurm_command_failures", "Slurm commands that failed, by command.",
            ["command"], registry=self.registry)
        self.config_errors = Counter(
            "arbiter_slurm_config_errors",
            "Queue definitions refused when loaded (the last good ones stay in use).",
            registry=self.registry)
        self.jobs = Gauge("arbiter_slurm_jobs", "Managed jobs in the last snapshot, by state.",
                          ["state"], registry=self.registry)
        self.last_success = Gauge("arbiter_slurm_last_success_timestamp_seconds",
                                  "When a cycle last completed.", registry=self.registry)

    def serve(self, port: int, addr: str = "0.0.0.0") -> None:
        start_http_server(port, addr=addr, registry=self.registry)
