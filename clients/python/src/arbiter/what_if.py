"""What one scheduling cycle decides for a pod group added to a snapshot (``Client.what_if``).

The answer has the fields of ``arbiter what-if --format json`` (docs/what-if.md): the outcome,
whether it waits for evictions, the group's bindings, the evictions made for it and its pending
reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from arbiter.v1 import arbiter_pb2

__all__ = [
    "OUTCOMES",
    "Outcome",
    "WhatIfAnswer",
    "read_what_if_answer",
]

Outcome = Literal["placed", "admitted", "pending", "evicted", "unchanged"]

#: The outcomes, in the order they are tested: the first that holds is the answer's.
OUTCOMES: Final[tuple[Outcome, ...]] = ("pending", "admitted", "placed", "evicted", "unchanged")


@dataclass(frozen=True)
class WhatIfAnswer:
    """What one Schedule decides for the pod group ``pod_group`` added to a snapshot.

    ``outcome`` is "pending" (a PendingPodGroup names the group: ``pending`` says why),
    "admitted" (Kueue: an Admission reserves quota for it), "placed" (KAI: bindings place its
    pods), "evicted" (its own, already running, pods are evicted) or "unchanged" (no decision
    names it). ``after_evictions``: placed, some binding waits for the evictions; admitted, the
    admission does. ``bindings`` are the group's; ``evictions`` are those made for it (their
    ``preemptor_pod_group`` is the group), both in the response's order. ``pod_sets``: admitted
    in a request with Kueue resource flavors, each pod set's flavor per requested resource.
    """

    pod_group: str
    outcome: Outcome
    after_evictions: bool
    bindings: tuple[arbiter_pb2.Binding, ...]
    evictions: tuple[arbiter_pb2.Eviction, ...]
    pending: arbiter_pb2.PendingPodGroup | None
    pod_sets: tuple[arbiter_pb2.PodSetFlavors, ...] = ()


def read_what_if_answer(pod_group: str, response: arbiter_pb2.ScheduleResponse) -> WhatIfAnswer:
    """What ``response``, the answer to a request holding the pod group named ``pod_group``,
    decides for that group."""
    bindings = tuple(b for b in response.bindings if b.pod_group == pod_group)
    evictions = tuple(e for e in response.evictions if e.preemptor_pod_group == pod_group)
    own_pods_evicted = any(e.pod_group == pod_group for e in response.evictions)
    admissions = [a for a in response.admissions if a.pod_group == pod_group]
    pendings = [p for p in response.pending if p.pod_group == pod_group]
    pending = pendings[-1] if pendings else None

    outcome: Outcome
    after_evictions = any(b.after_evictions for b in bindings)
    pod_sets: tuple[arbiter_pb2.PodSetFlavors, ...] = ()
    if pending is not None:
        outcome = "pending"
    elif admissions:
        outcome = "admitted"
        after_evictions = admissions[-1].after_evictions
        pod_sets = tuple(admissions[-1].pod_sets)
    elif bindings:
        outcome = "placed"
    elif own_pods_evicted:
        outcome = "evicted"
    else:
        outcome = "unchanged"
    return WhatIfAnswer(
        pod_group=pod_group,
        outcome=outcome,
        after_evictions=after_evictions,
        bindings=bindings,
        evictions=evictions,
        pending=pending,
        pod_sets=pod_sets,
    )
