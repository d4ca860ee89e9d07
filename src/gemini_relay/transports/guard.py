"""What the HTTP listener lets in: the right Host and Origin, and the bearer token (the loopback address is
address.py's).

A relay that can run agents with the user's credentials must not be reachable from the network nor from a web
page (DNS rebinding, cross-origin POSTs), so the address is checked before binding and every request at the door.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable

from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from gemini_relay.log import requests_log, shown
from gemini_relay.transports.address import Address

REALM = 'Bearer realm="gemini-relay"'


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


class Door:
    """ASGI middleware in front of the MCP app: Host/Origin first (421/403), then the bearer token (401).

    Host and Origin come first so a rebinding page learns nothing from the token check; the SDK checks them again.
    Each refusal is logged with the header escaped and cut short, and a flood of them is rate-limited (log.py).
    The job page's own files (`is_open`: its HTML, script and style, no data) open without the token, because a
    browser cannot send a header to open a page; its script then presents the token from the URL's fragment as
    the header on every call for data. No cookie is ever set: cookies ignore the port, so every other server on
    127.0.0.1 would receive it.
    """

    def __init__(
        self,
        app: ASGIApp,
        security: TransportSecuritySettings,
        token: str | None,
        *,
        is_open: Callable[[str], bool] = lambda path: False,
        is_page: Callable[[str], bool] = lambda path: False,
    ) -> None:
        self.app = app
        self._hosts = frozenset(security.allowed_hosts)
        self._origins = frozenset(security.allowed_origins)
        self._expected = f"Bearer {token}".encode() if token else None
        self._is_open = is_open
        self._is_page = is_page

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        rejection = self._foreign(request) or self._token_in_query(request)
        if rejection is None and not self._is_open(request.url.path) and not self._authorized(request):
            requests_log.info("Refused a request to %s without the right bearer token (401)", shown(request.url.path))
            text = "Unauthorized"
            if self._is_page(request.url.path):
                text += ": open the page as /#token=<the relay's token> (the URL the relay printed at startup)"
            rejection = PlainTextResponse(text, status_code=401, headers={"WWW-Authenticate": REALM})
        if rejection is not None:
            await rejection(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _foreign(self, request: Request) -> Response | None:
        """421 for a Host, 403 for an Origin that does not name this listener (as the SDK's check answers), and 403
        for a browser's request from another site: a page that sends no Origin still sends `Sec-Fetch-Site`, and
        `same-site` covers every other port of 127.0.0.1 (a site ignores the port)."""
        host, origin = request.headers.get("host"), request.headers.get("origin")
        fetch_site = request.headers.get("sec-fetch-site", "").strip().lower()
        if host not in self._hosts:
            requests_log.info("Refused a request with Host %s (421): not this listener", shown(host))
            return Response("Invalid Host header", status_code=421)
        if origin and origin not in self._origins:
            requests_log.info("Refused a request with Origin %s (403): not this listener", shown(origin))
            return Response("Invalid Origin header", status_code=403)
        if fetch_site in ("cross-site", "same-site"):
            requests_log.info("Refused a request with Sec-Fetch-Site %s (403): another site's page", shown(fetch_site))
            return Response("Cross-site request refused", status_code=403)
        return None

    def _token_in_query(self, request: Request) -> Response | None:
        """The old page login, `/?token=`: a query string reaches logs and history, so it is refused, saying why."""
        if request.url.path != "/" or "token" not in request.query_params:
            return None
        requests_log.info("Refused a page URL with the token in its query string (400)")
        text = "The token goes after '#', where it never leaves the browser: open /#token=<the relay's token>"
        headers = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}
        return PlainTextResponse(text, status_code=400, headers=headers)

    def _authorized(self, request: Request) -> bool:
        if self._expected is None:
            return True
        presented = request.headers.get("authorization", "").encode()
        scheme, _, credentials = presented.partition(b" ")
        # The scheme is case-insensitive (RFC 7235); the token is compared in constant time.
        normalized = b"Bearer " + credentials.strip() if scheme.lower() == b"bearer" else presented
        return hmac.compare_digest(normalized, self._expected)
