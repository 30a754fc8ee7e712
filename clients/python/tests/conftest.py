"""Fixtures that run the real arbiter-server ($ARBITER_SERVER_BIN) on a free loopback port.

``arbiter_server`` (session-scoped) is the target "127.0.0.1:PORT" of one plaintext server
shared by the tests; ``start_arbiter_server`` starts extra servers with flags of a test's own
(TLS, say), each stopped when its test ends. Without ARBITER_SERVER_BIN, the tests that use
either are skipped.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO

import pytest

# How long a server may take to print its "listening on" line, and to stop after SIGTERM.
STARTUP_TIMEOUT_SECONDS = 20.0
STOP_TIMEOUT_SECONDS = 5.0

StartServer = Callable[..., str]


def _server_bin() -> Path:
    value = os.environ.get("ARBITER_SERVER_BIN", "")
    if not value:
        pytest.skip("ARBITER_SERVER_BIN is not set (clients/python/hack/test.sh BIN sets it)")
    path = Path(value)
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(f"ARBITER_SERVER_BIN={value} is not an executable file")
    return path


@contextmanager
def run_server(binary: Path, *flags: str) -> Iterator[str]:
    """Runs `binary` on 127.0.0.1 with a free gRPC port and no metrics port, plus `flags`;
    yields "127.0.0.1:PORT" once it listens, and stops it (SIGTERM, then SIGKILL) on exit."""
    with tempfile.TemporaryFile(prefix="arbiter-server-", suffix=".log") as log:
        process = subprocess.Popen(
            [str(binary), "--host", "127.0.0.1", "--port", "0", "--metrics-port", "-1",
             "--shutdown-grace-seconds", "1", *flags],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
        assert process.stdout is not None
        # Standard output is read by a thread to its end, so that the server never blocks on
        # it and the first lines can be waited for with a timeout.
        lines: queue.Queue[str | None] = queue.Queue()
        reader = threading.Thread(target=_read_lines, args=(process.stdout, lines), daemon=True)
        reader.start()
        try:
            yield _wait_until_listening(process, lines, log)
        finally:
            _stop(process)
            reader.join(timeout=STOP_TIMEOUT_SECONDS)
            process.stdout.close()


def _read_lines(stream: IO[str], lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def _wait_until_listening(
    process: subprocess.Popen[str], lines: queue.Queue[str | None], log: IO[bytes]
) -> str:
    """The address of the "listening on HOST:PORT" line, within STARTUP_TIMEOUT_SECONDS."""
    deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
    while True:
        try:
            line = lines.get(timeout=max(deadline - time.monotonic(), 0.0))
        except queue.Empty:
            raise RuntimeError(
                "arbiter-server printed no 'listening on' line within "
                f"{STARTUP_TIMEOUT_SECONDS:.0f} s{_log_tail(log)}"
            ) from None
        if line is None:
            code = process.wait(timeout=STOP_TIMEOUT_SECONDS)
            raise RuntimeError(f"arbiter-server exited with {code} before listening{_log_tail(log)}")
        if line.startswith("listening on "):
            _, _, port = line.strip().rpartition(":")
            return f"127.0.0.1:{int(port)}"


def _log_tail(log: IO[bytes]) -> str:
    """The end of the server's standard error, for a failure message."""
    log.seek(0)
    text = log.read().decode(errors="replace").strip()
    return f"; its log ends with:\n{text[-2000:]}" if text else ""


def _stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def arbiter_server_bin() -> Path:
    """The arbiter-server binary named by $ARBITER_SERVER_BIN (the test is skipped without)."""
    return _server_bin()


@pytest.fixture(scope="session")
def arbiter_server(arbiter_server_bin: Path) -> Iterator[str]:
    """The target "127.0.0.1:PORT" of a plaintext arbiter-server shared by the session."""
    with run_server(arbiter_server_bin) as target:
        yield target


@pytest.fixture
def start_arbiter_server(arbiter_server_bin: Path) -> Iterator[StartServer]:
    """Starts an arbiter-server with extra flags, returning its target; stopped after the test."""
    with ExitStack() as servers:

        def start(*flags: str) -> str:
            return servers.enter_context(run_server(arbiter_server_bin, *flags))

        yield start
