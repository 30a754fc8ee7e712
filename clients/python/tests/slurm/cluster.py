"""A real Slurm cluster on loopback for the adapter's end-to-end tests.

``munged``, one ``slurmctld`` and one ``slurmd`` per node, from Debian's packages, all in a
temporary directory with ports of their own. Every node claims 8 CPUs, 16000 MB and 4 GPUs
(``SlurmdParameters=config_overrides``; the GPUs are character devices that stand for
``/dev/null``). A ``job_submit.lua`` holds every job of the ``gpu`` partition, as a site that
lets arbiter decide would configure it, and refuses to let anyone but root release them. Tests
submit jobs as root, or as the unprivileged ``USER`` (through ``setpriv``) to check that a job's
owner cannot start it around arbiter. Needs root (the daemons run as root, and the device
nodes need ``mknod``).

Stopping the cluster cancels its jobs and waits for their steps before it stops the daemons (a
``slurmstepd`` whose slurmd is gone cannot report its end, and would stay behind), and fails if
any process of the cluster is still running after that.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any, Callable

DAEMONS = ["munged", "mungekey", "slurmctld", "slurmd"]
CLIENTS = ["sinfo", "squeue", "scontrol", "sbatch", "scancel", "setpriv"]
# The unprivileged user that tests submit jobs as, and try to bypass the adapter as.
USER = "nobody"
SBIN = ["/usr/sbin", "/usr/bin"]
NODES = ["n1", "n2", "n3"]
GPUS_PER_NODE = 4

JOB_SUBMIT_LUA = """\
-- Jobs of the partitions arbiter manages wait, held, until arbiter places them, and only an
-- operator (arbiter-slurm runs as root or SlurmUser) may release them or change their priority.
local managed = { gpu = true }
local operators = { [0] = true }   -- root; add SlurmUser's uid if it is not root

local function is_managed(partitions)
  for partition in string.gmatch(partitions or "gpu", "[^,]+") do
    if managed[partition] then return true end
  end
  return false
end

function slurm_job_submit(job_desc, part_list, submit_uid)
  if is_managed(job_desc.partition) then
    job_desc.priority = 0   -- held until arbiter releases it
  end
  return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  if job_desc.priority ~= slurm.NO_VAL and not operators[modify_uid]
      and is_managed(job_rec.partition) then
    slurm.log_user("jobs of partition %s are started by arbiter-slurm only", job_rec.partition)
    return slurm.ESLURM_ACCESS_DENIED
  end
  return slurm.SUCCESS
