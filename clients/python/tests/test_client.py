"""The client against a real arbiter-server, and its behaviour that needs no server."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator

import grpc
import pytest

import arbiter
from arbiter import (
    ArbiterError,
    Client,
    DeadlineExceeded,
    InvalidArgument,
    ResourceExhausted,
    TLSFiles,
    Unavailable,
)
from arbiter.client import error_for_status, parse_field_path
from arbiter.v1 import arbiter_pb2 as pb


def two_queue_snapshot() -> pb.Snapshot:
    """Two top-level queues with 2 CPUs deserved each, over-quota weights 3 and 1, one 8-CPU
    node, and a pending 8-CPU pod in each queue: the 4 CPUs above the quotas split 3:1."""
    return pb.Snapshot(
        queues=[
            pb.Queue(name="a", deserved={"cpu": 2000}, over_quota_weight={"cpu": 3}),
            pb.Queue(name="b", deserved={"cpu": 2000}),
        ],
        nodes=[pb.Node(name="n1", allocatable={"cpu": 8000})],
        pod_groups=[
            pb.PodGroup(name="ga", queue="a", pods=[pb.Pod(name="a1", requests={"cpu": 8000})]),
            pb.PodGroup(name="gb", queue="b", pods=[pb.Pod(name="b1", requests={"cpu": 8000})]),
        ],
    )


@pytest.fixture
def client(arbiter_server: str) -> Iterator[Client]:
    with Client(arbiter_server, deadline=10.0) as c:
        yield c


def test_fair_shares_of_two_queues_split_the_rest_by_over_quota_weight(client: Client) -> None:
    response = client.fair_shares(pb.FairShareRequest(snapshot=two_queue_snapshot()))

    shares = {q.queue: q for q in response.queues}
    assert set(shares) == {"a", "b"}
    assert dict(shares["a"].fair_share) == {"cpu": 5000}
    assert dict(shares["b"].fair_share) == {"cpu": 3000}
    assert dict(shares["a"].deserved) == {"cpu": 2000}
    assert dict(shares["b"].requested) == {"cpu": 8000}


def test_fair_shares_takes_a_snapshot_and_a_policy(client: Client) -> None:
    policy = pb.Policy(fairness_model=pb.FAIRNESS_MODEL_KAI)

    response = client.fair_shares(two_queue_snapshot(), policy)

    assert {q.queue: dict(q.fair_share) for q in response.queues} == {
        "a": {"cpu": 5000},
        "b": {"cpu": 3000},
    }


def test_schedule_binds_a_pending_pod(client: Client) -> None:
    snapshot = pb.Snapshot(
        queues=[pb.Queue(name="team", deserved={"cpu": -1})],
        nodes=[pb.Node(name="node-1", allocatable={"cpu": 4000, "memory": 8 << 30})],
        pod_groups=[
            pb.PodGroup(
                name="job",
                queue="team",
                pods=[pb.Pod(name="job-0", requests={"cpu": 1000, "memory": 1 << 30})],
            )
        ],
    )

    response = client.schedule(pb.ScheduleRequest(snapshot=snapshot), request_id="bind-test-1")

    assert [(b.pod_group, b.pod, b.node, b.after_evictions) for b in response.bindings] == [
        ("job", "job-0", "node-1", False)
    ]
    assert list(response.pending) == []
    assert list(response.evictions) == []


def test_schedule_leaves_the_pod_that_does_not_fit_pending(client: Client) -> None:
    response = client.schedule(two_queue_snapshot())

    assert [(b.pod_group, b.node) for b in response.bindings] == [("ga", "n1")]
    assert [(p.pod_group, p.reason) for p in response.pending] == [
        ("gb", "insufficient-resources")
    ]


def test_negative_deserved_quota_raises_invalid_argument_naming_the_field(client: Client) -> None:
    snapshot = two_queue_snapshot()
    snapshot.queues[1].deserved["cpu"] = -5

    with pytest.raises(InvalidArgument) as caught:
        client.fair_shares(snapshot)

    err = caught.value
    assert err.code == grpc.StatusCode.INVALID_ARGUMENT
    assert err.field_path == 'snapshot.queues[1].deserved["cpu"]'
    assert err.message.startswith('snapshot.queues[1].deserved["cpu"]: negative value')
    assert err.attempts == 1
    assert str(err) == f"INVALID_ARGUMENT: {err.message}"
    assert isinstance(err, ArbiterError)


def test_pod_group_of_a_missing_queue_raises_invalid_argument_naming_the_field(
    client: Client,
) -> None:
    snapshot = two_queue_snapshot()
    snapshot.pod_groups[1].queue = "no-such-queue"

    with pytest.raises(InvalidArgument) as caught:
        client.schedule(snapshot)

    assert caught.value.field_path == "snapshot.pod_groups[1].queue"
    assert caught.value.message == 'snapshot.pod_groups[1].queue: unknown queue "no-such-queue"'


def _large_snapshot(nodes: int, pods: int) -> pb.Snapshot:
    """A KAI cluster of identical nodes and one-pod groups, all pending, in four queues."""
    snapshot = pb.Snapshot(
        queues=[pb.Queue(name=f"q{i}", deserved={"cpu": -1}) for i in range(4)],
        nodes=[pb.Node(name=f"n{i}", allocatable={"cpu": 32000}) for i in range(nodes)],
    )
    for i in range(pods):
        snapshot.pod_groups.add(
            name=f"g{i}", queue=f"q{i % 4}", pods=[pb.Pod(name=f"p{i}", requests={"cpu": 500})]
        )
    return snapshot


def test_expired_deadline_raises_deadline_exceeded_without_retrying(arbiter_server: str) -> None:
    request = pb.ScheduleRequest(snapshot=_large_snapshot(nodes=2000, pods=20000))

    with Client(arbiter_server, deadline=0.001, retries=3) as client:
        with pytest.raises(DeadlineExceeded) as caught:
            client.schedule(request)

    assert caught.value.code == grpc.StatusCode.DEADLINE_EXCEEDED
    assert caught.value.attempts == 1
    assert caught.value.field_path is None


def test_answer_over_max_message_bytes_raises_resource_exhausted(arbiter_server: str) -> None:
    request = pb.ScheduleRequest(snapshot=_large_snapshot(nodes=10, pods=200))

    with Client(arbiter_server, max_message_bytes=1024) as client:
        with pytest.raises(ResourceExhausted) as caught:
            client.schedule(request)

    assert caught.value.attempts == 1


def _dead_target() -> tuple[socket.socket, str]:
    """A loopback port that is bound (so no one else takes it) but not listening: every
    connection to it is refused."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    return sock, f"127.0.0.1:{sock.getsockname()[1]}"


