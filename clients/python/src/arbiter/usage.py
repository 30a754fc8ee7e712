"""Time-aware fairness bookkeeping for adapters.

arbiter keeps no state, so an adapter advances each queue's decayed usage between cycles and sends
it as ``Snapshot.usage`` and ``Snapshot.usage_capacity``. The accounting step is the core's own
rule::

    usage'[r] = usage[r] * 0.5 ** (interval / half_life) + rate[r] * interval

for every resource ``r`` in either map (a missing key is 0). A half-life that is not positive (or
infinite) means no decay. The shared vectors in ``tests/testdata/usage_accounting_vectors.json``
hold this module, the Go adapter and the C++ core to the same numbers.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import dataclass, field
from typing import Mapping

Amounts = Mapping[str, float]


class AccountingError(ValueError):
    """An argument of the accounting step is out of its domain; the message names it."""


def decay_factor(interval: float, half_life: float) -> float:
    """``0.5 ** (interval / half_life)``, or exactly 1 when the half-life is not positive."""
    if not half_life > 0:
        return 1.0
    return math.pow(0.5, interval / half_life)


def _check_amounts(argument: str, amounts: Amounts) -> None:
    for key in sorted(amounts):  # report the first offending key deterministically
        value = amounts[key]
        if math.isnan(value) or math.isinf(value) or value < 0:
            raise AccountingError(
                f"{argument}[{key!r}]: must be finite and not negative, got {value}"
            )


def accumulate(usage: Amounts, rate: Amounts, interval: float, half_life: float) -> dict[str, float]:
    """One accounting step: decay ``usage`` over ``interval`` and add ``rate`` held over it.

    ``interval`` and ``half_life`` share a unit (seconds for the adapters). Raises
    :class:`AccountingError` when the interval is negative or not finite, the half-life is NaN,
    or an amount is negative or not finite.
    """
    if math.isnan(interval) or math.isinf(interval) or interval < 0:
        raise AccountingError(f"interval: must be finite and not negative, got {interval}")
    if math.isnan(half_life):
        raise AccountingError("half_life: NaN")
    _check_amounts("usage", usage)
    _check_amounts("rate", rate)
    factor = decay_factor(interval, half_life)
    out = {key: value * factor for key, value in usage.items()}
    for key, value in rate.items():
        out[key] = out.get(key, 0.0) + value * interval
    return out


@dataclass
class Ledger:
    """Each queue's decayed resource-time and the cluster's decayed capacity-time.

    Amounts are resource units times seconds. ``updated`` is the Unix time of the last step, or
    None for a new ledger.
    """

    updated: float | None = None
    queues: dict[str, dict[str, float]] = field(default_factory=dict)
    capacity: dict[str, float] = field(default_factory=dict)

    def advance(
        self,
        now: float,
        allocated: Mapping[str, Amounts],
        capacity: Amounts,
        half_life: float,
    ) -> None:
        """Move the ledger to ``now``.

        ``allocated`` holds, per queue, what its subtree held over the whole interval since the
        last step, and ``capacity`` what the cluster offered. Queues absent from ``allocated``
        are forgotten. The first step of a new ledger only starts the clock, and a clock that
        went backwards counts as no time.
        """
        interval = 0.0
        if self.updated is not None and now > self.updated:
            interval = now - self.updated
        queues: dict[str, dict[str, float]] = {}
        for queue, rate in allocated.items():
            try:
                queues[queue] = accumulate(self.queues.get(queue, {}), rate, interval, half_life)
            except AccountingError as err:
                raise AccountingError(f"usage of queue {queue}: {err}") from err
        try:
            self.capacity = accumulate(self.capacity, capacity, interval, half_life)
        except AccountingError as err:
            raise AccountingError(f"usage capacity: {err}") from err
        self.queues = queues
        if self.updated is None or now > self.updated:
            self.updated = now

    def to_json(self) -> str:
        return json.dumps(
            {"updated": self.updated, "queues": self.queues, "capacity": self.capacity},
            sort_keys=True,
            indent=1,
        )

    @classmethod
    def from_json(cls, text: str) -> Ledger:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("ledger: not a JSON object")
        updated = data.get("updated")
        queues = data.get("queues") or {}
        capacity = data.get("capacity") or {}
        if updated is not None and not isinstance(updated, (int, float)):
            raise ValueError("ledger.updated: not a number")
        if not isinstance(queues, dict) or not isinstance(capacity, dict):
            raise ValueError("ledger: queues and capacity must be objects")
        return cls(
            updated=None if updated is None else float(updated),
            queues={str(q): {str(r): float(v) for r, v in u.items()} for q, u in queues.items()},
            capacity={str(r): float(v) for r, v in capacity.items()},
        )

    @classmethod
    def load(cls, path: str) -> Ledger:
        """The ledger saved at ``path``, or a new one when there is no file yet."""
        try:
            with open(path, encoding="utf-8") as f:
                return cls.from_json(f.read())
        except FileNotFoundError:
            return cls()

    def save(self, path: str) -> None:
        """Write atomically: a crash leaves either the old file or the new one, never a torn one."""
        directory = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(prefix=".ledger-", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(self.to_json())
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
