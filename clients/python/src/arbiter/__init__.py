"""Python client for arbiter, the stateless scheduling-decision service.

``Client`` calls the arbiter.v1 API; the request and answer messages are in
``arbiter.v1.arbiter_pb2``.
"""

from arbiter.client import (
    ArbiterError,
    Client,
    DeadlineExceeded,
    InvalidArgument,
    ResourceExhausted,
    TLSFiles,
    Unavailable,
)

__all__ = [
    "ArbiterError",
    "Client",
    "DeadlineExceeded",
    "InvalidArgument",
    "ResourceExhausted",
    "TLSFiles",
    "Unavailable",
]