def test_dead_port_raises_unavailable_after_the_retries_and_their_backoff() -> None:
    sock, target = _dead_target()
    with sock, Client(
        target, deadline=2.0, retries=3, initial_backoff=0.05, max_backoff=0.1
    ) as client:
        started = time.monotonic()
        with pytest.raises(Unavailable) as caught:
            client.fair_shares(two_queue_snapshot())
        elapsed = time.monotonic() - started

    assert caught.value.code == grpc.StatusCode.UNAVAILABLE
    assert caught.value.attempts == 4
    # Backoffs of 0.05, 0.1 and 0.1 s (doubled, capped), each with up to 20% of jitter.
    assert 0.25 <= elapsed < 5.0


def test_backoff_doubles_up_to_the_maximum_with_bounded_jitter() -> None:
    sock, target = _dead_target()
    waits: list[float] = []
    with sock, Client(target, retries=5, initial_backoff=0.1, max_backoff=0.3) as client:
        client._sleep = waits.append
        with pytest.raises(Unavailable) as caught:
            client.schedule(two_queue_snapshot())

    assert caught.value.attempts == 6
    assert len(waits) == 5
    for wait, base in zip(waits, [0.1, 0.2, 0.3, 0.3, 0.3], strict=True):
        assert base <= wait <= base * 1.2


def test_no_retries_means_one_attempt() -> None:
    sock, target = _dead_target()
    waits: list[float] = []
    with sock, Client(target, retries=0) as client:
        client._sleep = waits.append
        with pytest.raises(Unavailable) as caught:
            client.schedule(two_queue_snapshot())

    assert caught.value.attempts == 1
    assert waits == []


