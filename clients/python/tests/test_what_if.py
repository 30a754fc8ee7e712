"""Client.what_if against a real arbiter-server, on the snapshots of tests/testdata/what_if/
(which the CLI's integration test asks too), and the reading of an answer without a server."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.protobuf import json_format

from arbiter import Client, InvalidArgument, WhatIfAnswer, read_what_if_answer
from arbiter.v1 import arbiter_pb2 as pb

TESTDATA = Path(__file__).resolve().parents[3] / "tests" / "testdata" / "what_if"


def snapshot_request(name: str) -> pb.ScheduleRequest:
    return json_format.Parse((TESTDATA / name).read_text(), pb.ScheduleRequest())


def pod_group(name: str) -> pb.PodGroup:
    return json_format.Parse((TESTDATA / name).read_text(), pb.PodGroup())


@pytest.fixture
def client(arbiter_server: str) -> Iterator[Client]:
    with Client(arbiter_server, deadline=10.0) as c:
        yield c


def test_a_group_that_fits_is_placed(client: Client) -> None:
    answer = client.what_if(snapshot_request("kai-snapshot.json"), pod_group("fits.json"))

    assert answer.pod_group == "a-small"
    assert answer.outcome == "placed"
    assert not answer.after_evictions
    assert [(b.pod, b.node, b.after_evictions) for b in answer.bindings] == [
        ("a-small-0", "n2", False)
    ]
    assert answer.evictions == ()
    assert answer.pending is None


def test_a_group_that_needs_a_reclaim_lists_its_evictions_and_binds_after_them(
    client: Client,
) -> None:
    answer = client.what_if(snapshot_request("kai-snapshot.json"), pod_group("needs-reclaim.json"))

    assert answer.outcome == "placed"
    assert answer.after_evictions
    assert [(b.pod, b.node, b.after_evictions) for b in answer.bindings] == [
        ("a-big-0", "n2", True)
    ]
    assert [(e.pod_group, e.pod, e.node, e.reason) for e in answer.evictions] == [
        ("b-4", "b-4-0", "n2", pb.FAIR_SHARE_RECLAIM),
        ("b-5", "b-5-0", "n2", pb.FAIR_SHARE_RECLAIM),
    ]
    assert all(e.message.startswith("reclaimed for a-big: ") for e in answer.evictions)


def test_a_group_over_its_queue_limit_is_pending_with_the_reason(client: Client) -> None:
    answer = client.what_if(snapshot_request("kai-snapshot.json"), pod_group("over-limit.json"))

    assert answer.outcome == "pending"
    assert answer.bindings == ()
    assert answer.pending is not None
    assert answer.pending.reason == "queue-over-limit"
    assert answer.pending.message.startswith(
        "queue capped would exceed its limit on cpu: 0 allocated + 2000 requested > limit 1000"
    )


def test_a_kueue_workload_is_admitted(client: Client) -> None:
    answer = client.what_if(
        snapshot_request("kueue-snapshot.json"), pod_group("kueue-workload.json")
    )

    assert (answer.outcome, answer.after_evictions, answer.evictions) == ("admitted", False, ())


def test_an_admission_carries_its_flavors() -> None:
    flavors = pb.PodSetFlavors(pod_set="main", flavors={"cpu": "spot"})
    response = pb.ScheduleResponse(
        admissions=[pb.Admission(pod_group="x", queue="cq", pod_sets=[flavors])]
    )
    answer = read_what_if_answer("x", response)
    assert answer.outcome == "admitted"
    assert [dict(p.flavors) for p in answer.pod_sets] == [{"cpu": "spot"}]
    assert read_what_if_answer("y", response).pod_sets == ()


def test_a_kueue_workload_that_preempts_is_admitted_after_the_evictions(client: Client) -> None:
    answer = client.what_if(
        snapshot_request("kueue-snapshot.json"), pod_group("kueue-preempting.json")
    )

    assert (answer.outcome, answer.after_evictions) == ("admitted", True)
    assert [(e.pod_group, e.reason) for e in answer.evictions] == [
        ("w-running", pb.KUEUE_IN_CLUSTER_QUEUE)
    ]


def test_what_if_leaves_its_arguments_as_they_were(client: Client) -> None:
    request = snapshot_request("kai-snapshot.json")
    group = pod_group("needs-reclaim.json")
    request_before = request.SerializeToString(deterministic=True)
    group_before = group.SerializeToString(deterministic=True)

    client.what_if(request, group)

    assert request.SerializeToString(deterministic=True) == request_before
    assert group.SerializeToString(deterministic=True) == group_before


def test_a_duplicate_name_raises_invalid_argument_without_a_call() -> None:
    request = snapshot_request("kai-snapshot.json")
    group = pod_group("fits.json")
    group.name = "b-3"

    # Nothing listens at this target: the error comes before any call.
    with Client("127.0.0.1:1") as client, pytest.raises(InvalidArgument) as caught:
        client.what_if(request, group)

    assert caught.value.field_path == "group"
    assert caught.value.message == (
        'group: pod group "b-3" is already in the snapshot (snapshot.pod_groups[3])'
    )
    assert caught.value.attempts == 0


def test_another_invalid_group_is_the_servers_own_field_path(client: Client) -> None:
    group = pod_group("fits.json")
    group.queue = "nowhere"

    with pytest.raises(InvalidArgument) as caught:
        client.what_if(snapshot_request("kai-snapshot.json"), group)

    assert caught.value.field_path == "snapshot.pod_groups[6].queue"


def test_the_answer_is_frozen() -> None:
    answer = read_what_if_answer("x", pb.ScheduleResponse())

    assert answer == WhatIfAnswer("x", "unchanged", False, (), (), None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        answer.outcome = "placed"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("response", "outcome", "after_evictions"),
    [
        pytest.param(
            pb.ScheduleResponse(
                bindings=[pb.Binding(pod_group="x", pod="x-0", node="n1", after_evictions=True)]
            ),
            "placed",
            True,
            id="placed_after_evictions",
        ),
        pytest.param(
            pb.ScheduleResponse(
                admissions=[pb.Admission(pod_group="x", queue="cq", after_evictions=True)]
            ),
            "admitted",
            True,
            id="admitted_after_evictions",
        ),
        pytest.param(
            pb.ScheduleResponse(pending=[pb.PendingPodGroup(pod_group="x", reason="r")]),
            "pending",
            False,
            id="pending",
        ),
        pytest.param(
            pb.ScheduleResponse(
                evictions=[pb.Eviction(pod_group="x", pod="x-0", preemptor_pod_group="y")]
            ),
            "evicted",
            False,
            id="evicted",
        ),
        pytest.param(
            pb.ScheduleResponse(bindings=[pb.Binding(pod_group="y", pod="y-0", node="n1")]),
            "unchanged",
            False,
            id="unchanged",
        ),
    ],
)
def test_read_what_if_answer_takes_the_first_outcome_that_holds(
    response: pb.ScheduleResponse, outcome: str, after_evictions: bool
) -> None:
    answer = read_what_if_answer("x", response)

    assert (answer.outcome, answer.after_evictions) == (outcome, after_evictions)
