"""What the HTTP listener lets in: loopback addresses only, the right Host and Origin, and the bearer token if set.

A relay that can run agents with the user's credentials must not be reachable from the network nor from a web
page (DNS rebinding, cross-origin POSTs), so the address is checked before binding and every request at the door.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import socket
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from gemini_relay.errors import ConfigError
from gemini_relay.log import logger, requests_log, shown

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
TOKEN_ENV = "GEMINI_RELAY_HTTP_TOKEN"
REALM = 'Bearer realm="gemini-relay"'


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


def load_token(token_file: Path | None) -> str | None:
    """The bearer token: the file's first line (`--token-file`) wins over GEMINI_RELAY_HTTP_TOKEN; None without."""
    if token_file is None:
        token = os.environ.get(TOKEN_ENV, "").strip()
        return token or None
    try:
        text = token_file.read_text(encoding="utf-8")
        mode = token_file.stat().st_mode
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the token file {token_file}: {exc}") from None
    token = text.strip().splitlines()[0].strip() if text.strip() else ""
    if not token:
        raise ConfigError(f"the token file {token_file} is empty")
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        logger.warning("The token file %s is readable by other users; chmod 600 it", token_file)
    return token


def security_settings(address: Address, port: int) -> TransportSecuritySettings:
    """Host and Origin must name this listener exactly: loopback names, this port (DNS-rebinding protection)."""
    names = {"127.0.0.1", "localhost", "[::1]", address.url_host}
    hosts = [f"{name}:{port}" for name in sorted(names)]
    if port == 80:  # a client omits the default port from Host and Origin
        hosts += sorted(names)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts,
        allowed_origins=[f"http://{host}" for host in hosts],
    )


def page_cookie_name(port: int | None) -> str:
    # Cookies ignore the port: relays on two ports of localhost each need their own name.
    return f"gemini_relay_page_{port}" if port else "gemini_relay_page"


def page_cookie_value(token: str) -> str:
    """What the page cookie holds: derived from the token, so the browser never stores the token itself."""
    return hmac.new(token.encode(), b"gemini-relay page cookie", hashlib.sha256).hexdigest()


class Door:
    """ASGI middleware in front of the MCP app: Host/Origin first (421/403), then the bearer token (401).

    Host and Origin come first so a rebinding page learns nothing from the token check; the SDK checks them again.
    Each refusal is logged with the header escaped and cut short, and a flood of them is rate-limited (log.py).
    A browser cannot send a header to open the page: `/?token=...` (checked in constant time) sets an HttpOnly,
    SameSite=Strict cookie and redirects to `/`; the cookie opens the page's paths (never /mcp).
    """

    def __init__(
        self,
        app: ASGIApp,
        security: TransportSecuritySettings,
        token: str | None,
        *,
        port: int | None = None,
        cookie_paths: Callable[[str], bool] = lambda path: False,
    ) -> None:
        self.app = app
        self._hosts = frozenset(security.allowed_hosts)
        self._origins = frozenset(security.allowed_origins)
        self._token = token
        self._expected = f"Bearer {token}".encode() if token else None
        self._cookie_name = page_cookie_name(port)
        self._cookie = page_cookie_value(token).encode() if token else None
        self._cookie_paths = cookie_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        rejection = self._foreign(request)
        if rejection is not None:
            await rejection(scope, receive, send)
            return
        if self._expected is not None:
            if request.url.path == "/" and "token" in request.query_params:
                await self._exchange(request.query_params["token"])(scope, receive, send)
                return
            if not self._authorized(request):
                requests_log.info(
                    "Refused a request to %s without the right bearer token (401)", shown(request.url.path)
                )
                text = "Unauthorized"
                if self._cookie_paths(request.url.path):
                    text += ": open /?token=<the relay's token> once in this browser (see the README, HTTP page)"
                response = PlainTextResponse(text, status_code=401, headers={"WWW-Authenticate": REALM})
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _foreign(self, request: Request) -> Response | None:
        """421 for a Host, 403 for an Origin that does not name this listener (as the SDK's check answers)."""
        host, origin = request.headers.get("host"), request.headers.get("origin")
        if host not in self._hosts:
            requests_log.info("Refused a request with Host %s (421): not this listener", shown(host))
            return Response("Invalid Host header", status_code=421)
        if origin and origin not in self._origins:
            requests_log.info("Refused a request with Origin %s (403): not this listener", shown(origin))
            return Response("Invalid Origin header", status_code=403)
        return None

    def _exchange(self, presented: str) -> Response:
        """The page's login: a right token becomes the cookie and a redirect to `/` that drops it from the URL."""
        assert self._token is not None and self._cookie is not None
        headers = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}
        if not hmac.compare_digest(presented.encode(), self._token.encode()):
            requests_log.info("Refused a page login with a wrong token (401)")
            return PlainTextResponse("Unauthorized: wrong token", status_code=401, headers=headers)
        response = RedirectResponse("/", status_code=303, headers=headers)
        response.set_cookie(self._cookie_name, self._cookie.decode(), httponly=True, samesite="strict", path="/")
        return response

    def _authorized(self, request: Request) -> bool:
        assert self._expected is not None and self._cookie is not None
        presented = request.headers.get("authorization", "").encode()
        scheme, _, credentials = presented.partition(b" ")
        # The scheme is case-insensitive (RFC 7235); the token is compared in constant time.
        normalized = b"Bearer " + credentials.strip() if scheme.lower() == b"bearer" else presented
        if hmac.compare_digest(normalized, self._expected):
            return True
        if not self._cookie_paths(request.url.path):
            return False
        cookie = request.cookies.get(self._cookie_name, "").encode()
        return hmac.compare_digest(cookie, self._cookie)
