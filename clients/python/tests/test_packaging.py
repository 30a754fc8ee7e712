"""What `pip install ./clients/python` gives: the installed package, typed, with its script."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import arbiter

SOURCE_TREE = Path(__file__).resolve().parents[1] / "src"


def test_tests_run_against_the_installed_package() -> None:
    installed = Path(arbiter.__file__).resolve()
    assert not installed.is_relative_to(SOURCE_TREE), (
        f"arbiter was imported from the source tree ({installed}); the tests are meant to run "
        "against `pip install ./clients/python` (clients/python/hack/test.sh)"
    )


def test_installed_package_is_typed_and_ships_its_stubs() -> None:
    package = Path(arbiter.__file__).parent
    assert (package / "py.typed").is_file()
    for name in ("arbiter_pb2.py", "arbiter_pb2.pyi", "arbiter_pb2_grpc.py",
                 "arbiter_pb2_grpc.pyi"):
        assert (package / "v1" / name).is_file(), name


def test_install_gives_the_arbiter_slurm_script() -> None:
    scripts = importlib.metadata.entry_points(group="console_scripts", name="arbiter-slurm")
    assert [s.value for s in scripts] == ["arbiter.slurm.cli:main"]
    # pip writes the script next to the interpreter of the environment it installs into.
    assert (Path(sys.executable).parent / "arbiter-slurm").is_file()


def test_runtime_dependencies_are_pinned() -> None:
    requirements = importlib.metadata.requires("arbiter") or []
    names = {r.split("==")[0].lower().replace("_", "-") for r in requirements}
    assert names == {"grpcio", "protobuf", "pyyaml", "prometheus-client"}
    assert all("==" in r for r in requirements), requirements


PACKAGE_DIR = Path(__file__).resolve().parents[1]


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")
            if "__pycache__" not in p.parts and not p.name.endswith(".pyc")}


def test_building_the_package_writes_nothing_into_the_source_tree(tmp_path: Path) -> None:
    # What `pip install ./clients/python` does first: build a wheel from the source tree.
    before = _files(PACKAGE_DIR)
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
         "--disable-pip-version-check", "--wheel-dir", str(tmp_path), str(PACKAGE_DIR)],
        capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    assert [w.name for w in tmp_path.glob("arbiter-*.whl")], proc.stdout
    assert sorted(_files(PACKAGE_DIR) - before) == []