end
"""


def find(name: str) -> str | None:
    return shutil.which(name) or next(
        (os.path.join(d, name) for d in SBIN if os.access(os.path.join(d, name), os.X_OK)), None)


ACCOUNTING = ["slurmdbd", "sacctmgr", "mariadbd", "mariadb", "mariadb-install-db"]


def missing_programs(accounting: bool = False) -> list[str]:
    needed = DAEMONS + CLIENTS + (ACCOUNTING if accounting else [])
    return [name for name in needed if find(name) is None]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class SlurmCluster:
    """Starts, queries and stops the cluster; ``env`` is what Slurm's commands need."""

    def __init__(self, root: Path, timeout: float = 30.0, accounting: bool = False) -> None:
        self.root = root
        # With accounting: MariaDB and slurmdbd too, so that sacctmgr holds the account tree.
        self.accounting = accounting
        self.db_port = free_port()
        self.dbd_port = free_port()
        self.mariadb: subprocess.Popen[bytes] | None = None
        self.slurmdbd: subprocess.Popen[bytes] | None = None
        self.timeout = timeout
        self.conf = root / "slurm.conf"
        self.env = dict(os.environ, SLURM_CONF=str(self.conf))
        self.ctld: subprocess.Popen[bytes] | None = None
        self.slurmds: list[subprocess.Popen[bytes]] = []
        self._killed: subprocess.Popen[bytes] | None = None  # a slurmctld a test killed
        self.munged_pid_file = root / "munge" / "munged.pid"
        self.ctld_port = free_port()
        self.node_ports = {name: free_port() for name in NODES}

    # --- life cycle -------------------------------------------------------------------------

    def start(self) -> None:
        for sub in ("munge", "state", "log", "dev", "spool", "out"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        # An unprivileged user's commands read slurm.conf and reach munged's socket; its jobs
        # write their output to out/.
        os.chmod(self.root, 0o755)
        os.chmod(self.root / "munge", 0o755)
        os.chmod(self.root / "out", 0o1777)
        key = self.root / "munge" / "munge.key"
        self._check([find("mungekey") or "mungekey", "--create", f"--keyfile={key}", "--bits=1024"])
        os.chmod(key, 0o600)
        self._check([find("munged") or "munged", "--force", f"--key-file={key}",
                     f"--socket={self.munge_socket}", f"--pid-file={self.munged_pid_file}",
                     f"--log-file={self.root / 'munge' / 'munged.log'}",
                     f"--seed-file={self.root / 'munge' / 'munged.seed'}"])
        self._write_config()
        if self.accounting:
            self._start_accounting()
        self.start_slurmctld()
        for name in NODES:
            (self.root / "spool" / name).mkdir(exist_ok=True)
            self.slurmds.append(self._spawn([find("slurmd") or "slurmd", "-D", "-f", str(self.conf),
                                             "-N", name], f"slurmd-{name}.out"))
        self.wait_for(lambda: self.idle_nodes() == len(NODES), "every node idle")

    @property
    def munge_socket(self) -> Path:
        return self.root / "munge" / "sock"

    def start_slurmctld(self) -> None:
        """Starts (or restarts) slurmctld; a restart recovers the jobs from its state files."""
        self.ctld = self._spawn([find("slurmctld") or "slurmctld", "-D", "-i", "-f", str(self.conf)],
                                "slurmctld.out")
        self.wait_for(self._controller_answers, "slurmctld answers")

    def kill_slurmctld(self) -> None:
        if self.ctld is not None and self.ctld.poll() is None:
            self.ctld.kill()
            self.ctld.wait(timeout=10)
        self._killed = self.ctld

    def wait_for_state_saved(self) -> None:
        """Waits until slurmctld has written its job state after this call."""
        since = time.time()
        state = self.root / "state" / "job_state"
        self.wait_for(lambda: state.exists() and state.stat().st_mtime > since,
                      "slurmctld to save its job state")

    def expect_slurmctld_death(self) -> None:
        """The running slurmctld is about to be killed by the test: waits do not fail on it."""
        self._killed = self.ctld

    def _start_accounting(self) -> None:
        """MariaDB on a loopback port with the accounting database, then slurmdbd on it."""
        data = self.root / "db" / "data"
        data.parent.mkdir(exist_ok=True)
        self._check([find("mariadb-install-db") or "mariadb-install-db", "--user=root",
                     f"--datadir={data}", "--auth-root-authentication-method=normal",
                     "--skip-test-db"])
        socket_path = self.root / "db" / "sock"
        self.mariadb = self._spawn(
            [find("mariadbd") or "mariadbd", "--user=root", f"--datadir={data}",
             f"--socket={socket_path}", f"--port={self.db_port}", "--bind-address=127.0.0.1",
             f"--pid-file={self.root / 'db' / 'pid'}", "--skip-name-resolve",
             f"--log-error={self.root / 'log' / 'mariadb.log'}"], "mariadb.out")
        sql = [find("mariadb") or "mariadb", "-S", str(socket_path), "-u", "root"]
        self.wait_for(lambda: subprocess.run([*sql, "-e", "select 1"], capture_output=True,
                                             check=False).returncode == 0, "MariaDB answers")
        self._check([*sql, "-e",
                     "create database slurm_acct_db; "
                     "create user 'slurm'@'127.0.0.1' identified by 'arbiter-e2e'; "
                     "grant all on slurm_acct_db.* to 'slurm'@'127.0.0.1';"])
        dbd_conf = self.root / "slurmdbd.conf"  # slurmdbd reads it beside slurm.conf
        dbd_conf.write_text("\n".join([
            "DbdHost=localhost",
            "DbdAddr=127.0.0.1",
            f"DbdPort={self.dbd_port}",
            "SlurmUser=root",
            "AuthType=auth/munge",
            f"AuthInfo=socket={self.munge_socket}",
            "StorageType=accounting_storage/mysql",
            "StorageHost=127.0.0.1",
            f"StoragePort={self.db_port}",
            "StorageUser=slurm",
            "StoragePass=arbiter-e2e",
            "StorageLoc=slurm_acct_db",
            f"LogFile={self.root / 'log' / 'slurmdbd.log'}",
            f"PidFile={self.root / 'slurmdbd.pid'}",
        ]) + "\n")
        os.chmod(dbd_conf, 0o600)
        self.slurmdbd = self._spawn([find("slurmdbd") or "slurmdbd", "-D"], "slurmdbd.out")
        self.wait_for(self._register_cluster, "slurmdbd to register the cluster")

    def _register_cluster(self) -> bool:
        self.run("sacctmgr", "-i", "add", "cluster", "arbiter-e2e", check=False)
        return self._cluster_registered()

    def _cluster_registered(self) -> bool:
        out = self.run("sacctmgr", "-n", "-P", "show", "cluster", "format=Cluster",
                       check=False).stdout
        return "arbiter-e2e" in out.split()

    def sacctmgr(self, *args: str) -> None:
        """Runs ``sacctmgr -i ARGS`` (no confirmation prompt)."""
        self.run("sacctmgr", "-i", *args)

    def stop(self) -> None:
        """Ends every job, waits for their steps, then stops the daemons. Raises RuntimeError
        (after killing them) if any process of this cluster is still running then."""
        problems = []
        if self.ctld is not None and self.ctld.poll() is None:
            try:
                self.end_jobs()
            except RuntimeError as err:  # stop the daemons all the same
                problems.append(str(err))
        for proc in [*self.slurmds, self.ctld]:
            if proc is not None and proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + 10
        for proc in [*self.slurmds, self.ctld]:
            if proc is None:
                continue
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for proc in (self.slurmdbd, self.mariadb):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        try:
            pid = int(self.munged_pid_file.read_text().strip())
            os.kill(pid, signal.SIGTERM)
        except (OSError, ValueError):
            pass
        try:
            self._check_nothing_left()
        except RuntimeError as err:
            problems.append(str(err))
        if problems:
            raise RuntimeError("\n".join(problems))

    def end_jobs(self, timeout: float = 60.0) -> None:
        """Cancels every job and waits until none holds a node and no step of this cluster's
        (``slurmstepd``) is left: a step whose slurmd is gone cannot report its end, and would
        stay behind."""
        ids = self.run("squeue", "--noheader", "--format=%i", check=False).stdout.split()
        if ids:
            self.run("scancel", *ids, check=False)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            listed = self.run("squeue", "--noheader", "--states=R,CG,CF,S,ST",
                              "--format=%i", check=False)
            if listed.returncode == 0 and not listed.stdout.split() and not self.steps():
                self._end_strays()
                return
            time.sleep(0.2)
        raise RuntimeError(f"Slurm test cluster {self.root}: jobs or steps still running "
                           f"{timeout:g}s after scancel: {self._describe(self.steps())}")

    def _end_strays(self) -> None:
        """Kills the job processes that outlive their job. ``proctrack/linuxproc`` (this cluster
        cannot use cgroups) finds a step's processes by walking down from its slurmstepd, so a
        child re-parented when its batch shell was signalled first (a script's ``sleep``) is
        not signalled and runs to its end. Slurm has ended every job and step by now; what is
        left with a job id in its environment belongs to none of them."""
        marker = b"SLURM_JOB_ID="
        strays = [pid for pid in self.leftover_processes()
                  if any(entry.startswith(marker) for entry in _environ(pid))]
        for pid in strays:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        deadline = time.monotonic() + 5
        while any(_alive(pid) for pid in strays) and time.monotonic() < deadline:
            time.sleep(0.05)

    def steps(self) -> list[int]:
        """The slurmstepd processes of this cluster's jobs."""
        return [pid for pid in self.leftover_processes() if _name(pid) == "slurmstepd"]

    def leftover_processes(self) -> list[int]:
        """The processes still running with this cluster's SLURM_CONF in their environment (the
        daemons, each job's slurmstepd and the job's own processes inherit it)."""
        marker = f"SLURM_CONF={self.conf}".encode()
        pids = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            if marker in _environ(int(entry.name)):
                pids.append(int(entry.name))
        return pids

    def _check_nothing_left(self) -> None:
        """After the daemons were told to stop: waits a little for the processes of this cluster
        to end; any still running then is killed, and reported."""
        deadline = time.monotonic() + 5
        while (pids := self.leftover_processes()) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not pids:
            return
        described = self._describe(pids)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        raise RuntimeError(f"Slurm test cluster {self.root}: processes left behind: {described}")

    @staticmethod
    def _describe(pids: list[int]) -> str:
        return ", ".join(f"{pid} ({_name(pid)})" for pid in pids) or "none"

    def _spawn(self, command: list[str], log_name: str) -> subprocess.Popen[bytes]:
        out = open(self.root / "log" / log_name, "ab")
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=self.env,
                                start_new_session=True)

    def _check(self, command: list[str]) -> None:
        proc = subprocess.run(command, capture_output=True, text=True, env=self.env,
                              timeout=30, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed: {proc.stderr.strip()}")

    def _write_config(self) -> None:
        r = self.root
        lines = [
            "ClusterName=arbiter-e2e",
            "SlurmctldHost=localhost(127.0.0.1)",
            f"SlurmctldPort={self.ctld_port}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={self.munge_socket}",
            f"StateSaveLocation={r / 'state'}",
            f"SlurmdSpoolDir={r / 'spool'}/%n",
            f"SlurmctldPidFile={r / 'slurmctld.pid'}",
            f"SlurmdPidFile={r / 'spool'}/%n/slurmd.pid",
            f"SlurmctldLogFile={r / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={r / 'log'}/slurmd-%n.log",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            *(["AccountingStorageType=accounting_storage/slurmdbd",
               "AccountingStorageHost=localhost",
               f"AccountingStoragePort={self.dbd_port}",
               # With munge, the socket that signs the connections to slurmdbd.
               f"AccountingStoragePass={self.munge_socket}",
               "AccountingStorageTRES=gres/gpu"] if self.accounting
              else ["AccountingStorageType=accounting_storage/none"]),
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core_Memory",
            "SchedulerType=sched/backfill",
            "SchedulerParameters=sched_min_interval=100000",
            "SlurmdParameters=config_overrides",
            "ReturnToService=2",
            "MpiDefault=none",
            "GresTypes=gpu",
            "JobSubmitPlugins=lua",
            "JobRequeue=1",
            "DefMemPerCPU=1000",
            "KillWait=2",
            "MinJobAge=600",
            "SlurmctldTimeout=30",
            "MessageTimeout=5",
        ]
        for name in NODES:
            lines.append(
                f"NodeName={name} NodeHostname=localhost NodeAddr=127.0.0.1 "
                f"Port={self.node_ports[name]} CPUs=8 RealMemory=16000 "
                f"Gres=gpu:{GPUS_PER_NODE} State=UNKNOWN"
                + (" Feature=a100" if name != "n3" else ""))
        lines.append(f"PartitionName=gpu Nodes={','.join(NODES)} Default=YES MaxTime=INFINITE State=UP")
        self.conf.write_text("\n".join(lines) + "\n")
        gres = []
        for name in NODES:
            devices = []
            for i in range(GPUS_PER_NODE):
                device = r / "dev" / f"{name}-gpu{i}"
                if not device.exists():
                    os.mknod(device, 0o666 | 0o020000, os.makedev(1, 3))  # like /dev/null
                devices.append(str(device))
            gres.append(f"NodeName={name} Name=gpu File={','.join(devices)}")
        (r / "gres.conf").write_text("\n".join(gres) + "\n")
        (r / "job_submit.lua").write_text(JOB_SUBMIT_LUA)

    # --- queries ----------------------------------------------------------------------------

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = [find(args[0]) or args[0], *args[1:]]
        proc = subprocess.run(command, capture_output=True, text=True, env=self.env, timeout=30,
                              check=False)
        if check and proc.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed: {proc.stderr.strip()}")
        return proc

    def _controller_answers(self) -> bool:
        return self.run("scontrol", "ping", check=False).stdout.count("UP") > 0

    def idle_nodes(self) -> int:
        proc = self.run("sinfo", "--json", check=False)
        if proc.returncode != 0:
            return 0
        nodes = json.loads(proc.stdout).get("nodes", [])
        return sum(1 for n in nodes if n.get("state") == "idle" and not n.get("state_flags"))

    def run_as(self, user: str, *args: str) -> subprocess.CompletedProcess[str]:
        """Runs a Slurm command as ``user`` (no privileges, no supplementary groups)."""
        entry = pwd.getpwnam(user)
        command = [find("setpriv") or "setpriv", f"--reuid={entry.pw_uid}",
                   f"--regid={entry.pw_gid}", "--clear-groups", find(args[0]) or args[0],
                   *args[1:]]
        return subprocess.run(command, capture_output=True, text=True, env=self.env, timeout=30,
                              check=False, cwd="/")

    def submit(self, account: str, nodes: int = 1, gpus: int = 1, requeue: bool = True,
               cpus: int = 1, seconds: int = 600, partition: str = "gpu",
               extra: tuple[str, ...] = (), user: str | None = None,
               script_body: str | None = None) -> int:
        """Submits a batch job that sleeps (or runs ``script_body``), as root or as ``user``;
        returns its id."""
        script = self.root / f"job-{time.monotonic_ns()}.sh"
        script.write_text("#!/bin/bash\n" + (script_body or f"sleep {seconds}\n"))
        script.chmod(0o755)
        args = ["sbatch", "--parsable", f"--account={account}", f"--partition={partition}",
                f"--nodes={nodes}", f"--ntasks-per-node=1", f"--cpus-per-task={cpus}",
                f"--gres=gpu:{gpus}", "--requeue" if requeue else "--no-requeue",
                f"--output={self.root / 'out' / 'job-%j.out'}", "--chdir=/", *extra, str(script)]
        if user is None:
            out = self.run(*args).stdout
        else:
            proc = self.run_as(user, *args)
            if proc.returncode != 0:
                raise RuntimeError(f"sbatch as {user} failed: {proc.stderr.strip()}")
            out = proc.stdout
        return int(out.strip().split(";")[0])

    def jobs(self) -> dict[int, dict[str, Any]]:
        proc = self.run("squeue", "--json")
        return {int(j["job_id"]): j for j in json.loads(proc.stdout).get("jobs", [])}

    def job_nodes(self, job_id: int) -> list[str]:
        job = self.jobs()[job_id]
        allocated = (job.get("job_resources") or {}).get("allocated_nodes") or []
        return [str(n["nodename"]) for n in allocated]

    def wait_for(self, predicate: Callable[[], bool], what: str, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (timeout or self.timeout)
        while time.monotonic() < deadline:
            if predicate():
                return
            for proc in [*self.slurmds, self.ctld]:
                if proc is not None and proc.poll() is not None and proc is not self._killed:
                    raise RuntimeError(f"Slurm: {proc.args!r} exited with "
                                       f"{proc.returncode} while waiting for {what}:\n"
                                       + self.log_tail())
            time.sleep(0.25)
        raise TimeoutError(f"Slurm: timed out waiting for {what}:\n" + self.log_tail())

    def log_tail(self, lines: int = 8) -> str:
        """The last lines of every daemon's log, for a failure message."""
        out = []
        for path in sorted((self.root / "log").glob("*.log")):
            tail = path.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"== {path}\n" + "\n".join(tail))
        return "\n".join(out)


def _name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


def _environ(pid: int) -> list[bytes]:
    """The environment of process ``pid``, one ``NAME=value`` entry each; empty when it is gone
    or not ours to read."""
    try:
        return Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return []


def _alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie, waiting for its parent, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
