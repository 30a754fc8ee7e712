"""Fixtures for the Slurm adapter: a real Slurm cluster, a queue file, and a way to run
``arbiter-slurm`` as an admin would (the console script the package installs).

Without Slurm's daemons on the machine, or without root, the end-to-end tests are skipped; with
ARBITER_REQUIRE_SLURM=1 (``make test`` sets it) they fail instead, so a missing install step
cannot pass unnoticed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cluster import SlurmCluster, missing_programs

QUEUE_FILE = """\
queues:
  - name: research
    deserved: {gpu: 12, cpu: 24000, memory: 50331648000}
    queues:
      - name: team-a
        deserved: {gpu: 4, cpu: 8000, memory: 8589934592}
        accounts: [physics]
      - name: team-b
        deserved: {gpu: 4, cpu: 8000, memory: 8589934592}
        accounts: [chemistry]
      - name: interns
        deserved: {gpu: 0}
        limit: {gpu: 4}
        accounts: [interns]
"""


def _unavailable(reason: str) -> None:
    if os.environ.get("ARBITER_REQUIRE_SLURM") == "1":
        pytest.fail(f"{reason} (ARBITER_REQUIRE_SLURM=1)")
    pytest.skip(reason)


@pytest.fixture
def slurm_cluster() -> Iterator[SlurmCluster]:
    yield from _cluster(accounting=False)


@pytest.fixture
def slurm_accounting_cluster() -> Iterator[SlurmCluster]:
    """The cluster with slurmdbd on a MariaDB of its own, so that sacctmgr has accounts."""
    yield from _cluster(accounting=True)


def _cluster(accounting: bool) -> Iterator[SlurmCluster]:
    missing = missing_programs(accounting)
    if missing:
        _unavailable(f"Slurm programs missing: {', '.join(missing)} "
                     "(apt-get install slurmctld slurmd slurm-client munge slurmdbd mariadb-server)")
    if os.geteuid() != 0:
        _unavailable("the Slurm test cluster runs its daemons as root")
    # A short path: munge's socket path must fit in a sockaddr_un.
    root = Path(tempfile.mkdtemp(prefix="arb-slurm-"))
    cluster = SlurmCluster(root, accounting=accounting)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        if os.environ.get("ARBITER_KEEP_SLURM_DIR") != "1":
            shutil.rmtree(root, ignore_errors=True)


@dataclass
class AdapterRun:
    returncode: int
    stdout: str
    stderr: str


@dataclass
class Adapter:
    """Runs ``arbiter-slurm`` against the cluster and the arbiter server."""

    cluster: SlurmCluster
    server: str
    queue_file: Path

    @property
    def command(self) -> list[str]:
        script = Path(sys.executable).parent / "arbiter-slurm"
        return [str(script) if script.exists() else "arbiter-slurm"]

    def args(self, *extra: str) -> list[str]:
        return [*self.command, "--server", self.server, "--partition", "gpu",
                "--queues", str(self.queue_file), "--log-format", "json", *extra]

    def once(self, *extra: str) -> AdapterRun:
        proc = subprocess.run(self.args("--once", *extra), capture_output=True, text=True,
                              env=self.cluster.env, timeout=120, check=False)
        return AdapterRun(proc.returncode, proc.stdout, proc.stderr)

    def start(self, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        return subprocess.Popen(self.args(*extra), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                env=env or self.cluster.env)


@pytest.fixture
def adapter(slurm_cluster: SlurmCluster, arbiter_server: str, tmp_path: Path) -> Adapter:
    queue_file = tmp_path / "queues.yaml"
    queue_file.write_text(QUEUE_FILE)
    return Adapter(slurm_cluster, arbiter_server, queue_file)
