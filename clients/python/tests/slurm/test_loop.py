"""The cycle loop: one cycle reads Slurm, calls Schedule with the settings' policy and applies
the answer; a cycle that cannot complete is counted by outcome and changes nothing."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format

from arbiter.client import ArbiterError
from arbiter.slurm import loop
from arbiter.slurm.commands import SlurmCommandError
from arbiter.slurm.observe import Metrics
from arbiter.v1 import arbiter_pb2
from test_apply import FakeSlurm

TESTDATA = Path(__file__).parent / "testdata"
QUEUES = """\
queues:
  - name: org
    queues:
      - {name: a, deserved: {gpu: 4}, accounts: [teama]}
      - {name: b, accounts: [chemistry, ""]}
"""
POLICY = arbiter_pb2.Policy(fairness_model=arbiter_pb2.FAIRNESS_MODEL_KAI, k_value=0.5,
                            placement=arbiter_pb2.PLACEMENT_SPREAD,
                            actions=[arbiter_pb2.ACTION_ALLOCATE])


class RecordedSlurm(FakeSlurm):
    """The cluster of testdata/ (slurmctld 22.05); ``down`` makes squeue fail."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False

    def nodes(self) -> list[dict[str, Any]]:
        nodes: list[dict[str, Any]] = json.loads((TESTDATA / "sinfo-22.05.json").read_text())["nodes"]
        return nodes

    def jobs(self) -> list[dict[str, Any]]:
        if self.down:
            raise SlurmCommandError(["squeue", "--json"], "Unable to contact slurm controller")
        jobs: list[dict[str, Any]] = json.loads((TESTDATA / "squeue-22.05.json").read_text())["jobs"]
        return jobs


class FakeScheduler:
    """Answers every Schedule with ``response`` (or raises ``error``) and keeps the requests."""

    def __init__(self, response: arbiter_pb2.ScheduleResponse | None = None) -> None:
        self.response = response or arbiter_pb2.ScheduleResponse()
        self.error: ArbiterError | None = None
        self.requests: list[arbiter_pb2.ScheduleRequest] = []
        self.after_call: threading.Event | None = None

    def schedule(self, request: arbiter_pb2.ScheduleRequest, /) -> arbiter_pb2.ScheduleResponse:
        self.requests.append(request)
        if self.after_call is not None and len(self.requests) == 2:
            self.after_call.set()
        if self.error is not None:
            raise self.error
        return self.response


class Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def write(self, line: str) -> None:
        self.lines.append(line)


BIND_JOB_1 = arbiter_pb2.ScheduleResponse(bindings=[
    arbiter_pb2.Binding(pod_group="1", pod="1-0", node="n1"),
    arbiter_pb2.Binding(pod_group="1", pod="1-1", node="n2"),
])


def _adapter(tmp_path: Path, scheduler: FakeScheduler, slurm: RecordedSlurm | None = None,
             **settings: Any) -> tuple[loop.Adapter, RecordedSlurm, Metrics, Lines]:
    queue_file = tmp_path / "queues.yaml"
    queue_file.write_text(QUEUES)
    slurm = slurm or RecordedSlurm()
    metrics, out = Metrics(), Lines()
    adapter = loop.Adapter(loop.Settings(partitions=("gpu",), policy=POLICY,
                                         queue_file=str(queue_file), **settings),
                           slurm, scheduler, metrics, out)
    return adapter, slurm, metrics, out


def _cycles(metrics: Metrics, outcome: str) -> float:
    value = metrics.registry.get_sample_value("arbiter_slurm_cycles_total", {"outcome": outcome})
    return value or 0.0


def test_a_cycle_sends_the_settings_policy_and_applies_the_answer(tmp_path: Path) -> None:
    scheduler = FakeScheduler(BIND_JOB_1)
    adapter, slurm, metrics, _ = _adapter(tmp_path, scheduler)
    assert adapter.cycle()
    (request,) = scheduler.requests
    assert request.policy == POLICY
    assert sorted(g.name for g in request.snapshot.pod_groups) == ["1", "2", "3"]
    # Jobs 1 and 3 carry user holds, which their owners could release: made admin holds first.
    # Job 1 was requeued before: its begin time is cleared once it is released.
    assert slurm.calls == [("hold", 1), ("hold", 3),
                           ("place", 1, ("n1", "n2"), "arbiter: placed on n1,n2"), ("release", 1),
                           ("begin-now", 1)]
    assert _cycles(metrics, "ok") == 1
    assert metrics.registry.get_sample_value("arbiter_slurm_actions_total",
                                             {"action": "start"}) == 1


