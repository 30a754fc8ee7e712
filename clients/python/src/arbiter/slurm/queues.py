"""Where arbiter's queues come from for a Slurm cluster.

Either a queue file (YAML) that draws the tree and names which Slurm accounts feed each leaf, or
the accounts hierarchy of slurmdbd (``sacctmgr show assoc``), where each account is a queue.
"""

from __future__ import annotations

import math
import re
import subprocess
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import yaml

from arbiter.slurm import resources
from arbiter.v1 import arbiter_pb2

# The names a queue file may use for a resource, besides arbiter's own.
_RESOURCE_ALIASES = {"gpu": resources.GPU, "gpus": resources.GPU, "mem": resources.MEMORY}
# arbiter-server's default request limits (--max-name-bytes, --max-queue-depth,
# --max-resource-names); a server started with smaller ones may refuse a tree that passes here.
MAX_NAME_BYTES = 1024
MAX_QUEUE_DEPTH = 64
MAX_RESOURCE_NAMES = 64
_INT32 = (-(2**31), 2**31 - 1)


class QueueConfigError(ValueError):
    """The queue tree is not usable; the message names the offending entry by its path."""


@dataclass
class QueueTree:
    """The queues to send, in the order given, and which leaf each Slurm account feeds."""

    queues: list[arbiter_pb2.Queue] = field(default_factory=list)
    account_queue: dict[str, str] = field(default_factory=dict)
    parents: dict[str, str] = field(default_factory=dict)
    # Where each queue (by index in ``queues``) was defined: "FILE: queues[0].queues[2]".
    origins: list[str] = field(default_factory=list)

    def queue_of(self, account: str) -> str | None:
        return self.account_queue.get(account)

    def origin_of(self, field_path: str | None) -> str | None:
        """Where the queue that a server's field path (``snapshot.queues[3]…``) names was
        defined, with its name; None when the path names no queue."""
        match = re.match(r"snapshot\.queues\[(\d+)\]", field_path or "")
        if not match or int(match.group(1)) >= len(self.queues):
            return None
        i = int(match.group(1))
        return f"{self.origins[i]} (queue {self.queues[i].name!r})"

    def ancestry(self, queue: str) -> list[str]:
        """The queue and its ancestors, leaf first."""
        out = []
        current: str | None = queue
        while current:
            out.append(current)
            current = self.parents.get(current) or None
        return out


def load_queue_file(path: str) -> QueueTree:
    """The queue file at ``path``. Raises OSError when it cannot be read, and QueueConfigError,
    naming the file and the entry's path in it, for anything arbiter-server would refuse."""
    with open(path, encoding="utf-8") as f:
        try:
            data = yaml.safe_load(f)
        except yaml.YAMLError as err:
            raise QueueConfigError(f"{path}: not valid YAML: {err}") from err
    try:
        tree = parse_queue_file(data)
    except QueueConfigError as err:
        raise QueueConfigError(f"{path}: {err}") from err
    tree.origins = [f"{path}: {origin}" for origin in tree.origins]
    return tree


def parse_queue_file(data: Any) -> QueueTree:
    """Reads the queue file's document::

        queues:
          - name: research
            deserved: {nvidia.com/gpu: 8}
            limit: {nvidia.com/gpu: 12}      # optional; -1 = no cap
            over_quota_weight: {nvidia.com/gpu: 2}
            priority: 1
            queues:                           # children
              - name: team-a
                deserved: {gpu: 4}
                accounts: [physics]           # Slurm accounts whose jobs go here (leaves only)
    """
    if not isinstance(data, dict) or not isinstance(data.get("queues"), list):
        raise QueueConfigError("queues: the file must hold a list named 'queues'")
    tree = QueueTree()
    _read_level(data["queues"], "", "queues", tree, 1)
    if not tree.queues:
        raise QueueConfigError("queues: at least one queue is needed")
    _check_resource_names(tree)
    return tree


