"""``arbiter-slurm`` against a real slurmctld and three slurmd, with the real arbiter-server.

Each test starts its own cluster (see cluster.py) and submits jobs as users would; the adapter
runs as its console script. Every job of the ``gpu`` partition is held at submission by the
cluster's job_submit.lua, so only the adapter starts jobs.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from arbiter.client import Client
from arbiter.v1 import arbiter_pb2
from google.protobuf import json_format

from cluster import USER, SlurmCluster
from conftest import Adapter


def _bindings_of(server: str, snapshot_file: Path) -> dict[str, list[str]]:
    """What arbiter answers to the snapshot the adapter sent: the nodes of each bound job."""
    request = json_format.Parse(snapshot_file.read_text(), arbiter_pb2.ScheduleRequest())
    with Client(server) as client:
        response = client.schedule(request)
    nodes: dict[str, list[tuple[str, str]]] = {}
    for binding in response.bindings:
        nodes.setdefault(binding.pod_group, []).append((binding.pod, binding.node))
    return {job: [node for _, node in sorted(pods)] for job, pods in nodes.items()}


def _state(cluster: SlurmCluster, job_id: int) -> str:
    return str(cluster.jobs()[job_id]["job_state"])


def _running(cluster: SlurmCluster, *job_ids: int) -> bool:
    jobs = cluster.jobs()
    return all(jobs[j]["job_state"] == "RUNNING" for j in job_ids)


def _reason(cluster: SlurmCluster, job_id: int) -> str:
    out = cluster.run("squeue", "--noheader", "-j", str(job_id), "-o", "%k").stdout
    return out.strip()


def test_jobs_of_two_accounts_start_on_exactly_the_nodes_arbiter_chose(
        slurm_cluster: SlurmCluster, adapter: Adapter, tmp_path: Path) -> None:
    a1 = slurm_cluster.submit("physics", gpus=4)
    a2 = slurm_cluster.submit("physics", gpus=1)
    b1 = slurm_cluster.submit("chemistry", gpus=2)
    b2 = slurm_cluster.submit("chemistry", nodes=2, gpus=1)
    assert all(_state(slurm_cluster, j) == "PENDING" for j in (a1, a2, b1, b2))

    dump = tmp_path / "snapshot.json"
    run = adapter.once("--dump-snapshot", str(dump))
    assert run.returncode == 0, run.stderr
    chosen = _bindings_of(adapter.server, dump)
    assert sorted(chosen) == sorted(str(j) for j in (a1, a2, b1, b2))

    slurm_cluster.wait_for(lambda: _running(slurm_cluster, a1, a2, b1, b2), "all jobs running")
    for job in (a1, a2, b1, b2):
        assert slurm_cluster.job_nodes(job) == chosen[str(job)], job
        assert _reason(slurm_cluster, job).startswith("arbiter: placed on ")


def test_a_gang_starts_whole_or_not_at_all(slurm_cluster: SlurmCluster, adapter: Adapter) -> None:
    # team-b holds one GPU of one node, within its quota and not preemptible.
    blocker = slurm_cluster.submit("chemistry", gpus=1, requeue=False)
    assert adapter.once().returncode == 0
    slurm_cluster.wait_for(lambda: _running(slurm_cluster, blocker), "the blocker running")

    gang = slurm_cluster.submit("physics", nodes=3, gpus=4)
    run = adapter.once()
    assert run.returncode == 0, run.stderr
    time.sleep(2)  # would Slurm start any of it?
    job = slurm_cluster.jobs()[gang]
    assert job["job_state"] == "PENDING" and job["priority"] == 0
    assert slurm_cluster.job_nodes(gang) == []
    assert _reason(slurm_cluster, gang).startswith("arbiter: ")

    slurm_cluster.run("scancel", str(blocker))
    slurm_cluster.wait_for(lambda: blocker not in slurm_cluster.jobs()
                           or _state(slurm_cluster, blocker) != "RUNNING", "the blocker gone")
    slurm_cluster.wait_for(lambda: slurm_cluster.idle_nodes() == 3, "every node idle")
    assert adapter.once().returncode == 0
    slurm_cluster.wait_for(lambda: _running(slurm_cluster, gang), "the whole gang running")
    assert sorted(slurm_cluster.job_nodes(gang)) == ["n1", "n2", "n3"]


def test_an_account_over_its_fair_share_is_requeued_when_the_other_submits(
        slurm_cluster: SlurmCluster, adapter: Adapter) -> None:
    a_jobs = [slurm_cluster.submit("physics", gpus=4) for _ in range(3)]
    assert adapter.once().returncode == 0
    slurm_cluster.wait_for(lambda: _running(slurm_cluster, *a_jobs), "team-a using every GPU")

    b_job = slurm_cluster.submit("chemistry", gpus=4)
    run = adapter.once()
    assert run.returncode == 0, run.stderr
    slurm_cluster.wait_for(lambda: _running(slurm_cluster, b_job), "team-b's job running")

    jobs = slurm_cluster.jobs()
    victims = [j for j in a_jobs if jobs[j]["job_state"] != "RUNNING"]
    assert len(victims) == 1, {j: jobs[j]["job_state"] for j in a_jobs}
    victim = jobs[victims[0]]
    assert victim["job_state"] == "PENDING" and victim["priority"] == 0  # requeued, held again
    assert victim["restart_cnt"] == 1
    assert "FAIR_SHARE_RECLAIM" in run.stdout + run.stderr

    # The next cycle keeps the victim waiting: team-a is at its fair share.
    assert adapter.once().returncode == 0
    time.sleep(1)
    assert _state(slurm_cluster, victims[0]) == "PENDING"
    assert _reason(slurm_cluster, victims[0]).startswith("arbiter: ")


def test_a_job_over_its_queues_limit_stays_held_and_squeue_shows_why(
        slurm_cluster: SlurmCluster, adapter: Adapter) -> None:
    job = slurm_cluster.submit("interns", nodes=2, gpus=4)  # 8 GPUs; the queue's limit is 4
    run = adapter.once()
    assert run.returncode == 0, run.stderr
    time.sleep(1)
    assert _state(slurm_cluster, job) == "PENDING"
    reason = _reason(slurm_cluster, job)
    assert reason.startswith("arbiter: queue-over-limit: "), reason
    assert "interns" in reason


def test_a_dry_run_prints_the_decisions_and_changes_nothing(
        slurm_cluster: SlurmCluster, adapter: Adapter) -> None:
    job = slurm_cluster.submit("physics", gpus=2)
    run = adapter.once("--dry-run")
    assert run.returncode == 0, run.stderr
    assert f"start   job {job}: scontrol update JobId={job} ReqNodeList=" in run.stdout
    time.sleep(1)
    assert _state(slurm_cluster, job) == "PENDING"
    assert slurm_cluster.jobs()[job]["priority"] == 0
    assert _reason(slurm_cluster, job) in ("", "(null)")


def test_killing_slurmctld_mid_cycle_loses_nothing_and_the_adapter_recovers(
        slurm_cluster: SlurmCluster, adapter: Adapter, tmp_path: Path) -> None:
    first = slurm_cluster.submit("physics", nodes=2, gpus=2)
    second = slurm_cluster.submit("chemistry", gpus=1)
    # slurmctld saves its state in the background; a job submitted just before a crash is lost
    # by slurmctld itself, whatever the adapter does. Start once both are on disk.
    slurm_cluster.wait_for_state_saved()

    # The worst moment: slurmctld dies after the adapter pinned a job to its nodes and before
    # it released it. A wrapper around scontrol kills it there, once.
    wrappers = tmp_path / "bin"
    wrappers.mkdir()
    trigger = tmp_path / "kill-on-release"
    trigger.write_text("armed")
    assert slurm_cluster.ctld is not None
    for name in ("sinfo", "squeue"):
        (wrappers / name).symlink_to(subprocess.check_output(["which", name], text=True).strip())
    real_scontrol = subprocess.check_output(["which", "scontrol"], text=True).strip()
    (wrappers / "scontrol").write_text(
        "#!/bin/bash\n"
        f'if [ "$1" = release ] && [ -e {trigger} ]; then\n'
        f"  rm -f {trigger}; kill -9 {slurm_cluster.ctld.pid}\n"
        "fi\n"
        f'exec {real_scontrol} "$@"\n')
    (wrappers / "scontrol").chmod(0o755)

    slurm_cluster.expect_slurmctld_death()
    metrics_port = _free_port()
    proc = adapter.start("--interval", "1", "--slurm-bin-dir", str(wrappers),
                         "--command-timeout", "5", "--metrics-port", str(metrics_port))
    try:
        slurm_cluster.wait_for(lambda: not trigger.exists(), "the adapter's first release")
        assert slurm_cluster.ctld.wait(timeout=10) == -signal.SIGKILL
        # Cycles fail while slurmctld is away, and the adapter keeps going.
        slurm_cluster.wait_for(
            lambda: _metric(metrics_port, "arbiter_slurm_cycles_total",
                            'outcome="slurm_error"') >= 2, "two failed cycles")
        assert proc.poll() is None, "the adapter must outlive slurmctld"

        slurm_cluster.start_slurmctld()
        jobs = slurm_cluster.jobs()
        assert first in jobs and second in jobs, "slurmctld's restart lost a job"
        slurm_cluster.wait_for(lambda: _running(slurm_cluster, first, second),
                               "both jobs running after the restart")
        late = slurm_cluster.submit("chemistry", gpus=1)
        slurm_cluster.wait_for(lambda: _running(slurm_cluster, late), "a new job placed")
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    # Each job ran where the adapter pinned it, and was released only after it was pinned.
    jobs = slurm_cluster.jobs()
    for job in (first, second, late):
        pinned = jobs[job]["required_nodes"]
        assert sorted(slurm_cluster.job_nodes(job)) == sorted(pinned.split(",")), job
        assert jobs[job]["restart_cnt"] == 0, "a job was started twice"
    logs = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert any(entry["msg"] == "cannot read the cluster; retrying next cycle" for entry in logs)


def _free_port() -> int:
    from cluster import free_port
    return free_port()


def _metric(port: int, name: str, labels: str) -> float:
    """A sample of the adapter's metrics; 0 until the adapter serves them."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            text = response.read().decode()
    except urllib.error.URLError:
        return 0.0
    for line in text.splitlines():
        if (line.startswith(name + "{") and labels in line) or line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_the_usage_ledger_advances_between_cycles_and_is_sent_to_arbiter(
        slurm_cluster: SlurmCluster, adapter: Adapter, tmp_path: Path) -> None:
    ledger, dump = tmp_path / "ledger.json", tmp_path / "snapshot.pb"
    job = slurm_cluster.submit("physics", gpus=4)
    flags = ("--ledger", str(ledger), "--half-life", "3600", "--k-value", "1",
             "--dump-snapshot", str(dump))
    assert adapter.once(*flags).returncode == 0
    slurm_cluster.wait_for(lambda: _running(slurm_cluster, job), "the job running")
    first = json.loads(ledger.read_text())
    time.sleep(1.5)
    assert adapter.once(*flags).returncode == 0
    second = json.loads(ledger.read_text())
    assert second["updated"] > first["updated"]
    held = second["queues"]["team-a"]["nvidia.com/gpu"]
    assert held >= 4 * 1.0  # four GPUs over at least a second
    assert second["queues"]["research"]["nvidia.com/gpu"] == held  # the parent counts its subtree
    assert second["capacity"]["nvidia.com/gpu"] >= 12 * 1.0

    request = arbiter_pb2.ScheduleRequest.FromString(dump.read_bytes())  # binary: ends in .pb
    usage = {u.queue: dict(u.usage) for u in request.snapshot.usage}
    assert usage["team-a"]["nvidia.com/gpu"] == held
    assert request.snapshot.usage_capacity["nvidia.com/gpu"] == second["capacity"]["nvidia.com/gpu"]
    assert request.policy.k_value == 1.0


