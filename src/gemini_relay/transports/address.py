"""Where the HTTP listener may bind: `--http HOST:PORT` parsed, and refused unless every address it names is loopback.

Apart from the door (guard.py) so that `setup`, which writes the HTTP entry's URL, checks it without loading the
web stack (starlette, the SDK's transport).
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass

from gemini_relay.errors import ConfigError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


@dataclass(frozen=True)
class Address:
    host: str  # as given: an IP literal (IPv6 without brackets) or a name that resolves to loopback only
    port: int

    @property
    def url_host(self) -> str:
        return f"[{self.host}]" if ":" in self.host else self.host


def parse_address(raw: str | None) -> Address:
    """`HOST:PORT`, `[::1]:PORT`, `HOST` or `:PORT`; the missing half takes the default (127.0.0.1:8765)."""
    if not raw:
        return Address(DEFAULT_HOST, DEFAULT_PORT)
    host, port_text = raw, ""
    if raw.startswith("["):
        end = raw.find("]")
        if end < 0:
            raise ConfigError(f"--http {raw!r}: missing ']' after the IPv6 address")
        host, rest = raw[1:end], raw[end + 1 :]
        if rest and not rest.startswith(":"):
            raise ConfigError(f"--http {raw!r}: expected [ADDRESS]:PORT")
        port_text = rest[1:]
    elif raw.count(":") == 1:
        host, port_text = raw.split(":")
    elif raw.count(":") > 1:
        raise ConfigError(f"--http {raw!r}: write an IPv6 address in brackets, e.g. [::1]:{DEFAULT_PORT}")
    port = DEFAULT_PORT
    if port_text:
        if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
            raise ConfigError(f"--http {raw!r}: the port must be a number from 0 to 65535")
        port = int(port_text)
    return Address(host or DEFAULT_HOST, port)


def require_loopback(address: Address) -> None:
    """Refuse any address that is not loopback: a wildcard, a LAN address, or a name resolving elsewhere."""
    try:
        ip = ipaddress.ip_address(address.host)
    except ValueError:
        ip = None
    if ip is not None:
        if ip.is_unspecified:
            raise ConfigError(f"refusing to listen on {address.url_host}: it means every interface; use 127.0.0.1")
        if not ip.is_loopback:
            raise ConfigError(f"refusing to listen on {address.url_host}: not a loopback address; use 127.0.0.1")
        return
    name = address.url_host
    try:
        infos = socket.getaddrinfo(address.host, address.port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ConfigError(f"refusing to listen on {name}: the name does not resolve ({exc.strerror})") from None
    outside = sorted({str(info[4][0]) for info in infos if not ipaddress.ip_address(info[4][0]).is_loopback})
    if outside:
        where = ", ".join(outside)
        raise ConfigError(f"refusing to listen on {name}: it resolves to {where}, not loopback; use 127.0.0.1")