def _read_level(entries: list[Any], parent: str, path: str, tree: QueueTree, depth: int) -> None:
    for i, entry in enumerate(entries):
        where = f"{path}[{i}]"
        if depth > MAX_QUEUE_DEPTH:
            raise QueueConfigError(f"{where}: the queue tree is {depth} levels deep here; "
                                   f"arbiter-server accepts at most {MAX_QUEUE_DEPTH}")
        if not isinstance(entry, dict):
            raise QueueConfigError(f"{where}: a queue must be a mapping")
        unknown = set(entry) - {
            "name", "deserved", "limit", "over_quota_weight", "priority", "queues", "accounts",
        }
        if unknown:
            raise QueueConfigError(f"{where}: unknown field {sorted(unknown)[0]!r}")
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise QueueConfigError(f"{where}.name: a queue needs a name")
        if name in tree.parents:
            raise QueueConfigError(f"{where}.name: queue {name!r} is defined twice")
        _check_name(name, f"{where}.name")
        queue = arbiter_pb2.Queue(name=name, parent=parent)
        for key in ("deserved", "limit", "over_quota_weight"):
            amounts = _amounts(entry.get(key), f"{where}.{key}", f" (queue {name!r})")
            for resource, amount in amounts.items():
                getattr(queue, key)[resource] = amount
        priority = entry.get("priority", 0)
        if not isinstance(priority, int) or isinstance(priority, bool):
            raise QueueConfigError(f"{where}.priority: must be an integer (queue {name!r})")
        if not _INT32[0] <= priority <= _INT32[1]:
            raise QueueConfigError(f"{where}.priority: must fit in 32 bits, got {priority} "
                                   f"(queue {name!r})")
        queue.priority = priority
        tree.queues.append(queue)
        tree.origins.append(where)
        tree.parents[name] = parent
        children = entry.get("queues") or []
        accounts = entry.get("accounts") or []
        if not isinstance(children, list):
            raise QueueConfigError(f"{where}.queues: must be a list")
        if not isinstance(accounts, list) or not all(isinstance(a, str) for a in accounts):
            raise QueueConfigError(f"{where}.accounts: must be a list of account names")
        if children and accounts:
            raise QueueConfigError(
                f"{where}.accounts: only a leaf queue takes jobs; {name!r} has child queues"
            )
        for account in accounts:
            if account in tree.account_queue:
                raise QueueConfigError(
                    f"{where}.accounts: account {account!r} already feeds queue "
                    f"{tree.account_queue[account]!r}"
                )
            tree.account_queue[account] = name
        _read_level(children, name, f"{where}.queues", tree, depth + 1)


