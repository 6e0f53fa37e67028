"""TLS (rediss://) against real redis-servers started with --tls-port, with certificates this
module makes with the openssl command: a CA, a server certificate for IP 127.0.0.1, a client
certificate, and a second CA nobody trusts. Plus the checks of the new constructor options."""

from __future__ import annotations

import asyncio
import os
import pathlib
import shutil
import subprocess
import tempfile
import time
from typing import Iterator, Tuple

import pytest

import fencelock
import fencelock.asyncio
from redis_fixture import RedisServer, free_port

EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


def openssl(cwd: str, *args: str) -> None:
    out = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    assert out.returncode == 0, f"openssl {args}: {out.stderr}"


def make_ca(d: str, name: str) -> None:
    openssl(d, "req", "-x509", "-days", "2", "-subj", f"/CN=fencelock test {name}", *EC,
            "-keyout", f"{name}.key", "-out", f"{name}.crt")


def make_cert(d: str, name: str, ext: str) -> None:
    with open(os.path.join(d, f"{name}.ext"), "w") as f:
        f.write(ext)
    openssl(d, "req", "-new", "-subj", f"/CN=fencelock test {name}", *EC,
            "-keyout", f"{name}.key", "-out", f"{name}.csr")
    openssl(d, "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "2", "-out", f"{name}.crt", "-extfile", f"{name}.ext")


@pytest.fixture(scope="module")
def certs() -> Iterator[pathlib.Path]:
    """ca.crt, server.crt/key (SAN IP:127.0.0.1), client.crt/key, and other-ca.crt."""
    d = tempfile.mkdtemp(prefix="fencelock-py-tls-")
    make_ca(d, "ca")
    make_ca(d, "other-ca")
    make_cert(d, "server", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
    make_cert(d, "client", "extendedKeyUsage=clientAuth\n")
    yield pathlib.Path(d)
    shutil.rmtree(d, ignore_errors=True)


def tls_server(certs: pathlib.Path, client_certs: bool) -> Tuple[RedisServer, str]:
    port = free_port()
    server = RedisServer([
        "--tls-port", str(port),
        "--tls-cert-file", str(certs / "server.crt"),
        "--tls-key-file", str(certs / "server.key"),
        "--tls-ca-cert-file", str(certs / "ca.crt"),
        "--tls-auth-clients", "yes" if client_certs else "no",
    ])
    return server, f"rediss://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def tls(certs: pathlib.Path) -> Iterator[Tuple[RedisServer, str]]:
    """A server with a plain port (for checks) and a TLS port not asking for client certs."""
    server, url = tls_server(certs, client_certs=False)
    yield server, url
    server.close()


@pytest.fixture(scope="module")
def mtls(certs: pathlib.Path) -> Iterator[Tuple[RedisServer, str]]:
    """A server whose TLS port requires a client certificate signed by the CA."""
    server, url = tls_server(certs, client_certs=True)
    yield server, url
    server.close()


def roundtrip(m: fencelock.LockManager, server: RedisServer, name: str) -> None:
    lock = m.acquire(name, 10, wait=5)
    assert server.client().get(name) == str(lock.token).encode()
    lock.extend(10)
    lock.release()
    assert server.client().get(name) is None


def test_a_server_signed_by_the_given_ca_is_verified(tls: Tuple[RedisServer, str], certs: pathlib.Path, name: str) -> None:
    server, url = tls
    with fencelock.LockManager(url, tls_ca_file=str(certs / "ca.crt"), server_timeout=1) as m:
        roundtrip(m, server, name)
    # os.PathLike and bytes paths too.
    with fencelock.LockManager(url, tls_ca_file=certs / "ca.crt", server_timeout=1) as m:
        roundtrip(m, server, name)
    with fencelock.LockManager(url, tls_ca_file=os.fsencode(certs / "ca.crt"), server_timeout=1) as m:
        roundtrip(m, server, name)


def test_an_unknown_ca_is_unavailable_unless_insecure(tls: Tuple[RedisServer, str], certs: pathlib.Path, name: str) -> None:
    server, url = tls
    for kwargs in ({}, {"tls_ca_file": certs / "other-ca.crt"}):
        with fencelock.LockManager(url, server_timeout=1, **kwargs) as m:
            with pytest.raises(fencelock.Unavailable) as info:
                m.acquire(name, 10, wait=0)
            assert "127.0.0.1" in str(info.value)
            assert "certificate" in str(info.value).lower(), str(info.value)
    # A certificate failure is permanent: a wait limit does not make acquire retry it.
    with fencelock.LockManager(url, server_timeout=1) as m:
        start = time.monotonic()
        with pytest.raises(fencelock.Unavailable):
            m.acquire(name, 10, wait=30)
        assert time.monotonic() - start < 10
    assert server.client().get(name) is None
    # The explicit insecure mode accepts the self-signed chain (development servers).
    with fencelock.LockManager(url, tls_insecure=True, server_timeout=1) as m:
        roundtrip(m, server, name)


def test_mutual_tls_needs_the_client_certificate(mtls: Tuple[RedisServer, str], certs: pathlib.Path, name: str) -> None:
    server, url = mtls
    with fencelock.LockManager(url, tls_ca_file=certs / "ca.crt", tls_client_cert=certs / "client.crt",
                               tls_client_key=certs / "client.key", server_timeout=1) as m:
        roundtrip(m, server, name)
    with fencelock.LockManager(url, tls_ca_file=certs / "ca.crt", server_timeout=1) as m:
        with pytest.raises(fencelock.Unavailable):
            m.acquire(name, 10, wait=0)
    assert server.client().get(name) is None


def test_the_asyncio_manager_takes_the_same_tls_options(mtls: Tuple[RedisServer, str], certs: pathlib.Path, name: str) -> None:
    server, url = mtls

    async def main() -> None:
        async with fencelock.asyncio.LockManager(
            url, tls_ca_file=certs / "ca.crt", tls_client_cert=certs / "client.crt",
            tls_client_key=certs / "client.key", connect_timeout=2, server_timeout=1,
        ) as m:
            async with m.lock(name, 10) as lock:
                assert server.client().get(name) == str(lock.token).encode()
        async with fencelock.asyncio.LockManager(url, tls_ca_file=certs / "ca.crt", server_timeout=1) as m:
            with pytest.raises(fencelock.Unavailable):
                await m.acquire(name, 10, wait=0)

    asyncio.run(main())


MANAGERS = [fencelock.LockManager, fencelock.asyncio.LockManager]


@pytest.mark.parametrize("cls", MANAGERS)
def test_bad_tls_options_raise_naming_the_argument(cls: type, certs: pathlib.Path) -> None:
    url = "rediss://127.0.0.1:1"
    cases = [
        ({"tls_ca_file": 3}, TypeError, "tls_ca_file"),
        ({"tls_ca_file": ""}, ValueError, "tls_ca_file"),
        ({"tls_ca_file": certs / "missing.crt"}, ValueError, "tls_ca_file"),
        ({"tls_client_cert": certs / "client.crt"}, ValueError, "tls_client_key"),
        ({"tls_client_key": certs / "client.key"}, ValueError, "tls_client_cert"),
        ({"tls_client_cert": [b"x"], "tls_client_key": certs / "client.key"}, TypeError, "tls_client_cert"),
        ({"tls_client_cert": certs / "client.crt", "tls_client_key": certs / "nope.key"}, ValueError, "tls_client_key"),
        ({"tls_insecure": 1}, TypeError, "tls_insecure"),
        ({"tls_insecure": "false"}, TypeError, "tls_insecure"),
        ({"tls_insecure": None}, TypeError, "tls_insecure"),
    ]
    for kwargs, exc, arg in cases:
        with pytest.raises(exc) as info:
            cls(url, **kwargs)
        assert arg in str(info.value), (kwargs, str(info.value))
    # TLS options without any rediss:// server are a mistake, not ignored.
    with pytest.raises(ValueError, match="rediss://"):
        cls("redis://127.0.0.1:1", tls_ca_file=certs / "ca.crt")


def test_a_bad_key_file_is_refused_without_showing_its_contents(certs: pathlib.Path, tmp_path: pathlib.Path) -> None:
    bad = tmp_path / "bad.key"
    bad.write_text("-----BEGIN PRIVATE KEY-----\nSECRETKEYMATERIAL\n-----END PRIVATE KEY-----\n")
    with pytest.raises(ValueError) as info:
        fencelock.LockManager("rediss://127.0.0.1:1", tls_client_cert=certs / "client.crt", tls_client_key=bad)
    assert "SECRETKEYMATERIAL" not in str(info.value) + repr(info.value)
    real_key = (certs / "client.key").read_text().splitlines()[1]
    m = fencelock.LockManager("rediss://127.0.0.1:1", tls_client_cert=certs / "client.crt", tls_client_key=certs / "client.key")
    assert real_key not in repr(m)
    m.close()


@pytest.mark.parametrize("cls", MANAGERS)
def test_connect_timeout_is_checked_and_accepted(cls: type) -> None:
    for value in (0, -1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="connect_timeout"):
            cls("redis://127.0.0.1:1", connect_timeout=value)
    with pytest.raises(ValueError, match="connect_timeout"):
        cls("redis://127.0.0.1:1", connect_timeout=7200)  # the core's 1 h bound
    for value in ("1", b"1", [1]):
        with pytest.raises(TypeError, match="connect_timeout"):
            cls("redis://127.0.0.1:1", connect_timeout=value)
    for value in (None, 0.05, 1, 30):
        cls("redis://127.0.0.1:1", connect_timeout=value)


def test_a_dead_server_is_unavailable_within_the_timeouts(name: str) -> None:
    # Nothing listens on this port: a refused connection, reported quickly.
    m = fencelock.LockManager(f"redis://127.0.0.1:{free_port()}", connect_timeout=0.2, server_timeout=0.2)
    with pytest.raises(fencelock.Unavailable):
        m.acquire(name, 5, wait=0)
    m.close()


def _fails_at_once(m: fencelock.LockManager) -> fencelock.LockError:
    """Acquire with no wait limit must end by itself: a configuration mistake is not retried
    forever (issue 20, item 2). The thread bound only catches a hang."""
    import threading

    caught: list = []

    def run() -> None:
        try:
            m.acquire("m", 5)
        except BaseException as e:  # noqa: BLE001 - reported below
            caught.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(20)
    assert not t.is_alive(), "a configuration mistake was retried forever"
    assert len(caught) == 1 and isinstance(caught[0], fencelock.LockError), caught
    return caught[0]


def test_mutual_tls_mistakes_fail_at_once_without_a_wait_limit(mtls: Tuple[RedisServer, str], certs: pathlib.Path) -> None:
    _, url = mtls
    with fencelock.LockManager(url, tls_ca_file=str(certs / "ca.crt")) as m:
        e = _fails_at_once(m)
        assert isinstance(e, fencelock.Unavailable), e
        assert "TLS handshake failed" in str(e) and "CertificateRequired" in str(e), e


def test_a_plain_url_at_a_tls_port_says_to_use_rediss(tls: Tuple[RedisServer, str]) -> None:
    _, url = tls
    with fencelock.LockManager(url.replace("rediss://", "redis://")) as m:
        e = _fails_at_once(m)
        assert "use a rediss:// URL" in str(e), e
