"""TLS and mutual TLS against arbiter-server, with throwaway certificates made by openssl."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from arbiter import Client, TLSFiles, Unavailable
from arbiter.v1 import arbiter_pb2 as pb

# The start_arbiter_server fixture (conftest.py): flags in, target out.
StartServer = Callable[..., str]


@dataclass(frozen=True)
class Certificates:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _openssl(*args: str | Path) -> None:
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True, timeout=60)


def _signed_certificate(directory: Path, name: str, subject: str, extensions: str) -> None:
    """`name`.key and `name`.pem: an EC key and its certificate, signed by ca.key."""
    key, csr, cert, ext = (directory / f"{name}.{s}" for s in ("key", "csr", "pem", "ext"))
    _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key)
    _openssl("req", "-new", "-key", key, "-out", csr, "-subj", f"/CN={subject}")
    ext.write_text(extensions + "\n")
    _openssl("x509", "-req", "-in", csr, "-CA", directory / "ca.pem", "-CAkey",
             directory / "ca.key", "-CAcreateserial", "-days", "2", "-out", cert,
             "-extfile", ext)


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    """A CA, a server certificate for 127.0.0.1 and localhost, and a client certificate."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    directory = tmp_path_factory.mktemp("tls")
    _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
             "-out", directory / "ca.key")
    _openssl("req", "-x509", "-new", "-key", directory / "ca.key", "-out", directory / "ca.pem",
             "-days", "2", "-subj", "/CN=arbiter test CA",
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign")
    _signed_certificate(directory, "server", "arbiter-server",
                        "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                        "extendedKeyUsage=serverAuth")
    _signed_certificate(directory, "client", "arbiter-client", "extendedKeyUsage=clientAuth")
    return Certificates(
        ca=directory / "ca.pem",
        server_cert=directory / "server.pem",
        server_key=directory / "server.key",
        client_cert=directory / "client.pem",
        client_key=directory / "client.key",
    )


def _snapshot() -> pb.Snapshot:
    return pb.Snapshot(
        queues=[pb.Queue(name="team", deserved={"cpu": 1000})],
        nodes=[pb.Node(name="node-1", allocatable={"cpu": 1000})],
    )


def test_tls_call_verifies_the_server_against_the_ca(
    start_arbiter_server: StartServer, certificates: Certificates
) -> None:
    target = start_arbiter_server(
        "--tls-cert", str(certificates.server_cert), "--tls-key", str(certificates.server_key)
    )

    with Client(target, tls=TLSFiles(ca=str(certificates.ca))) as client:
        response = client.fair_shares(_snapshot())

    assert [q.queue for q in response.queues] == ["team"]


def test_tls_server_name_override_checks_another_name(
    start_arbiter_server: StartServer, certificates: Certificates
) -> None:
    target = start_arbiter_server(
        "--tls-cert", str(certificates.server_cert), "--tls-key", str(certificates.server_key)
    )

    with Client(target, tls=TLSFiles(ca=str(certificates.ca), server_name="localhost")) as c:
        assert [q.queue for q in c.fair_shares(_snapshot()).queues] == ["team"]
    # A name the certificate does not carry fails the handshake.
    wrong = TLSFiles(ca=str(certificates.ca), server_name="elsewhere.example")
    with Client(target, tls=wrong, retries=0) as c, pytest.raises(Unavailable):
        c.fair_shares(_snapshot())


def test_mutual_tls_call_presents_the_client_certificate(
    start_arbiter_server: StartServer, certificates: Certificates
) -> None:
    target = start_arbiter_server(
        "--tls-cert", str(certificates.server_cert), "--tls-key", str(certificates.server_key),
        "--tls-client-ca", str(certificates.ca),
    )
    files = TLSFiles(
        ca=str(certificates.ca), cert=str(certificates.client_cert),
        key=str(certificates.client_key),
    )

    with Client(target, tls=files) as client:
        response = client.schedule(_snapshot())

    assert [q.queue for q in response.queues] == ["team"]


def test_mutual_tls_server_refuses_a_client_without_certificate(
    start_arbiter_server: StartServer, certificates: Certificates
) -> None:
    target = start_arbiter_server(
        "--tls-cert", str(certificates.server_cert), "--tls-key", str(certificates.server_key),
        "--tls-client-ca", str(certificates.ca),
    )

    with Client(target, tls=TLSFiles(ca=str(certificates.ca)), retries=0, deadline=5.0) as c:
        with pytest.raises(Unavailable):
            c.schedule(_snapshot())


def test_plaintext_client_cannot_call_a_tls_server(
    start_arbiter_server: StartServer, certificates: Certificates
) -> None:
    target = start_arbiter_server(
        "--tls-cert", str(certificates.server_cert), "--tls-key", str(certificates.server_key)
    )

    with Client(target, retries=0, deadline=5.0) as client, pytest.raises(Unavailable):
        client.fair_shares(_snapshot())