def test_policy_with_a_whole_request_is_refused() -> None:
    with Client("127.0.0.1:1") as client:
        with pytest.raises(TypeError):
            client.schedule(pb.ScheduleRequest(), pb.Policy())  # type: ignore[call-overload]


@pytest.mark.parametrize(
    ("message", "field_path"),
    [
        ('snapshot.queues[3].parent: unknown queue "team-x"', "snapshot.queues[3].parent"),
        ('snapshot.pod_groups[2].pods[0].requests["cpu"]: negative', 'snapshot.pod_groups[2]'
         '.pods[0].requests["cpu"]'),
        ("policy.actions[1]: unknown action 9", "policy.actions[1]"),
        ('snapshot.nodes[0].labels["a: \\"b\\""]: too long', 'snapshot.nodes[0].labels["a: \\"b\\""]'),
        ("request: not a valid binary ScheduleRequest (3 bytes)", "request"),
        ("no field path here", None),
        ("snapshot.queues[x]: bad index", None),
        ("", None),
    ],
)
def test_parse_field_path(message: str, field_path: str | None) -> None:
    assert parse_field_path(message) == field_path


def test_error_for_status_picks_the_class_of_the_code() -> None:
    assert type(error_for_status(grpc.StatusCode.INVALID_ARGUMENT, "x: y")) is InvalidArgument
    assert type(error_for_status(grpc.StatusCode.UNAVAILABLE, "x: y")) is Unavailable
    assert type(error_for_status(grpc.StatusCode.DEADLINE_EXCEEDED, "")) is DeadlineExceeded
    assert type(error_for_status(grpc.StatusCode.RESOURCE_EXHAUSTED, "")) is ResourceExhausted
    internal = error_for_status(grpc.StatusCode.INTERNAL, "x: broken")
    assert type(internal) is ArbiterError
    # Only INVALID_ARGUMENT messages carry a field path.
    assert internal.field_path is None
    assert error_for_status(grpc.StatusCode.INVALID_ARGUMENT, "x: y").field_path == "x"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"deadline": 0.0},
        {"retries": -1},
        {"initial_backoff": -0.1},
        {"initial_backoff": 1.0, "max_backoff": 0.5},
        {"max_message_bytes": 0},
    ],
)
def test_client_refuses_bad_settings(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        Client("127.0.0.1:1", **kwargs)  # type: ignore[arg-type]


def test_client_refuses_an_empty_target() -> None:
    with pytest.raises(ValueError):
        Client("")


def test_tls_files_need_both_cert_and_key() -> None:
    with pytest.raises(ValueError, match="both cert and key"):
        Client("127.0.0.1:1", tls=TLSFiles(cert="client.pem"))


def test_package_exports_the_client_api() -> None:
    assert arbiter.Client is Client
    assert set(arbiter.__all__) >= {
        "ArbiterError",
        "Client",
        "DeadlineExceeded",
        "InvalidArgument",
        "ResourceExhausted",
        "TLSFiles",
        "Unavailable",
    }


# The start_arbiter_server fixture (conftest.py): flags in, target out.
StartServer = Callable[..., str]


def test_reconnects_within_reconnect_backoff_of_the_servers_return(
    start_arbiter_server: StartServer,
) -> None:
    # Issue 32: gRPC's own reconnect backoff (1 s growing by 1.6 up to 120 s) waits about 6 s
    # between attempts after 10 s of refused connections; reconnect_backoff caps that wait.
    sock, target = _dead_target()
    port = target.rsplit(":", 1)[1]
    with Client(target, retries=0, reconnect_backoff=0.5) as client:
        outage_ends = time.monotonic() + 10.0
        with sock:
            while time.monotonic() < outage_ends:
                with pytest.raises(Unavailable):
                    client.fair_shares(two_queue_snapshot())
                time.sleep(0.2)
        start_arbiter_server("--port", port)
        back = time.monotonic()
        while True:
            try:
                client.fair_shares(two_queue_snapshot())
                break
            except Unavailable:
                assert time.monotonic() - back < 10.0, "no answer within 10 s of the server's return"
                time.sleep(0.05)
        took = time.monotonic() - back

    assert took < 1.5, f"answered {took:.1f} s after the server's return"