def _amounts(raw: Any, where: str, queue: str) -> dict[str, float]:
    """A map of resources to amounts, each checked as arbiter-server checks it (SEMANTICS.md
    §1 rule 2): finite, and not negative except for -1 (no limit) in ``deserved`` and
    ``limit``. ``where`` ends in the field's name; ``queue`` ends each message."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise QueueConfigError(f"{where}: must map resource names to amounts{queue}")
    weights = where.endswith("over_quota_weight")
    out: dict[str, float] = {}
    for key, value in raw.items():
        at = f"{where}.{key}"
        if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
            raise QueueConfigError(f"{at}: must be a number{queue}")
        check_amount(at, float(value), weights, queue)
        resource = _RESOURCE_ALIASES.get(str(key), str(key))
        if not resource:
            raise QueueConfigError(f"{at}: a resource needs a name{queue}")
        _check_name(resource, at)
        out[resource] = float(value)
    return out


def check_amount(at: str, value: float, weight: bool, queue: str = "") -> None:
    """Raises QueueConfigError for an amount arbiter-server refuses: not finite, or negative
    (an over-quota weight) or negative other than -1 (a deserved quota or a limit)."""
    if not math.isfinite(value):
        raise QueueConfigError(f"{at}: must be finite, got {value}{queue}")
    if weight and value < 0:
        raise QueueConfigError(f"{at}: must not be negative, got {value:g}{queue}")
    if not weight and value < 0 and value != -1:
        raise QueueConfigError(f"{at}: negative value other than -1 (unlimited): {value:g}{queue}")


def _check_name(name: str, at: str) -> None:
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        raise QueueConfigError(f"{at}: longer than {MAX_NAME_BYTES} bytes, the most "
                               "arbiter-server accepts")


def _check_resource_names(tree: QueueTree) -> None:
    """The server counts distinct resource names over the whole request, the nodes' cpu, memory
    and nvidia.com/gpu among them."""
    names = {resources.CPU, resources.MEMORY, resources.GPU}
    for queue in tree.queues:
        for amounts in (queue.deserved, queue.limit, queue.over_quota_weight):
            names.update(amounts)
    if len(names) > MAX_RESOURCE_NAMES:
        raise QueueConfigError(f"queues: {len(names)} distinct resource names with the nodes' "
                               f"own; arbiter-server accepts at most {MAX_RESOURCE_NAMES}")


def check_tree(tree: QueueTree, source: str) -> None:
    """Checks a tree not read from a file (the accounts hierarchy) as a queue file is checked;
    ``source`` begins each message."""
    for queue, origin in zip(tree.queues, tree.origins):
        _check_name(queue.name, f"{source}: {origin}")
        for key in ("deserved", "limit", "over_quota_weight"):
            for resource, amount in sorted(getattr(queue, key).items()):
                check_amount(f"{source}: {origin}.{key}.{resource}", amount,
                             key == "over_quota_weight")
    _check_resource_names(tree)


# sacctmgr's TRES names, in arbiter's resources.
def _grp_tres(text: str) -> dict[str, float]:
    return {k: v for k, v in resources.tres(text).items() if k != "node"}


def tree_from_associations(rows: Sequence[Mapping[str, str]]) -> QueueTree:
    """The accounts hierarchy as queues.

    Each account association (a row without a user) is a queue under its parent account; Slurm's
    ``root`` account is the top and is not a queue. As in Slurm's own fair-share factor, an
    account's shares divide what its parent has: ``deserved`` is 0 and ``over_quota_weight`` is
    the account's ``Fairshare`` for every resource, so the whole cluster is divided by shares.
    ``GrpTRES`` becomes the queue's limit. Jobs go to their account's queue; an account that also
    has child accounts gets a leaf ``<account>.jobs`` for its own jobs.
    """
    accounts: dict[str, Mapping[str, str]] = {}
    for row in rows:
        if row.get("User"):
            continue
        account = row.get("Account", "")
        if account and account != "root":
            accounts[account] = row
    children: dict[str, list[str]] = {}
    for account, row in accounts.items():
        parent = row.get("ParentName", "") or "root"
        children.setdefault("" if parent == "root" else parent, []).append(account)
    tree = QueueTree()

    def share_of(row: Mapping[str, str]) -> float:
        text = row.get("Fairshare") or row.get("Share") or "1"
        if text.lower() == "parent":
            return 1.0
        return float(text)

    def add(account: str, parent: str) -> None:
        row = accounts[account]
        queue = arbiter_pb2.Queue(name=account, parent=parent)
        for resource in (resources.CPU, resources.MEMORY, resources.GPU):
            queue.over_quota_weight[resource] = share_of(row)
        for resource, amount in _grp_tres(row.get("GrpTRES", "")).items():
            queue.limit[resource] = amount
        tree.queues.append(queue)
        tree.origins.append(f"account {account!r}")
        tree.parents[account] = parent
        kids = sorted(children.get(account, []))
        if kids:
            leaf = f"{account}.jobs"
            tree.queues.append(arbiter_pb2.Queue(name=leaf, parent=account))
            tree.origins.append(f"account {account!r} (its own jobs)")
            tree.parents[leaf] = account
            tree.account_queue[account] = leaf
        else:
            tree.account_queue[account] = account
        for kid in kids:
            add(kid, account)

    for top in sorted(children.get("", [])):
        add(top, "")
    if not tree.queues:
        raise QueueConfigError("sacctmgr: no account associations below root")
    check_tree(tree, "sacctmgr")
    return tree


def read_sacctmgr(sacctmgr: str = "sacctmgr", timeout: float = 10.0) -> QueueTree:
    """Runs ``sacctmgr show assoc`` (needs slurmdbd) and reads the hierarchy it prints."""
    fields = ["Account", "ParentName", "User", "Fairshare", "GrpTRES"]
    proc = subprocess.run(
        [sacctmgr, "--noheader", "--parsable2", "show", "assoc", "format=" + ",".join(fields)],
        capture_output=True, text=True, timeout=timeout, check=False,
    )
    if proc.returncode != 0:
        raise QueueConfigError(f"sacctmgr show assoc failed: {proc.stderr.strip()}")
    return tree_from_associations(parse_parsable(proc.stdout, fields))


def parse_parsable(text: str, fields: Sequence[str]) -> list[dict[str, str]]:
    """Rows of ``--parsable2`` output (``|``-separated, no header) as dictionaries."""
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        values = line.split("|")
        rows.append({name: (values[i] if i < len(values) else "") for i, name in enumerate(fields)})
    return rows
