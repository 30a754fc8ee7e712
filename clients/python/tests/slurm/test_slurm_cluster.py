"""The Slurm test cluster itself: stopping it leaves nothing running."""

from __future__ import annotations

from cluster import USER, SlurmCluster


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
