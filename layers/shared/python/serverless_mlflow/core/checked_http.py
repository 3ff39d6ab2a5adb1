"""HTTP connections whose peer address is checked right after ``connect()``, before a byte is sent.

Checking a URL's host when it is stored (or just before the call) leaves a window: a DNS answer can change between
the check and the connection (rebinding). The only address that matters is the one the socket reached, so the
server's outbound calls to user-chosen hosts (webhook targets, AI gateway ``api_base`` values) go through these
connections. urllib3 comes with botocore, so the layer ships no HTTP library of its own.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable

from urllib3 import HTTPConnectionPool, HTTPSConnectionPool, PoolManager
from urllib3.connection import HTTPConnection, HTTPSConnection

# (host asked for, address reached); raises BlockedAddress to refuse the connection.
PeerCheck = Callable[[str, ipaddress.IPv4Address | ipaddress.IPv6Address], None]


class BlockedAddress(Exception):
    """The connection reached an address it must not: the call fails closed. Not an ``OSError``, so urllib3 lets
    it through unwrapped (never retried, never reported as a network error)."""


def _checked(sock: socket.socket, host: str, check: PeerCheck, label: str) -> socket.socket:
    try:
        ip = ipaddress.ip_address(sock.getpeername()[0])
    except (OSError, ValueError) as error:
        sock.close()
        raise BlockedAddress(f"Could not determine {label} connection peer address: {error}") from error
    try:
        check(host, ip)
    except BaseException:
        sock.close()
        raise
    return sock


def pool_classes(check: PeerCheck, label: str) -> tuple[type[HTTPConnectionPool], type[HTTPSConnectionPool]]:
    """Connection pools (plain, TLS) whose every new connection passes ``check``; ``label`` names the caller in
    the message when the peer cannot be read."""

    class CheckedHTTPConnection(HTTPConnection):
        def _new_conn(self) -> socket.socket:
            return _checked(super()._new_conn(), self.host, check, label)

    class CheckedHTTPSConnection(HTTPSConnection):
        def _new_conn(self) -> socket.socket:
            return _checked(super()._new_conn(), self.host, check, label)

    class CheckedHTTPPool(HTTPConnectionPool):
        ConnectionCls = CheckedHTTPConnection

    class CheckedHTTPSPool(HTTPSConnectionPool):
        ConnectionCls = CheckedHTTPSConnection

    return CheckedHTTPPool, CheckedHTTPSPool


def pool_manager(check: PeerCheck, label: str, **options: object) -> PoolManager:
    """A ``PoolManager`` (keep-alive across calls) over the checked pools."""
    manager = PoolManager(**options)  # type: ignore[arg-type]
    plain, tls = pool_classes(check, label)
    manager.pool_classes_by_scheme = {"http": plain, "https": tls}
    return manager
