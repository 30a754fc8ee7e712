"""Turning an answer into Slurm commands, and what happens when a command fails."""

from __future__ import annotations

from typing import Any, Sequence

from arbiter.slurm import apply
from arbiter.slurm.commands import SlurmCommandError
from arbiter.slurm.mapping import Cycle, ManagedJob, SkippedJob
from arbiter.v1 import arbiter_pb2


class FakeSlurm:
    """Records commands; fails the ones named in ``fail`` (verb, job id)."""

    def __init__(self, fail: set[tuple[str, int]] | None = None) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.fail = fail or set()

    def _do(self, verb: str, job_id: int, *rest: Any) -> None:
        if (verb, job_id) in self.fail:
            raise SlurmCommandError(["scontrol", verb, str(job_id)], "Unable to contact slurm controller")
        self.calls.append((verb, job_id, *rest))

    def nodes(self) -> list[dict[str, Any]]:
        return []

    def jobs(self) -> list[dict[str, Any]]:
        return []

    def place(self, job_id: int, nodes: Sequence[str], reason_field: str, text: str) -> None:
        self._do("place", job_id, tuple(nodes), text)

    def release(self, job_id: int) -> None:
        self._do("release", job_id)

    def hold(self, job_id: int) -> None:
        self._do("hold", job_id)

    def requeue_hold(self, job_id: int) -> None:
        self._do("requeuehold", job_id)

    def set_reason(self, job_id: int, reason_field: str, text: str) -> None:
        self._do("reason", job_id, text)

    def begin_now(self, job_id: int) -> None:
        self._do("begin-now", job_id)


def _job(job_id: int, state: str, nodes: int = 1, reason: str = "",
         requeued: bool = False) -> ManagedJob:
    return ManagedJob(job_id, state, "q", nodes, [], True, reason, requeued=requeued)


def _cycle(*jobs: ManagedJob) -> Cycle:
    return Cycle(request=arbiter_pb2.ScheduleRequest(), jobs={j.name: j for j in jobs})


def _response(**fields: Any) -> arbiter_pb2.ScheduleResponse:
    return arbiter_pb2.ScheduleResponse(**fields)


def test_a_held_job_is_pinned_to_arbiters_nodes_then_released() -> None:
    response = _response(bindings=[
        arbiter_pb2.Binding(pod_group="5", pod="5-1", node="n3"),
        arbiter_pb2.Binding(pod_group="5", pod="5-0", node="n1"),
    ])
    slurm = FakeSlurm()
    report = apply.execute(apply.plan(response, _cycle(_job(5, "held", nodes=2))), slurm, "comment")
    assert slurm.calls == [("place", 5, ("n1", "n3"), "arbiter: placed on n1,n3"), ("release", 5)]
    assert report.started == [5] and not report.failures


def test_evictions_come_first_and_a_pipelined_binding_says_so() -> None:
    response = _response(
        bindings=[arbiter_pb2.Binding(pod_group="9", pod="9-0", node="n1", after_evictions=True)],
        evictions=[arbiter_pb2.Eviction(pod_group="4", pod="4-0", node="n1",
                                        reason=arbiter_pb2.FAIR_SHARE_RECLAIM,
                                        preemptor_pod_group="9", message="reclaimed")])
    slurm = FakeSlurm()
    report = apply.execute(apply.plan(response, _cycle(_job(4, "running"), _job(9, "held"))),
                           slurm, "comment")
    assert slurm.calls == [("requeuehold", 4), ("hold", 4),
                           ("reason", 4,
                            "arbiter: evicted: FAIR_SHARE_RECLAIM for job 9: reclaimed"),
                           ("place", 9, ("n1",), "arbiter: placed on n1 after evictions"),
                           ("release", 9)]
    assert report.requeued == [4] and report.started == [9]


def test_a_victim_gets_an_admin_hold_and_loses_its_placed_comment() -> None:
    # requeuehold leaves a user hold, which the job's owner could release; hold, run by the
    # adapter (an operator), makes it an admin hold.
    response = _response(evictions=[arbiter_pb2.Eviction(
        pod_group="4", pod="4-0", node="n1", reason=arbiter_pb2.PRIORITY_PREEMPTION,
        preemptor_pod_group="7", message="preempted")])
    slurm = FakeSlurm()
    apply.execute(apply.plan(response, _cycle(_job(4, "running", reason="arbiter: placed on n1"))),
                  slurm, "comment")
    assert slurm.calls == [("requeuehold", 4), ("hold", 4),
                           ("reason", 4,
                            "arbiter: evicted: PRIORITY_PREEMPTION for job 7: preempted")]


