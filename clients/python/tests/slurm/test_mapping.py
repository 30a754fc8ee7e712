"""Reading Slurm's JSON (as slurmctld 22.05 printed it) into an arbiter snapshot."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from arbiter.slurm import hostlist, mapping, resources
from arbiter.slurm.queues import parse_queue_file
from arbiter.v1 import arbiter_pb2

TESTDATA = Path(__file__).parent / "testdata"
TREE = parse_queue_file({"queues": [
    {"name": "org", "queues": [
        {"name": "a", "deserved": {"gpu": 4}, "accounts": ["teama"]},
        {"name": "b", "accounts": ["chemistry", ""]},
    ]},
]})


def _load(name: str, key: str) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads((TESTDATA / name).read_text())[key]
    return data


def _cycle() -> mapping.Cycle:
    return mapping.build_cycle(_load("sinfo-22.05.json", "nodes"),
                               _load("squeue-22.05.json", "jobs"), TREE, ["gpu"], 1795702600.0)


def test_nodes_carry_capacity_in_arbiters_units_features_and_drain() -> None:
    nodes = {n.name: n for n in _cycle().request.snapshot.nodes}
    assert sorted(nodes) == ["n1", "n2", "n3"]
    n1 = nodes["n1"]
    assert dict(n1.allocatable) == {"cpu": 8000.0, "memory": 16000.0 * 1024 * 1024,
                                    "nvidia.com/gpu": 4.0}
    assert dict(n1.labels) == {"slurm.feature/a100": "true"}
    assert not n1.unschedulable
    assert nodes["n3"].unschedulable  # drained


def test_a_held_job_is_a_pending_gang_of_its_node_count() -> None:
    cycle = _cycle()
    groups = {g.name: g for g in cycle.request.snapshot.pod_groups}
    job = groups["1"]  # 2 nodes, 2 GPUs and 2 CPUs per node, requeueable, account teama
    assert job.queue == "a"
    assert job.min_member == 2 and job.one_pod_per_node
    assert job.preemptibility == arbiter_pb2.PREEMPTIBLE
    assert [p.name for p in job.pods] == ["1-0", "1-1"]
    assert all(p.node_name == "" for p in job.pods)
    assert dict(job.pods[0].requests) == {"cpu": 2000.0, "memory": 1000.0 * 1024 * 1024,
                                          "nvidia.com/gpu": 2.0}
    assert cycle.jobs["1"].state == "held"


def test_a_job_released_onto_its_nodes_is_counted_where_it_will_run() -> None:
    cycle = _cycle()
    job = {g.name: g for g in cycle.request.snapshot.pod_groups}["2"]
    assert [(p.node_name, p.phase) for p in job.pods] == [("n2", arbiter_pb2.POD_PHASE_RUNNING)]
    assert job.preemptibility == arbiter_pb2.NON_PREEMPTIBLE
    assert job.priority == -10  # nice 10
    assert cycle.jobs["2"].state == "running"
    assert cycle.allocated["b"]["nvidia.com/gpu"] == 4.0
    assert cycle.allocated["org"]["nvidia.com/gpu"] == 4.0


def test_a_constraint_becomes_a_node_selector() -> None:
    job = {g.name: g for g in _cycle().request.snapshot.pod_groups}["3"]
    assert dict(job.pods[0].node_selector) == {"slurm.feature/a100": "true"}


def test_capacity_counts_only_schedulable_nodes() -> None:
    assert _cycle().capacity["nvidia.com/gpu"] == 8.0


def _job(**fields: Any) -> dict[str, Any]:
    job: dict[str, Any] = {
        "job_id": 7, "partition": "gpu", "account": "teama", "job_state": "PENDING",
        "priority": 0, "node_count": 1, "cpus": 1, "tres_req_str": "cpu=1,mem=1000M,node=1",
        "tres_per_node": "gres:gpu:1", "requeue": True, "submit_time": 100, "comment": "",
    }
    job.update(fields)
    return job


def _node(name: str, partitions: list[str]) -> dict[str, Any]:
    return {"name": name, "cpus": 4, "real_memory": 1000, "gres": "gpu:2",
            "partitions": partitions, "state": "idle", "state_flags": []}


def test_jobs_of_unmanaged_partitions_are_taken_off_the_nodes_they_share() -> None:
    other = _job(job_id=8, partition="debug", job_state="RUNNING", tres_alloc_str="cpu=2,mem=500M",
                 job_resources={"allocated_nodes": [{"nodename": "n1"}]})
    cycle = mapping.build_cycle([_node("n1", ["gpu", "debug"]), _node("x", ["debug"])],
                                [other], TREE, ["gpu"], 0.0)
    (node,) = cycle.request.snapshot.nodes
    assert node.name == "n1"
    assert node.allocatable["cpu"] == 2000.0
    assert node.allocatable["memory"] == 500.0 * 1024 * 1024
    assert node.allocatable["nvidia.com/gpu"] == 1.0
    assert not cycle.request.snapshot.pod_groups


def test_a_pending_job_nobody_held_is_held_before_arbiter_decides_for_it() -> None:
    cycle = mapping.build_cycle([], [_job(priority=1000)], TREE, ["gpu"], 0.0)
    assert cycle.to_hold == [7]
    assert not cycle.request.snapshot.pod_groups


@pytest.mark.parametrize("fields, reason", [
    ({"account": "nobody"}, "no-queue"),
    ({"features": "a100|h100"}, "unsupported-constraint"),
    ({"array_task_string": "1-10"}, "unsupported-job"),
    ({"shared": "user"}, "unsupported-exclusive"),
])
def test_jobs_arbiter_cannot_decide_for_are_skipped_with_a_reason(
        fields: dict[str, Any], reason: str) -> None:
    cycle = mapping.build_cycle([], [_job(**fields)], TREE, ["gpu"], 0.0)
    assert [s.reason for s in cycle.skipped] == [reason]
    assert not cycle.request.snapshot.pod_groups


def test_gpus_per_job_are_shared_out_over_its_nodes() -> None:
    requests = mapping.pod_requests(
        _job(node_count=2, tres_per_node="", tres_per_job="gres:gpu:6", cpus=4,
             tres_req_str="cpu=4,mem=4G,node=2"), running=False)
    assert requests == [{"cpu": 2000.0, "memory": 2 * 1024.0**3, "nvidia.com/gpu": 3.0}] * 2


def test_gpus_per_job_that_do_not_divide_go_to_the_first_nodes_as_slurm_gives_them() -> None:
    job = _job(node_count=2, tres_per_node="", tres_per_job="gres:gpu:3",
               tres_req_str="cpu=2,mem=2G,node=2")
    assert [r["nvidia.com/gpu"] for r in mapping.pod_requests(job, running=False)] == [2.0, 1.0]
    running = dict(job, job_state="RUNNING", gres_detail=["gpu:1(IDX:0)", "gpu:2(IDX:0-1)"],
                   tres_alloc_str="cpu=2,mem=2G,node=2,gres/gpu=3")
    assert [r["nvidia.com/gpu"] for r in mapping.pod_requests(running, running=True)] == [1.0, 2.0]


def test_an_exclusive_job_asks_for_a_whole_node_and_holds_the_one_it_runs_on() -> None:
    nodes = [_node("n1", ["gpu"]), dict(_node("n2", ["gpu"]), cpus=8, gres="gpu:4")]
    waiting = _job(shared="none")
    running = _job(job_id=8, shared="none", job_state="RUNNING", tres_alloc_str="cpu=4,mem=1000M",
                   job_resources={"allocated_nodes": [{"nodename": "n1"}]})
    cycle = mapping.build_cycle(nodes, [waiting, running], TREE, ["gpu"], 0.0)
    groups = {g.name: g for g in cycle.request.snapshot.pod_groups}
    # Waiting: the largest shape, which only n2 has; running: all of n1.
    assert dict(groups["7"].pods[0].requests) == {
        "cpu": 8000.0, "memory": 1000.0 * 1024 * 1024, "nvidia.com/gpu": 4.0}
    assert dict(groups["8"].pods[0].requests) == {
        "cpu": 4000.0, "memory": 1000.0 * 1024 * 1024, "nvidia.com/gpu": 2.0}


def test_an_exclusive_job_of_another_partition_takes_its_whole_node() -> None:
    other = _job(job_id=8, partition="debug", job_state="RUNNING", shared="none",
                 tres_alloc_str="cpu=1,mem=500M", tres_per_node="",
                 job_resources={"allocated_nodes": [{"nodename": "n1"}]})
    cycle = mapping.build_cycle([_node("n1", ["gpu", "debug"])], [other], TREE, ["gpu"], 0.0)
    assert set(cycle.request.snapshot.nodes[0].allocatable.values()) == {0.0}


@pytest.mark.parametrize("shared, sharing", [
    ("none", "whole-node"), ("user", "user"), ("mcs", "mcs"), ("shared", ""), (None, ""),
    (0, "whole-node"),
])
def test_how_a_job_shares_its_nodes(shared: Any, sharing: str) -> None:
    assert mapping.exclusivity(_job(shared=shared)) == sharing


def test_a_user_hold_is_made_an_admin_hold() -> None:
    held = [_job(job_id=7, state_reason="JobHeldUser"), _job(job_id=8, state_reason="JobHeldAdmin")]
    cycle = mapping.build_cycle([], held, TREE, ["gpu"], 0.0)
    assert cycle.to_admin_hold == [7]
    assert [g.name for g in cycle.request.snapshot.pod_groups] == ["7", "8"]


def test_a_released_job_to_hold_again_is_mapped_as_held() -> None:
    placed = _job(priority=1000, comment="arbiter: placed on n1", required_nodes="n1")
    cycle = mapping.build_cycle([_node("n1", ["gpu"])], [placed], TREE, ["gpu"], 0.0)
    assert cycle.jobs["7"].state == "placed"
    cycle = mapping.build_cycle([_node("n1", ["gpu"])], [placed], TREE, ["gpu"], 0.0, rehold={7})
    assert cycle.jobs["7"].state == "held" and cycle.reheld == [7]
    assert cycle.request.snapshot.pod_groups[0].pods[0].node_name == ""


@pytest.mark.parametrize("gres, gpus", [
    ("gpu:4", 4), ("gpu:a100:2(S:0-1)", 2), ("gres:gpu:2", 2), ("gpu:a100:2,gpu:v100:1,nic:1", 3),
    ("gpu", 1), ("", 0), ("nic:4", 0), ("gres/gpu:3", 3),
])
def test_gpus_in_gres(gres: str, gpus: float) -> None:
    assert resources.gpus_in_gres(gres) == gpus


@pytest.mark.parametrize("text, hosts", [
    ("n[1,3-4]", ["n1", "n3", "n4"]),
    ("gpu[01-02],cpu7", ["gpu01", "gpu02", "cpu7"]),
    ("r[1-2]n[1-2]", ["r1n1", "r1n2", "r2n1", "r2n2"]),
    ("n1,n3", ["n1", "n3"]),
    ("", []),
])
def test_host_lists_expand_in_order(text: str, hosts: list[str]) -> None:
    assert hostlist.expand(text) == hosts


@pytest.mark.parametrize("bad", ["n[1-", "n[3-1]", "n[a]"])
def test_malformed_host_lists_are_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        hostlist.expand(bad)