def test_a_dry_run_prints_the_commands_and_runs_none(tmp_path: Path) -> None:
    adapter, slurm, metrics, out = _adapter(tmp_path, FakeScheduler(BIND_JOB_1), dry_run=True)
    assert adapter.cycle()
    assert slurm.calls == []
    assert [line[:14] for line in out.lines] == [
        "hold    job 1:", "hold    job 3:", "start   job 1:"]
    assert _cycles(metrics, "ok") == 1


def test_a_cycle_that_cannot_read_slurm_asks_nothing_and_changes_nothing(tmp_path: Path) -> None:
    scheduler = FakeScheduler(BIND_JOB_1)
    slurm = RecordedSlurm()
    slurm.down = True
    adapter, _, metrics, _ = _adapter(tmp_path, scheduler, slurm)
    assert not adapter.cycle()
    assert scheduler.requests == [] and slurm.calls == []
    assert _cycles(metrics, "slurm_error") == 1
    assert metrics.registry.get_sample_value("arbiter_slurm_command_failures_total",
                                             {"command": "squeue"}) == 1


def test_a_failed_schedule_changes_nothing(tmp_path: Path) -> None:
    scheduler = FakeScheduler(BIND_JOB_1)
    scheduler.error = ArbiterError(grpc.StatusCode.UNAVAILABLE, "connection refused")
    adapter, slurm, metrics, _ = _adapter(tmp_path, scheduler)
    assert not adapter.cycle()
    assert len(scheduler.requests) == 1 and slurm.calls == []
    assert _cycles(metrics, "arbiter_error") == 1


@pytest.mark.parametrize("edit", [
    "queues: [{deserved: {}}]\n",
    # Parses, but arbiter-server would refuse it: a negative over-quota weight.
    QUEUES.replace("deserved: {gpu: 4}", "deserved: {gpu: 4}, over_quota_weight: {gpu: -1}"),
])
def test_a_broken_queue_edit_keeps_the_last_good_tree(tmp_path: Path, edit: str) -> None:
    scheduler = FakeScheduler()
    adapter, _, metrics, _ = _adapter(tmp_path, scheduler)
    assert adapter.cycle()
    (tmp_path / "queues.yaml").write_text(edit)
    assert adapter.cycle()
    assert _cycles(metrics, "ok") == 2
    assert metrics.registry.get_sample_value("arbiter_slurm_config_errors_total") == 1
    assert scheduler.requests[1].snapshot.queues == scheduler.requests[0].snapshot.queues