def test_a_requeued_job_placed_again_starts_without_slurms_requeue_delay() -> None:
    response = _response(bindings=[arbiter_pb2.Binding(pod_group="4", pod="4-0", node="n2")])
    slurm = FakeSlurm()
    apply.execute(apply.plan(response, _cycle(_job(4, "held", requeued=True))), slurm, "comment")
    assert slurm.calls == [("place", 4, ("n2",), "arbiter: placed on n2"), ("release", 4),
                           ("begin-now", 4)]


def test_user_holds_are_made_admin_holds_and_stuck_jobs_are_held_again() -> None:
    cycle = _cycle(_job(5, "held"), _job(6, "held"))
    cycle.to_admin_hold.append(5)
    cycle.reheld.append(6)
    slurm = FakeSlurm()
    report = apply.execute(apply.plan(_response(), cycle), slurm, "comment")
    assert slurm.calls == [("hold", 5), ("hold", 6)]
    assert report.held == [5] and report.reheld == [6]


def test_a_failed_pin_never_releases_the_job() -> None:
    response = _response(bindings=[arbiter_pb2.Binding(pod_group="5", pod="5-0", node="n1")])
    slurm = FakeSlurm(fail={("place", 5)})
    report = apply.execute(apply.plan(response, _cycle(_job(5, "held"))), slurm, "comment")
    assert slurm.calls == []
    assert report.started == [] and len(report.failures) == 1
    assert report.failed_verbs == ["scontrol place"]


def test_a_failed_requeue_does_not_move_the_job() -> None:
    response = _response(
        bindings=[arbiter_pb2.Binding(pod_group="4", pod="4-0", node="n2", after_evictions=True)],
        evictions=[arbiter_pb2.Eviction(pod_group="4", pod="4-0", node="n1",
                                        reason=arbiter_pb2.CONSOLIDATION)])
    slurm = FakeSlurm(fail={("requeuehold", 4)})
    report = apply.execute(apply.plan(response, _cycle(_job(4, "running"))), slurm, "comment")
    assert slurm.calls == [] and report.requeued == []


def test_a_failure_on_one_job_does_not_stop_the_others() -> None:
    response = _response(bindings=[arbiter_pb2.Binding(pod_group="5", pod="5-0", node="n1"),
                                   arbiter_pb2.Binding(pod_group="6", pod="6-0", node="n2")])
    slurm = FakeSlurm(fail={("release", 5)})
    report = apply.execute(apply.plan(response, _cycle(_job(5, "held"), _job(6, "held"))),
                           slurm, "comment")
    assert ("release", 6) in slurm.calls and report.started == [6]


def test_a_partial_binding_of_a_job_starts_nothing() -> None:
    response = _response(bindings=[arbiter_pb2.Binding(pod_group="5", pod="5-0", node="n1")])
    plans = apply.plan(response, _cycle(_job(5, "held", nodes=2)))
    assert plans == []


def test_bindings_of_running_or_placed_jobs_change_nothing() -> None:
    response = _response(bindings=[arbiter_pb2.Binding(pod_group="5", pod="5-0", node="n1")])
    assert apply.plan(response, _cycle(_job(5, "placed"))) == []


def test_pending_reasons_are_written_only_when_they_change() -> None:
    response = _response(pending=[
        arbiter_pb2.PendingPodGroup(pod_group="5", reason="queue-over-limit", message="q over"),
        arbiter_pb2.PendingPodGroup(pod_group="6", reason="queue-over-limit", message="q over"),
    ])
    cycle = _cycle(_job(5, "held"), _job(6, "held", reason="arbiter: queue-over-limit: q over"))
    cycle.skipped.append(SkippedJob(8, "no-queue", "account 'x' feeds no arbiter queue"))
    slurm = FakeSlurm()
    apply.execute(apply.plan(response, cycle), slurm, "comment")
    assert slurm.calls == [("reason", 5, "arbiter: queue-over-limit: q over"),
                           ("reason", 8, "arbiter: no-queue: account 'x' feeds no arbiter queue")]


def test_a_placed_job_that_is_evicted_is_held_again() -> None:
    response = _response(evictions=[arbiter_pb2.Eviction(pod_group="5", pod="5-0", node="n1",
                                                         reason=arbiter_pb2.CONSOLIDATION)])
    slurm = FakeSlurm()
    apply.execute(apply.plan(response, _cycle(_job(5, "placed"))), slurm, "comment")
    assert slurm.calls == [("hold", 5), ("reason", 5, "arbiter: evicted: CONSOLIDATION")]
