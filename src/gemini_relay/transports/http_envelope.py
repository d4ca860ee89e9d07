"""Streamable HTTP: a POSTed JSON-RPC message the SDK would misread gets JSON-RPC's answer first, as on stdio.

The SDK accepts a request whose id is a float, true, null or an object as a notification (202, never answered),
takes NaN for a number, and answers an envelope that is not a request with -32602. Behind the door (only a
request that passed Host, Origin and the token gets here), the body of a POST to /mcp is vetted by rpc_lines: a
bad one is answered with HTTP 400 and -32700 (Parse error) or -32600 (Invalid Request), with its id when readable;
a good one goes on unchanged (minus a leading byte order mark). A body past the size limit is the SDK's (413).
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gemini_relay.log import requests_log, shown
from gemini_relay.transports.rpc_lines import BOM, Refusal, vet


class EnvelopeCheck:
    def __init__(self, app: ASGIApp, path: str, max_body: int) -> None:
        self.app = app
        self._path = path
        self._max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._applies(scope):
            await self.app(scope, receive, send)
            return
        read, body = await _read(receive, self._max_body)
        if body is None:  # too big, or the client left: the SDK answers as it would have
            await self.app(scope, _replay(read, receive), send)
            return
        verdict = vet(body, responses=True)
        if isinstance(verdict, Refusal):
            requests_log.info(
                "Answered an invalid JSON-RPC POST (id %s) with error %d: %s",
                shown(verdict.request_id), verdict.code, shown(verdict.message),
            )  # fmt: skip
            await Response(verdict.wire(), status_code=400, media_type="application/json")(scope, receive, send)
            return
        if body.startswith(BOM):
            read = [{"type": "http.request", "body": body[len(BOM) :], "more_body": False}]
        await self.app(scope, _replay(read, receive), send)

    def _applies(self, scope: Scope) -> bool:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != self._path:
            return False
        headers = Headers(scope=scope)
        if not headers.get("content-type", "").lower().startswith("application/json"):
            return False  # the SDK answers 415
        declared = headers.get("content-length", "")
        return not (declared.isdigit() and int(declared) > self._max_body)


async def _read(receive: Receive, limit: int) -> tuple[list[Message], bytes | None]:
    """The messages read, and the whole body (None when it grew past `limit` or the client disconnected)."""
    read: list[Message] = []
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        read.append(message)
        if message["type"] != "http.request":
            return read, None
        chunk: bytes = message.get("body", b"")
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            return read, None
        if not message.get("more_body", False):
            return read, b"".join(chunks)


def _replay(read: list[Message], receive: Receive) -> Receive:
    pending = list(read)

    async def replayed() -> Message:
        return pending.pop(0) if pending else await receive()

    return replayed
