"""The committed stubs in src/arbiter/v1 are what hack/gen-proto.sh generates from the proto."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import google.protobuf

PACKAGE_DIR = Path(__file__).resolve().parents[1]
GEN_PROTO = PACKAGE_DIR / "hack" / "gen-proto.sh"
COMMITTED = PACKAGE_DIR / "src" / "arbiter" / "v1"
FIX = "bash clients/python/hack/gen-proto.sh"


def _files(directory: Path) -> dict[str, bytes]:
    return {
        path.name: path.read_bytes()
        for path in sorted(directory.iterdir())
        if path.is_file() and path.suffix in (".py", ".pyi")
    }


def test_committed_stubs_match_a_fresh_generation(tmp_path: Path) -> None:
    # The generators of this environment: requirements-dev.txt pins them, and the script
    # checks the versions.
    env = {**os.environ, "ARBITER_PYTHON": sys.executable}
    result = subprocess.run(
        ["bash", str(GEN_PROTO), str(tmp_path)], env=env, capture_output=True, text=True,
        timeout=120,
    )
    assert result.returncode == 0, f"gen-proto.sh failed:\n{result.stderr}"

    fresh = _files(tmp_path / "arbiter" / "v1")
    committed = _files(COMMITTED)
    stale = sorted(
        name for name in fresh.keys() | committed.keys() if fresh.get(name) != committed.get(name)
    )
    assert not stale, (
        f"the generated stubs in clients/python/src/arbiter/v1 are stale (not as freshly "
        f"generated: {', '.join(stale)}); regenerate them with: {FIX}"
    )


def test_stubs_need_no_newer_protobuf_than_the_runtime() -> None:
    header = (COMMITTED / "arbiter_pb2.py").read_text()
    line = next(x for x in header.splitlines() if x.startswith("# Protobuf Python Version: "))
    generated = tuple(int(p) for p in line.rsplit(" ", 1)[1].split(".")[:3])
    runtime = tuple(int(p) for p in google.protobuf.__version__.split(".")[:3])
    assert generated <= runtime, f"gencode {generated} is newer than protobuf {runtime}"


def test_grpc_module_imports_the_messages_as_arbiter_v1() -> None:
    from arbiter.v1 import arbiter_pb2, arbiter_pb2_grpc

    assert "from arbiter.v1 import arbiter_pb2" in (COMMITTED / "arbiter_pb2_grpc.py").read_text()
    assert getattr(arbiter_pb2_grpc, "arbiter_dot_v1_dot_arbiter__pb2") is arbiter_pb2
