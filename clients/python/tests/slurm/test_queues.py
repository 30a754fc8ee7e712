"""The queue file and the accounts hierarchy as arbiter queues."""

from __future__ import annotations

from typing import Any

import pytest

from arbiter.slurm.queues import (QueueConfigError, parse_parsable, parse_queue_file,
                                  tree_from_associations)


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
])
def test_a_broken_queue_file_is_refused_naming_the_entry(doc: Any, path: str) -> None:
    with pytest.raises(QueueConfigError, match=r"^" + path.replace("[", r"\[").replace("]", r"\]")):
        parse_queue_file(doc)


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
