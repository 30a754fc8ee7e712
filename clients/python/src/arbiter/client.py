"""A typed client for the arbiter.v1 gRPC API.

A :class:`Client` wraps one gRPC channel, configured for production use:

- round-robin load balancing over every address the target resolves to, so a target such as
  ``dns:///arbiter-server-grpc.arbiter-system.svc.cluster.local:50051`` spreads calls over all
  pods behind a headless Service;
- TLS or mutual TLS when ``tls`` is given, plaintext otherwise;
- HTTP/2 keepalive pings while calls are in flight;
- a deadline on every attempt, and retries with exponential backoff and jitter on UNAVAILABLE.

Retrying is safe because both RPCs are pure functions of their request: arbiter keeps no state.
A Client is safe to share between threads; :meth:`Client.close` releases the channel.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Self, TypeVar, overload

import grpc

from arbiter.v1 import arbiter_pb2, arbiter_pb2_grpc
from arbiter.what_if import WhatIfAnswer, read_what_if_answer

__all__ = [
    "MiB",
    "ArbiterError",
    "Client",
    "DeadlineExceeded",
    "InvalidArgument",
    "ResourceExhausted",
    "TLSFiles",
    "Unavailable",
    "error_for_status",
    "parse_field_path",
]

MiB: Final = 1 << 20

# Keep a subchannel to every resolved address and rotate calls over the ready ones.
_ROUND_ROBIN_SERVICE_CONFIG: Final = json.dumps({"loadBalancingConfig": [{"round_robin": {}}]})

# The share of a backoff added at random to it, so that clients retrying together spread out.
_JITTER: Final = 0.2

# Metadata key of the request id the server logs with the call and sends back.
_REQUEST_ID_KEY: Final = "x-request-id"


@dataclass(frozen=True)
class TLSFiles:
    """PEM files for TLS: ``ca`` verifies the server (None: the system's roots); ``cert`` and
    ``key`` are the client's own certificate for mutual TLS (both or neither); ``server_name``
    overrides the name checked in the server's certificate."""

    ca: str | None = None
    cert: str | None = None
    key: str | None = None
    server_name: str | None = None

    def credentials(self) -> grpc.ChannelCredentials:
        """Reads the files into gRPC channel credentials."""
        if (self.cert is None) != (self.key is None):
            raise ValueError("TLSFiles: a client certificate needs both cert and key")
        return grpc.ssl_channel_credentials(
            root_certificates=_read_pem(self.ca, "CA"),
            private_key=_read_pem(self.key, "key"),
            certificate_chain=_read_pem(self.cert, "certificate"),
        )


def _read_pem(path: str | None, what: str) -> bytes | None:
    if path is None:
        return None
    data = Path(path).read_bytes()
    if b"-----BEGIN " not in data:
        raise ValueError(f"TLSFiles: {path} holds no PEM {what}")
    return data


# A field path as the server writes it: snapshot.queues[3].deserved["cpu"], policy.actions[1].
# Names and keys are C-escaped inside double quotes.
_FIELD_PATH: Final = re.compile(
    r'[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*|\[[0-9]+\]|\["(?:[^"\\]|\\.)*"\])*'
)


def parse_field_path(message: str) -> str | None:
    """The field path an INVALID_ARGUMENT message starts with ("<field path>: <what is wrong>"),
    or None when the message does not start with one."""
    match = _FIELD_PATH.match(message)
    if match is None or not message.startswith(": ", match.end()):
        return None
    return match.group()


class ArbiterError(Exception):
    """A call that failed: ``code`` and ``message`` are the gRPC status of its last attempt,
    ``field_path`` the offending field of an INVALID_ARGUMENT answer (None otherwise), and
    ``attempts`` how many attempts were made."""

    def __init__(
        self,
        code: grpc.StatusCode,
        message: str,
        *,
        field_path: str | None = None,
        attempts: int = 1,
    ) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message
        self.field_path = field_path
        self.attempts = attempts


class InvalidArgument(ArbiterError):
    """The server rejected the request; ``field_path`` names the offending field."""


class Unavailable(ArbiterError):
    """No server answered, or the server was too busy, on every attempt."""


class DeadlineExceeded(ArbiterError):
    """An attempt's deadline passed before the server answered."""


class ResourceExhausted(ArbiterError):
    """The request or its answer is over one of the server's (or the client's) size limits."""


_ERROR_CLASSES: Final[dict[grpc.StatusCode, type[ArbiterError]]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceeded,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
}


def error_for_status(code: grpc.StatusCode, message: str, *, attempts: int = 1) -> ArbiterError:
    """The ArbiterError (subclass) for a failed call's status."""
    field_path = parse_field_path(message) if code == grpc.StatusCode.INVALID_ARGUMENT else None
    cls = _ERROR_CLASSES.get(code, ArbiterError)
    return cls(code, message, field_path=field_path, attempts=attempts)


_Request = TypeVar("_Request", arbiter_pb2.FairShareRequest, arbiter_pb2.ScheduleRequest)
_Response = TypeVar("_Response", arbiter_pb2.FairShareResponse, arbiter_pb2.ScheduleResponse)


class Client:
    """Calls arbiter at ``target`` (``host:port``, or ``dns:///name:port`` for a headless
    Service) over one gRPC channel.

    ``tls``: None or False for plaintext, True for TLS verified against the system's roots, or
    TLSFiles. ``deadline`` bounds each attempt, in seconds. ``retries`` is the number of extra
    attempts after an UNAVAILABLE answer; the first retry waits ``initial_backoff`` seconds,
    each next one twice as long up to ``max_backoff``, plus up to 20% at random.
    ``max_message_bytes`` caps the size of an answer. ``reconnect_backoff`` caps the wait, in
    seconds, between the channel's attempts to reconnect to a server that went away (gRPC's own
    cap is 120 s). The channel connects on the first call.
    """

    def __init__(
        self,
        target: str,
        *,
        tls: TLSFiles | bool | None = None,
        deadline: float = 10.0,
        retries: int = 3,
        initial_backoff: float = 0.1,
        max_backoff: float = 2.0,
        max_message_bytes: int = 64 * MiB,
        keepalive_time: float = 300.0,
        keepalive_timeout: float = 20.0,
        reconnect_backoff: float = 2.0,
    ) -> None:
        if not target:
            raise ValueError("Client: empty target")
        if deadline <= 0:
            raise ValueError(f"Client: deadline must be positive, not {deadline}")
        if retries < 0:
            raise ValueError(f"Client: retries must be at least 0, not {retries}")
        if initial_backoff < 0 or max_backoff < initial_backoff:
            raise ValueError(
                "Client: need 0 <= initial_backoff <= max_backoff, "
                f"not {initial_backoff} and {max_backoff}"
            )
        if max_message_bytes <= 0:
            raise ValueError(f"Client: max_message_bytes must be positive, not {max_message_bytes}")
        if keepalive_time <= 0 or keepalive_timeout <= 0:
            raise ValueError("Client: keepalive_time and keepalive_timeout must be positive")
        if reconnect_backoff <= 0:
            raise ValueError(f"Client: reconnect_backoff must be positive, not {reconnect_backoff}")

        self.target = target
        self.deadline = deadline
        self.retries = retries
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff

        options: list[tuple[str, Any]] = [
            ("grpc.service_config", _ROUND_ROBIN_SERVICE_CONFIG),
            ("grpc.keepalive_time_ms", int(keepalive_time * 1000)),
            ("grpc.keepalive_timeout_ms", int(keepalive_timeout * 1000)),
            ("grpc.max_receive_message_length", max_message_bytes),
            # gRPC's reconnect backoff starts at 1 s; both bounds so that the first is not above
            # the cap.
            ("grpc.initial_reconnect_backoff_ms", min(1000, int(reconnect_backoff * 1000))),
            ("grpc.max_reconnect_backoff_ms", int(reconnect_backoff * 1000)),
        ]
        if isinstance(tls, TLSFiles):
            if tls.server_name:
                options.append(("grpc.ssl_target_name_override", tls.server_name))
            self._channel = grpc.secure_channel(target, tls.credentials(), options=options)
        elif tls is True:
            self._channel = grpc.secure_channel(
                target, grpc.ssl_channel_credentials(), options=options
            )
        else:
            self._channel = grpc.insecure_channel(target, options=options)
        self._stub = arbiter_pb2_grpc.ArbiterStub(self._channel)
        # Waits between attempts; replaced in tests.
        self._sleep: Callable[[float], None] = time.sleep

    def close(self) -> None:
        """Releases the channel; calls in flight fail with CANCELLED."""
        self._channel.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    @overload
    def fair_shares(
        self, request: arbiter_pb2.FairShareRequest, /, *, request_id: str | None = None
    ) -> arbiter_pb2.FairShareResponse: ...

    @overload
    def fair_shares(
        self,
        snapshot: arbiter_pb2.Snapshot,
        /,
        policy: arbiter_pb2.Policy | None = None,
        *,
        request_id: str | None = None,
    ) -> arbiter_pb2.FairShareResponse: ...

    def fair_shares(
        self,
        request: arbiter_pb2.FairShareRequest | arbiter_pb2.Snapshot,
        /,
        policy: arbiter_pb2.Policy | None = None,
        *,
        request_id: str | None = None,
    ) -> arbiter_pb2.FairShareResponse:
        """The fair share of every queue (ComputeFairShares), for a FairShareRequest or for a
        snapshot and an optional policy. ``request_id`` is sent as ``x-request-id``."""
        if isinstance(request, arbiter_pb2.Snapshot):
            request = arbiter_pb2.FairShareRequest(snapshot=request, policy=policy)
        elif policy is not None:
            raise TypeError("fair_shares: pass a policy only with a snapshot")
        return self._call(self._stub.ComputeFairShares, request, request_id)

    @overload
    def schedule(
        self, request: arbiter_pb2.ScheduleRequest, /, *, request_id: str | None = None
    ) -> arbiter_pb2.ScheduleResponse: ...

    @overload
    def schedule(
        self,
        snapshot: arbiter_pb2.Snapshot,
        /,
        policy: arbiter_pb2.Policy | None = None,
        *,
        request_id: str | None = None,
    ) -> arbiter_pb2.ScheduleResponse: ...

    def schedule(
        self,
        request: arbiter_pb2.ScheduleRequest | arbiter_pb2.Snapshot,
        /,
        policy: arbiter_pb2.Policy | None = None,
        *,
        request_id: str | None = None,
    ) -> arbiter_pb2.ScheduleResponse:
        """One scheduling cycle (Schedule): fair shares, bindings, evictions, admissions and
        pending reasons, for a ScheduleRequest or for a snapshot and an optional policy."""
        if isinstance(request, arbiter_pb2.Snapshot):
            request = arbiter_pb2.ScheduleRequest(snapshot=request, policy=policy)
        elif policy is not None:
            raise TypeError("schedule: pass a policy only with a snapshot")
        return self._call(self._stub.Schedule, request, request_id)

    def what_if(
        self,
        request: arbiter_pb2.ScheduleRequest,
        group: arbiter_pb2.PodGroup,
        *,
        request_id: str | None = None,
    ) -> WhatIfAnswer:
        """If ``group`` were submitted now, what would happen? Runs one Schedule on a copy of
        ``request`` with ``group`` appended to its pod groups, and returns what that cycle
        decides for the group (see :class:`arbiter.WhatIfAnswer`). Neither argument is
        modified, and nothing changes on the server, which keeps no state.

        Raises InvalidArgument (``field_path`` "group", no call made) when the snapshot already
        holds a group of that name; otherwise the errors of :meth:`schedule`, the added group
        being ``snapshot.pod_groups[N]`` with N the number the snapshot had."""
        for i, existing in enumerate(request.snapshot.pod_groups):
            if existing.name == group.name:
                raise InvalidArgument(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    f"group: pod group {json.dumps(group.name)} is already in the snapshot "
                    f"(snapshot.pod_groups[{i}])",
                    field_path="group",
                    attempts=0,
                )
        trial = arbiter_pb2.ScheduleRequest()
        trial.CopyFrom(request)
        trial.snapshot.pod_groups.append(group)
        return read_what_if_answer(group.name, self.schedule(trial, request_id=request_id))

    def _call(
        self,
        method: grpc.UnaryUnaryMultiCallable[_Request, _Response],
        request: _Request,
        request_id: str | None,
    ) -> _Response:
        """Runs one attempt after another while the server answers UNAVAILABLE, each bounded by
        the deadline, at most 1 + retries in all."""
        metadata = None if request_id is None else ((_REQUEST_ID_KEY, request_id),)
        backoff = self.initial_backoff
        attempt = 1
        while True:
            try:
                return method(request, timeout=self.deadline, metadata=metadata)
            except grpc.RpcError as err:
                code = err.code()
                message = err.details() or ""
                if code != grpc.StatusCode.UNAVAILABLE or attempt > self.retries:
                    raise error_for_status(code, message, attempts=attempt) from err
            self._sleep(backoff + random.uniform(0.0, backoff * _JITTER))
            backoff = min(2.0 * backoff, self.max_backoff)
            attempt += 1
