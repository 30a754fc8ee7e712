"""Slurm's resource spellings, read into arbiter's units.

arbiter's adapters agree on ``cpu`` in millicores, ``memory`` in bytes and ``nvidia.com/gpu`` in
devices. Slurm speaks CPUs, megabytes and generic resources (GRES).
"""

from __future__ import annotations

import re

CPU = "cpu"
MEMORY = "memory"
GPU = "nvidia.com/gpu"

MEBIBYTE = 1024 * 1024
_MEMORY_UNITS = {"K": 1024, "M": MEBIBYTE, "G": 1024 * MEBIBYTE, "T": 1024 * 1024 * MEBIBYTE}


def cpus(count: float) -> float:
    """Slurm CPUs as millicores."""
    return float(count) * 1000.0


def megabytes(count: float) -> float:
    """Slurm's memory figures (MB, as Slurm counts them: MiB) as bytes."""
    return float(count) * MEBIBYTE


def gpus_in_gres(gres: str | None) -> float:
    """The GPUs in a GRES list such as ``gpu:4``, ``gpu:a100:2(S:0-1),nic:1`` or ``gres:gpu:2``.

    Other generic resources are ignored; a GRES without a count counts one.
    """
    if not gres:
        return 0.0
    total = 0.0
    for item in _split_top_level(gres):
        item = re.sub(r"\(.*\)$", "", item.strip())  # socket bindings: gpu:2(S:0-1)
        parts = [p for p in item.replace("/", ":").split(":") if p]
        if parts and parts[0] == "gres":
            parts = parts[1:]
        if not parts or parts[0] != "gpu":
            continue
        count = parts[-1] if len(parts) > 1 else "1"
        if len(parts) == 2 and not _is_count(count):
            count = "1"  # gpu:a100 = one GPU of that type
        if not _is_count(count):
            raise ValueError(f"GRES {gres!r}: cannot read the GPU count of {item!r}")
        total += float(count)
    return total


def _is_count(text: str) -> bool:
    return re.fullmatch(r"\d+", text) is not None


def _split_top_level(text: str) -> list[str]:
    """Splits on commas outside parentheses."""
    out, depth, current = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(current)
            current = ""
        else:
            current += ch
    if current:
        out.append(current)
    return out


def tres(text: str | None) -> dict[str, float]:
    """A TRES string such as ``cpu=4,mem=2000M,node=2,gres/gpu=4`` in arbiter's units.

    Returns ``cpu`` (millicores), ``memory`` (bytes), ``nvidia.com/gpu`` and ``node`` (a count)
    when present; other TRES are ignored.
    """
    out: dict[str, float] = {}
    if not text:
        return out
    for item in text.split(","):
        if "=" not in item:
            continue
        key, value = item.split("=", 1)
        if key == "cpu":
            out[CPU] = cpus(float(value))
        elif key == "mem":
            out[MEMORY] = memory(value)
        elif key == "node":
            out["node"] = float(value)
        elif key == "gres/gpu":
            out[GPU] = float(value)
    return out


def memory(text: str) -> float:
    """A memory amount such as ``2000M``, ``16G`` or ``512`` (megabytes) in bytes."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGT]?)", text.strip())
    if not match:
        raise ValueError(f"memory {text!r}: not an amount like 2000M")
    unit = match.group(2) or "M"
    return float(match.group(1)) * _MEMORY_UNITS[unit]
