"""``checked_http``: the peer address of a new connection is judged after ``connect()`` and before a byte is sent
(what stops DNS rebinding for webhook targets and AI gateway upstreams)."""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Iterator

import pytest

from serverless_mlflow.core import checked_http


@pytest.fixture
def listener() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP server on 127.0.0.1 that records whatever bytes each connection sends."""
    received: list[bytes] = []
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(10)

    def accept() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                data = _read_request(conn)
                received.append(data)
                if data:
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], received
    server.close()
    thread.join(timeout=10)


def _read_request(conn: socket.socket) -> bytes:
    """Headers, then as many body bytes as they announce (what a connection sent before it closed)."""
    data = b""
    try:
        while b"\r\n\r\n" not in data and (chunk := conn.recv(65536)):
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0)
        while len(body) < length and (chunk := conn.recv(65536)):
            body += chunk
        return head + b"\r\n\r\n" + body if head else data
    except OSError:
        return data


def _refuse_loopback(host: str, ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> None:
    if ip.is_loopback:
        raise checked_http.BlockedAddress(f"{host} reached {ip}")


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_refused_peer_gets_no_request(listener: tuple[int, list[bytes]], host: str) -> None:
    port, received = listener
    manager = checked_http.pool_manager(_refuse_loopback, "test", retries=False)
    with pytest.raises(checked_http.BlockedAddress, match=f"^{host} reached 127.0.0.1$"):
        manager.request("POST", f"http://{host}:{port}/hook", body=b"secret payload", timeout=5)
    assert b"secret payload" not in b"".join(received)


def test_an_accepted_peer_is_called(listener: tuple[int, list[bytes]]) -> None:
    port, received = listener
    seen: list[tuple[str, str]] = []
    manager = checked_http.pool_manager(lambda host, ip: seen.append((host, str(ip))), "test", retries=False)
    response = manager.request("POST", f"http://127.0.0.1:{port}/hook", body=b"payload", timeout=5)
    assert response.status == 200 and response.data == b"ok"
    assert seen == [("127.0.0.1", "127.0.0.1")]
    assert any(b"payload" in data for data in received)