def test_the_account_hierarchy_of_slurmdbd_becomes_the_queues(
        slurm_accounting_cluster: SlurmCluster, arbiter_server: str, tmp_path: Path) -> None:
    cluster = slurm_accounting_cluster
    cluster.sacctmgr("add", "account", "physics", "fairshare=3", "GrpTRES=gres/gpu=8")
    cluster.sacctmgr("add", "account", "theory", "parent=physics", "fairshare=1")
    cluster.sacctmgr("add", "account", "chemistry", "fairshare=1")
    cluster.sacctmgr("add", "user", "root", "account=physics,theory,chemistry")
    physics = cluster.submit("physics", gpus=4)
    theory = cluster.submit("theory", gpus=4)
    chemistry = cluster.submit("chemistry", gpus=4)

    dump = tmp_path / "snapshot.json"
    script = Path(sys.executable).parent / "arbiter-slurm"
    proc = subprocess.run(
        [str(script) if script.exists() else "arbiter-slurm", "--server", arbiter_server,
         "--partition", "gpu", "--queues-from-sacctmgr", "--once", "--dump-snapshot", str(dump)],
        capture_output=True, text=True, env=cluster.env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr

    request = json_format.Parse(dump.read_text(), arbiter_pb2.ScheduleRequest())
    queues = {q.name: q for q in request.snapshot.queues}
    assert sorted(queues) == ["chemistry", "physics", "physics.jobs", "theory"]
    assert queues["physics"].parent == "" and queues["theory"].parent == "physics"
    assert queues["physics.jobs"].parent == "physics"
    assert queues["physics"].over_quota_weight["nvidia.com/gpu"] == 3.0
    assert dict(queues["physics"].limit) == {"nvidia.com/gpu": 8.0}
    groups = {g.name: g.queue for g in request.snapshot.pod_groups}
    assert groups == {str(physics): "physics.jobs", str(theory): "theory",
                      str(chemistry): "chemistry"}
    cluster.wait_for(lambda: _running(cluster, physics, theory, chemistry), "all three running")


def _held_by(cluster: SlurmCluster, job_id: int) -> str:
    job = cluster.jobs()[job_id]
    assert job["job_state"] == "PENDING" and job["priority"] == 0, job["job_state"]
    return str(job["state_reason"])


def _try_release(cluster: SlurmCluster, job_id: int) -> None:
    """The job's owner, an ordinary user, tries to start the job around arbiter."""
    attempt = cluster.run_as(USER, "scontrol", "release", str(job_id))
    assert attempt.returncode != 0, f"{USER} released job {job_id}: {attempt.stdout}"
    time.sleep(1)  # would Slurm start it?
    assert _state(cluster, job_id) == "PENDING"
    assert cluster.jobs()[job_id]["priority"] == 0


def test_an_unprivileged_user_cannot_release_a_managed_job_nor_a_victim(
        slurm_cluster: SlurmCluster, adapter: Adapter) -> None:
    # Over its queue's limit, so that arbiter keeps it waiting: held from submission on.
    waiting = slurm_cluster.submit("interns", nodes=2, gpus=4, user=USER)
    _try_release(slurm_cluster, waiting)
    assert adapter.once().returncode == 0
    assert _held_by(slurm_cluster, waiting) == "JobHeldAdmin"
    _try_release(slurm_cluster, waiting)

    mine = [slurm_cluster.submit("physics", gpus=4, user=USER) for _ in range(3)]
    assert adapter.once().returncode == 0
    slurm_cluster.wait_for(lambda: _running(slurm_cluster, *mine), "the user's jobs running")
    other = slurm_cluster.submit("chemistry", gpus=4)
    assert adapter.once().returncode == 0
    slurm_cluster.wait_for(lambda: _running(slurm_cluster, other), "the other account's job")
    jobs = slurm_cluster.jobs()
    (victim,) = [j for j in mine if jobs[j]["job_state"] != "RUNNING"]
    assert _held_by(slurm_cluster, victim) == "JobHeldAdmin"
    # The victim's comment says why it left, not where it was placed.
    assert _reason(slurm_cluster, victim).startswith("arbiter: evicted: FAIR_SHARE_RECLAIM")
    _try_release(slurm_cluster, victim)


def test_an_invalid_queue_edit_keeps_the_last_good_tree(
        slurm_cluster: SlurmCluster, adapter: Adapter, tmp_path: Path) -> None:
    good = adapter.queue_file.read_text()
    invalid = good.replace("deserved: {gpu: 0}",
                           "deserved: {gpu: 0}\n        over_quota_weight: {gpu: -1}")
    assert invalid != good

    # A first run with such a file refuses to start, naming the file and the queue's path.
    adapter.queue_file.write_text(invalid)
    first = adapter.once()
    assert first.returncode == 2, first.stderr
    assert f"{adapter.queue_file}: queues[0].queues[2].over_quota_weight.gpu" in first.stderr
    assert "'interns'" in first.stderr

    adapter.queue_file.write_text(good)
    port = _free_port()
    proc = adapter.start("--interval", "1", "--metrics-port", str(port))
    try:
        slurm_cluster.wait_for(
            lambda: _metric(port, "arbiter_slurm_cycles_total", 'outcome="ok"') >= 1,
            "a first cycle")
        adapter.queue_file.write_text(invalid)
        slurm_cluster.wait_for(lambda: _metric(port, "arbiter_slurm_config_errors_total", "")
                               >= 2, "the edit refused")
        job = slurm_cluster.submit("physics", gpus=1)
        slurm_cluster.wait_for(lambda: _running(slurm_cluster, job), "a job placed by the old tree")
        assert _metric(port, "arbiter_slurm_cycles_total", 'outcome="arbiter_error"') == 0
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    logs = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    refused = [e for e in logs
               if e["msg"] == "queue definitions refused; keeping the last good ones"]
    assert refused and "queues[0].queues[2].over_quota_weight.gpu" in refused[0]["error"]


def test_an_exclusive_job_takes_its_whole_node_beside_a_plain_one(
        slurm_cluster: SlurmCluster, adapter: Adapter) -> None:
    exclusive = slurm_cluster.submit("physics", gpus=1, extra=("--exclusive",))
    plain = slurm_cluster.submit("chemistry", gpus=1)
    run = adapter.once()
    assert run.returncode == 0, run.stderr
    slurm_cluster.wait_for(lambda: _running(slurm_cluster, exclusive, plain), "both running")
    assert set(slurm_cluster.job_nodes(exclusive)).isdisjoint(slurm_cluster.job_nodes(plain))


def test_a_released_job_that_slurm_does_not_start_is_held_again_and_decided_afresh(
        slurm_cluster: SlurmCluster, adapter: Adapter) -> None:
    # A reservation arbiter knows nothing of keeps every node from the job.
    slurm_cluster.run("scontrol", "create", "reservation", "ReservationName=maintenance",
                      "StartTime=now", "Duration=10", "Nodes=ALL", "Users=root",
                      "Flags=ignore_jobs")
    job = slurm_cluster.submit("physics", gpus=1)
    port = _free_port()
    proc = adapter.start("--interval", "1", "--start-timeout-cycles", "2",
                         "--metrics-port", str(port))
    try:
        slurm_cluster.wait_for(lambda: _metric(port, "arbiter_slurm_actions_total",
                                               'action="rehold"') >= 1, "the job held again")
        slurm_cluster.run("scontrol", "delete", "ReservationName=maintenance")
        slurm_cluster.wait_for(lambda: _running(slurm_cluster, job), "the job placed again")
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    logs = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert any(e.get("action") == "rehold" and e.get("job") == job for e in logs)


def test_a_victim_placed_again_soon_after_its_eviction_starts_at_once(
        slurm_cluster: SlurmCluster, adapter: Adapter) -> None:
    a_jobs = [slurm_cluster.submit("physics", gpus=4) for _ in range(3)]
    assert adapter.once().returncode == 0
    slurm_cluster.wait_for(lambda: _running(slurm_cluster, *a_jobs), "team-a using every GPU")
    b_job = slurm_cluster.submit("chemistry", gpus=4)
    assert adapter.once().returncode == 0
    slurm_cluster.wait_for(lambda: _running(slurm_cluster, b_job), "team-b's job running")
    jobs = slurm_cluster.jobs()
    (victim,) = [j for j in a_jobs if jobs[j]["job_state"] != "RUNNING"]
    slurm_cluster.wait_for(lambda: _state(slurm_cluster, victim) == "PENDING",
                           "the victim requeued")

    slurm_cluster.run("scancel", str(b_job))
    slurm_cluster.wait_for(lambda: slurm_cluster.idle_nodes() == 1, "team-b's node idle")
    assert adapter.once().returncode == 0
    # Slurm's requeue delay (the credential lifetime, 120 s) would hold it back.
    slurm_cluster.wait_for(lambda: _running(slurm_cluster, victim), "the victim running again",
                           timeout=30)