def test_queues_the_server_refuses_are_a_config_error_naming_the_queue(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    scheduler = FakeScheduler()
    scheduler.error = ArbiterError(grpc.StatusCode.INVALID_ARGUMENT,
                                   "snapshot.queues[1].name: longer than 10 bytes",
                                   field_path="snapshot.queues[1].name")
    adapter, _, metrics, _ = _adapter(tmp_path, scheduler)
    assert not adapter.cycle()
    assert _cycles(metrics, "config_error") == 1 and _cycles(metrics, "arbiter_error") == 0
    (record,) = [r for r in caplog.records if r.msg == "arbiter refused the queue definitions"]
    assert getattr(record, "queue") == (
        f"{tmp_path / 'queues.yaml'}: queues[0].queues[0] (queue 'a')")


class PlacedSlurm(RecordedSlurm):
    """Job 2 was released onto n2 by arbiter, and Slurm has not started it."""

    def jobs(self) -> list[dict[str, Any]]:
        jobs = super().jobs()
        for job in jobs:
            if job["job_id"] == 2:
                job.update(job_state="PENDING", state_reason="Resources", job_resources=None)
        return jobs


def test_a_released_job_slurm_does_not_start_is_held_again_after_the_timeout(
        tmp_path: Path) -> None:
    scheduler = FakeScheduler()
    adapter, slurm, metrics, _ = _adapter(tmp_path, scheduler, PlacedSlurm(),
                                          start_timeout_cycles=2)
    assert adapter.cycle()
    assert ("hold", 2) not in slurm.calls
    placed = {g.name: g for g in scheduler.requests[0].snapshot.pod_groups}["2"]
    assert [p.node_name for p in placed.pods] == ["n2"]
    assert adapter.cycle()
    assert ("hold", 2) in slurm.calls
    reheld = {g.name: g for g in scheduler.requests[1].snapshot.pod_groups}["2"]
    assert [p.node_name for p in reheld.pods] == [""]  # decided afresh in the same cycle
    assert metrics.registry.get_sample_value("arbiter_slurm_actions_total",
                                             {"action": "rehold"}) == 1
    slurm.calls.clear()
    assert adapter.cycle()  # seen placed again (the fake never changes): counted from 1
    assert ("hold", 2) not in slurm.calls


class PipelinedSlurm(PlacedSlurm):
    """Job 2 waits on n2 for job 3, a victim still leaving n2."""

    def jobs(self) -> list[dict[str, Any]]:
        jobs = super().jobs()
        for job in jobs:
            if job["job_id"] == 3:
                job.update(job_state="COMPLETING", nodes="n2", job_resources=None)
        return jobs


def test_cycles_while_a_victim_leaves_the_nodes_do_not_count(tmp_path: Path) -> None:
    adapter, slurm, _, _ = _adapter(tmp_path, FakeScheduler(), PipelinedSlurm(),
                                    start_timeout_cycles=2)
    for _ in range(4):
        assert adapter.cycle()
    assert ("hold", 2) not in slurm.calls


def test_a_timeout_of_zero_never_holds_a_released_job_again(tmp_path: Path) -> None:
    adapter, slurm, _, _ = _adapter(tmp_path, FakeScheduler(), PlacedSlurm(),
                                    start_timeout_cycles=0)
    for _ in range(5):
        assert adapter.cycle()
    assert ("hold", 2) not in slurm.calls


def test_an_unreadable_queue_file_at_the_first_cycle_is_a_config_error(tmp_path: Path) -> None:
    scheduler = FakeScheduler()
    adapter, _, metrics, _ = _adapter(tmp_path, scheduler)
    (tmp_path / "queues.yaml").unlink()
    assert not adapter.cycle()
    assert scheduler.requests == []
    assert _cycles(metrics, "config_error") == 1


def test_run_repeats_cycles_until_stopped(tmp_path: Path) -> None:
    scheduler = FakeScheduler()
    stop = threading.Event()
    scheduler.after_call = stop  # the second Schedule call asks the loop to stop
    adapter, _, metrics, _ = _adapter(tmp_path, scheduler)
    loop.run(adapter, interval=0.01, stop=stop)
    assert len(scheduler.requests) == 2
    assert _cycles(metrics, "ok") == 2


def test_a_ledger_that_cannot_be_written_fails_the_cycle_before_schedule(tmp_path: Path) -> None:
    scheduler = FakeScheduler()
    adapter, _, metrics, _ = _adapter(tmp_path, scheduler,
                                      ledger=str(tmp_path / "missing-dir" / "ledger.json"))
    assert not adapter.cycle()
    assert scheduler.requests == []
    assert _cycles(metrics, "ledger_error") == 1


@pytest.mark.parametrize("name, binary", [("request.pb", True), ("request.json", False)])
def test_dump_snapshot_writes_the_request_sent(tmp_path: Path, name: str, binary: bool) -> None:
    scheduler = FakeScheduler()
    path = tmp_path / name
    adapter, _, _, _ = _adapter(tmp_path, scheduler, dump_snapshot=str(path))
    assert adapter.cycle()
    if binary:
        written = arbiter_pb2.ScheduleRequest.FromString(path.read_bytes())
    else:
        written = json_format.Parse(path.read_text(), arbiter_pb2.ScheduleRequest())
    assert written == scheduler.requests[0]
