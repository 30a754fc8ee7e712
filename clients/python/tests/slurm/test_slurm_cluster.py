"""The Slurm test cluster itself: stopping it leaves nothing running."""

from __future__ import annotations

from pathlib import Path

from cluster import USER, SlurmCluster


def _argv0(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
    except OSError:
        return ""


def test_a_stopped_cluster_leaves_no_process_behind(slurm_cluster: SlurmCluster) -> None:
    jobs = [slurm_cluster.submit("physics", gpus=1), slurm_cluster.submit("physics", nodes=2),
            slurm_cluster.submit("chemistry", gpus=1, user=USER)]
    for job in jobs:
        slurm_cluster.run("scontrol", "release", str(job))
    slurm_cluster.wait_for(lambda: all(j["job_state"] == "RUNNING"
                                       for j in slurm_cluster.jobs().values()), "the jobs running")
    slurm_cluster.wait_for(lambda: len(slurm_cluster.steps()) >= len(jobs), "their steps")
    # Raises, naming them, if a step (or anything else of the cluster's) were left running.
    slurm_cluster.stop()
    assert slurm_cluster.leftover_processes() == []


def test_a_job_process_that_left_its_step_is_ended_with_the_jobs(
        slurm_cluster: SlurmCluster) -> None:
    # The subshell's sleep is re-parented to init at once, out of reach of the step's process
    # tree (proctrack/linuxproc): Slurm ends the job without it.
    job = slurm_cluster.submit("physics", script_body="(exec -a stray-sleep sleep 600 &)\n"
                                                      "sleep 600\n")
    slurm_cluster.run("scontrol", "release", str(job))

    def strays() -> list[int]:
        return [pid for pid in slurm_cluster.leftover_processes() if _argv0(pid) == "stray-sleep"]

    slurm_cluster.wait_for(lambda: bool(strays()), "the job's stray process")
    slurm_cluster.end_jobs()
    assert strays() == []
    slurm_cluster.stop()
    assert slurm_cluster.leftover_processes() == []
