"""The Slurm commands the adapter runs: reading the cluster as JSON, and changing jobs.

Every command is bounded by a timeout. A failure raises :class:`SlurmCommandError`, which names the
command and carries Slurm's own message, so that the caller can log it and retry next cycle.
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any, Protocol, Sequence


class SlurmCommandError(RuntimeError):
    def __init__(self, command: Sequence[str], detail: str):
        super().__init__(f"{' '.join(command)}: {detail}")
        self.command = list(command)
        self.detail = detail

    @property
    def verb(self) -> str:
        """A short, stable name for metrics: ``squeue``, ``scontrol release``…"""
        name = os.path.basename(self.command[0])
        if name == "scontrol" and len(self.command) > 1:
            return f"scontrol {self.command[1]}"
        return name


class Slurm(Protocol):
    """What the adapter needs from Slurm; :class:`SlurmCommands` runs the real commands."""

    def nodes(self) -> list[dict[str, Any]]: ...
    def jobs(self) -> list[dict[str, Any]]: ...
    def place(self, job_id: int, nodes: Sequence[str], reason_field: str, text: str) -> None: ...
    def release(self, job_id: int) -> None: ...
    def hold(self, job_id: int) -> None: ...
    def requeue_hold(self, job_id: int) -> None: ...
    def set_reason(self, job_id: int, reason_field: str, text: str) -> None: ...
    def begin_now(self, job_id: int) -> None: ...


_REASON_FIELDS = {"comment": "Comment", "admin_comment": "AdminComment"}


class SlurmCommands:
    """Runs ``sinfo``, ``squeue`` and ``scontrol`` from ``bin_dir`` (or the PATH)."""

    def __init__(self, bin_dir: str | None = None, timeout: float = 10.0,
                 env: dict[str, str] | None = None):
        self._bin_dir = bin_dir
        self._timeout = timeout
        self._env = env

    def _run(self, *args: str) -> str:
        command = list(args)
        if self._bin_dir:
            command[0] = os.path.join(self._bin_dir, command[0])
        try:
            proc = subprocess.run(command, capture_output=True, text=True, timeout=self._timeout,
                                  check=False, env=self._env)
        except subprocess.TimeoutExpired:
            raise SlurmCommandError(command, f"no answer within {self._timeout:g}s") from None
        except OSError as err:
            raise SlurmCommandError(command, str(err)) from err
        if proc.returncode != 0:
            detail = (proc.stderr or proc.stdout).strip() or f"exit status {proc.returncode}"
            raise SlurmCommandError(command, detail)
        return proc.stdout

    def _json(self, *args: str, key: str) -> list[dict[str, Any]]:
        out = self._run(*args)
        try:
            data = json.loads(out)
        except json.JSONDecodeError as err:
            raise SlurmCommandError(list(args), f"not JSON: {err}") from err
        errors = data.get("errors") or []
        if errors:
            raise SlurmCommandError(list(args), f"reported errors: {errors}")
        items = data.get(key)
        if not isinstance(items, list):
            raise SlurmCommandError(list(args), f"no {key!r} list in the output")
        return items

    def nodes(self) -> list[dict[str, Any]]:
        return self._json("sinfo", "--json", key="nodes")

    def jobs(self) -> list[dict[str, Any]]:
        return self._json("squeue", "--json", key="jobs")

    def place(self, job_id: int, nodes: Sequence[str], reason_field: str, text: str) -> None:
        """Pins a held job to exactly these nodes (one ``scontrol update``, so both or neither)."""
        self._run("scontrol", "update", f"JobId={job_id}", f"ReqNodeList={','.join(nodes)}",
                  f"{_REASON_FIELDS[reason_field]}={text}")

    def release(self, job_id: int) -> None:
        self._run("scontrol", "release", str(job_id))

    def hold(self, job_id: int) -> None:
        """Holds a job, or turns its user hold into an admin hold. Run as an operator (root or
        SlurmUser), the hold is an admin hold (``JobHeldAdmin``), which the job's owner cannot
        release."""
        self._run("scontrol", "hold", str(job_id))

    def requeue_hold(self, job_id: int) -> None:
        """Requeues a running job, held. Slurm records that hold as a user hold (``JobHeldUser``),
        which the owner could release: follow it with :meth:`hold`."""
        self._run("scontrol", "requeuehold", str(job_id))

    def begin_now(self, job_id: int) -> None:
        """Clears the begin time that a requeue sets (now plus the credential lifetime), so that
        a released job starts at once."""
        self._run("scontrol", "update", f"JobId={job_id}", "StartTime=now")

    def set_reason(self, job_id: int, reason_field: str, text: str) -> None:
        self._run("scontrol", "update", f"JobId={job_id}", f"{_REASON_FIELDS[reason_field]}={text}")
