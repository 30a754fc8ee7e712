"""Python client for arbiter, the stateless scheduling-decision service.

``Client`` calls the arbiter.v1 API; the request and answer messages are in
``arbiter.v1.arbiter_pb2``. ``Client.what_if`` answers what one cycle would decide for a pod
group added to a snapshot, as a ``WhatIfAnswer``.
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
from arbiter.what_if import Outcome, WhatIfAnswer, read_what_if_answer

__all__ = [
    "ArbiterError",
    "Client",
    "DeadlineExceeded",
    "InvalidArgument",
    "Outcome",
    "ResourceExhausted",
    "TLSFiles",
    "Unavailable",
    "WhatIfAnswer",
    "read_what_if_answer",
]
