"""The queue file and the accounts hierarchy as arbiter queues."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from arbiter.slurm.queues import (QueueConfigError, load_queue_file, parse_parsable,
                                  parse_queue_file, tree_from_associations)


def test_the_queue_file_draws_the_tree_and_maps_accounts_to_leaves() -> None:
    tree = parse_queue_file({"queues": [{
        "name": "org", "limit": {"gpu": 12}, "priority": 2,
        "queues": [{"name": "a", "deserved": {"gpu": 4, "cpu": 8000},
                    "over_quota_weight": {"gpu": 2}, "accounts": ["physics", "math"]}],
    }]})
    org, a = tree.queues
    assert (org.name, org.parent, dict(org.limit), org.priority) == ("org", "", {"nvidia.com/gpu": 12.0}, 2)
    assert (a.name, a.parent) == ("a", "org")
    assert dict(a.deserved) == {"nvidia.com/gpu": 4.0, "cpu": 8000.0}
    assert dict(a.over_quota_weight) == {"nvidia.com/gpu": 2.0}
    assert tree.queue_of("math") == "a" and tree.queue_of("nobody") is None
    assert tree.ancestry("a") == ["a", "org"]


@pytest.mark.parametrize("doc, path", [
    ({}, "queues"),
    ({"queues": [{"deserved": {}}]}, "queues[0].name"),
    ({"queues": [{"name": "a", "deserved": {"gpu": "x"}}]}, "queues[0].deserved.gpu"),
    ({"queues": [{"name": "a", "colour": 1}]}, "queues[0]"),
    ({"queues": [{"name": "a", "accounts": ["x"], "queues": [{"name": "b"}]}]}, "queues[0].accounts"),
    ({"queues": [{"name": "a", "queues": [{"name": "a"}]}]}, "queues[0].queues[0].name"),
    ({"queues": [{"name": "a", "accounts": ["x"]}, {"name": "b", "accounts": ["x"]}]},
     "queues[1].accounts"),
    # What arbiter-server refuses (SEMANTICS.md §1 rule 2), refused while loading.
    ({"queues": [{"name": "a", "queues": [{"name": "b", "over_quota_weight": {"gpu": -1}}]}]},
     "queues[0].queues[0].over_quota_weight.gpu: must not be negative, got -1 (queue 'b')"),
    ({"queues": [{"name": "a", "deserved": {"cpu": -2}}]},
     "queues[0].deserved.cpu: negative value other than -1 (unlimited): -2 (queue 'a')"),
    ({"queues": [{"name": "a", "limit": {"gpu": -0.5}}]}, "queues[0].limit.gpu: negative"),
    ({"queues": [{"name": "a", "limit": {"gpu": float("inf")}}]},
     "queues[0].limit.gpu: must be finite"),
    ({"queues": [{"name": "a", "over_quota_weight": {"gpu": float("-inf")}}]},
     "queues[0].over_quota_weight.gpu: must be finite"),
    ({"queues": [{"name": "a", "priority": 2**31}]}, "queues[0].priority: must fit in 32 bits"),
    ({"queues": [{"name": "a" * 1025}]}, "queues[0].name: longer than 1024 bytes"),
    ({"queues": [{"name": "a", "deserved": {"": 1}}]}, "queues[0].deserved.: a resource needs"),
    ({"queues": [{"name": "a", "deserved": {f"r{i}": 1 for i in range(62)}}]},
     "queues: 65 distinct resource names"),
])
def test_a_broken_queue_file_is_refused_naming_the_entry(doc: Any, path: str) -> None:
    with pytest.raises(QueueConfigError, match=r"^" + re.escape(path)):
        parse_queue_file(doc)


def test_minus_one_means_no_limit_and_is_accepted() -> None:
    tree = parse_queue_file({"queues": [{"name": "a", "deserved": {"gpu": -1}, "limit": {"gpu": -1},
                                         "over_quota_weight": {"gpu": 0}}]})
    assert tree.queues[0].limit["nvidia.com/gpu"] == -1


def test_a_tree_deeper_than_the_server_accepts_is_refused() -> None:
    doc: dict[str, Any] = {"name": "q64"}
    for depth in range(63, 0, -1):
        doc = {"name": f"q{depth}", "queues": [doc]}
    parse_queue_file({"queues": [doc]})  # 64 levels
    doc = {"name": "q0", "queues": [doc]}
    with pytest.raises(QueueConfigError, match="65 levels deep here"):
        parse_queue_file({"queues": [doc]})


def test_a_refused_file_is_named_with_the_queues_path_in_it(tmp_path: Path) -> None:
    path = tmp_path / "queues.yaml"
    path.write_text("queues:\n  - name: a\n    over_quota_weight: {gpu: -1}\n")
    with pytest.raises(QueueConfigError) as refused:
        load_queue_file(str(path))
    assert str(refused.value) == (f"{path}: queues[0].over_quota_weight.gpu: must not be "
                                  "negative, got -1 (queue 'a')")
    path.write_text("queues:\n  - name: a\n  - name: b\n")
    tree = load_queue_file(str(path))
    assert tree.origin_of("snapshot.queues[1].limit") == f"{path}: queues[1] (queue 'b')"
    assert tree.origin_of("snapshot.pod_groups[1].queue") is None


SACCTMGR = """\
root|||1|
root||root|1|
physics|root||3|gres/gpu=8
physics|root|alice|1|
theory|physics||1|
chemistry|root||1|cpu=64
"""


def test_the_accounts_hierarchy_becomes_queues_divided_by_shares() -> None:
    rows = parse_parsable(SACCTMGR, ["Account", "ParentName", "User", "Fairshare", "GrpTRES"])
    tree = tree_from_associations(rows)
    queues = {q.name: q for q in tree.queues}
    assert sorted(queues) == ["chemistry", "physics", "physics.jobs", "theory"]
    assert queues["physics"].parent == "" and queues["theory"].parent == "physics"
    assert queues["physics"].over_quota_weight["nvidia.com/gpu"] == 3.0
    assert dict(queues["physics"].limit) == {"nvidia.com/gpu": 8.0}
    assert dict(queues["chemistry"].limit) == {"cpu": 64000.0}
    assert tree.queue_of("physics") == "physics.jobs"  # its own jobs, beside its children
    assert tree.queue_of("theory") == "theory"
