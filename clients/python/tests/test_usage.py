"""The usage ledger of time-aware fairness, held to the vectors the core and the Go adapter share."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

from arbiter.usage import AccountingError, Ledger, accumulate

VECTORS = Path(__file__).resolve().parents[3] / "tests" / "testdata" / "usage_accounting_vectors.json"


def _number(value: Any) -> float:
    return float(value)  # JSON numbers, and the strings "+Inf", "-Inf", "NaN"


def _amounts(raw: dict[str, Any]) -> dict[str, float]:
    return {key: _number(value) for key, value in raw.items()}


def _vectors() -> list[dict[str, Any]]:
    with open(VECTORS, encoding="utf-8") as f:
        data: list[dict[str, Any]] = json.load(f)
    return data


@pytest.mark.parametrize("vector", _vectors(), ids=lambda v: str(v["name"]))
def test_accumulate_matches_the_shared_vectors(vector: dict[str, Any]) -> None:
    usage, rate = _amounts(vector["usage"]), _amounts(vector["rate"])
    interval, half_life = _number(vector["interval"]), _number(vector["half_life"])
    if vector.get("error"):
        with pytest.raises(AccountingError):
            accumulate(usage, rate, interval, half_life)
        return
    got = accumulate(usage, rate, interval, half_life)
    expected = _amounts(vector["expected"])
    assert sorted(got) == sorted(expected)
    tolerance = float(vector.get("relative_tolerance", 0.0))
    for key, want in expected.items():
        if tolerance == 0.0:
            assert got[key] == want, key
        else:
            assert math.isclose(got[key], want, rel_tol=tolerance), key


def test_an_error_names_the_argument_and_the_key() -> None:
    with pytest.raises(AccountingError, match=r"rate\['cpu'\]"):
        accumulate({}, {"cpu": -1.0}, 1.0, 60.0)


def test_the_first_step_of_a_new_ledger_only_starts_the_clock() -> None:
    ledger = Ledger()
    ledger.advance(1000.0, {"a": {"nvidia.com/gpu": 4.0}}, {"nvidia.com/gpu": 8.0}, 60.0)
    assert ledger.updated == 1000.0
    assert ledger.queues == {"a": {"nvidia.com/gpu": 0.0}}
    ledger.advance(1060.0, {"a": {"nvidia.com/gpu": 4.0}}, {"nvidia.com/gpu": 8.0}, 60.0)
    assert ledger.queues["a"]["nvidia.com/gpu"] == 240.0
    assert ledger.capacity["nvidia.com/gpu"] == 480.0


def test_a_clock_that_goes_backwards_counts_as_no_time() -> None:
    ledger = Ledger(updated=1000.0, queues={"a": {"cpu": 10.0}}, capacity={"cpu": 20.0})
    ledger.advance(900.0, {"a": {"cpu": 5.0}}, {"cpu": 8.0}, 60.0)
    assert ledger.queues["a"]["cpu"] == 10.0
    assert ledger.updated == 1000.0


def test_queues_that_hold_nothing_any_more_are_forgotten() -> None:
    ledger = Ledger(updated=0.0, queues={"gone": {"cpu": 10.0}})
    ledger.advance(10.0, {"stays": {"cpu": 1.0}}, {"cpu": 1.0}, 0.0)
    assert sorted(ledger.queues) == ["stays"]


def test_the_ledger_survives_a_save_and_a_load(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    assert Ledger.load(str(path)) == Ledger()
    ledger = Ledger(updated=12.5, queues={"a": {"cpu": 1.25}}, capacity={"cpu": 3.0})
    ledger.save(str(path))
    assert Ledger.load(str(path)) == ledger
    assert [p.name for p in tmp_path.iterdir()] == ["ledger.json"]  # no temporary file left


def test_a_failed_save_keeps_the_previous_ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "ledger.json"
    Ledger(updated=1.0).save(str(path))

    def crash(src: str, dst: str) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        Ledger(updated=2.0).save(str(path))
    assert Ledger.load(str(path)).updated == 1.0
    assert [p.name for p in tmp_path.iterdir()] == ["ledger.json"]
