"""Slurm host lists: ``n[1-3,7],gpu01`` and back."""

from __future__ import annotations

import re

_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def expand(hostlist: str | None) -> list[str]:
    """The host names of a Slurm host list, in order: ``n[1,3-4]`` gives n1, n3, n4.

    Leading zeros are kept (``gpu[01-02]`` gives gpu01, gpu02); several bracket groups in one name
    multiply out.
    """
    if not hostlist:
        return []
    out: list[str] = []
    for item in _split(hostlist):
        out.extend(_expand_one(item))
    return out


def _split(text: str) -> list[str]:
    """Splits on commas outside brackets."""
    items, depth, current = [], 0, ""
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"host list {text!r}: unbalanced ']'")
        if ch == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += ch
    if depth != 0:
        raise ValueError(f"host list {text!r}: unbalanced '['")
    if current:
        items.append(current)
    return [i.strip() for i in items if i.strip()]


def _expand_one(item: str) -> list[str]:
    start = item.find("[")
    if start < 0:
        return [item]
    end = item.index("]", start)
    prefix, body, rest = item[:start], item[start + 1 : end], item[end + 1 :]
    names: list[str] = []
    for part in body.split(","):
        match = _RANGE.match(part.strip())
        if not match:
            raise ValueError(f"host list {item!r}: cannot read range {part!r}")
        low, high = match.group(1), match.group(2) or match.group(1)
        width = len(low)
        if int(high) < int(low):
            raise ValueError(f"host list {item!r}: range {part!r} runs backwards")
        for number in range(int(low), int(high) + 1):
            names.append(f"{prefix}{number:0{width}d}")
    return [name + tail for name in names for tail in _expand_one(rest)] if rest else names
