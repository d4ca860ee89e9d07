"""A fake Anthropic Messages API on loopback, standing in for Claude Code's model (ecosystem-2026.md, "Driving the
real Claude Code end to end, offline").

`POST /v1/messages` (streamed or not): a request whose last user message holds a `tool_result` is recorded in
`tool_results` (that block is exactly what the model would see) and answered with a short text and `end_turn`; a
request offering the tool named by `call` is answered with a `tool_use` of it with `arguments`; any other request
(Claude Code's own side calls) gets a short text. Every request body is kept in `requests`. A request that does not
offer the tool yet while Claude Code offers `WaitForMcpServers` (its servers still connecting, as a plugin's are in
`-p`) is answered as a model would: a call of that tool (at most MAX_WAITS), whose result is not recorded.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "claude-sonnet-4-5"  # a model Claude Code knows (an unknown one takes another code path)
WAIT_TOOL = "WaitForMcpServers"  # Claude Code's tool for waiting on servers still connecting
MAX_WAITS = 5
REMINDER = "<system-reminder>"  # Claude Code appends one of its own to every tool result


@dataclass
class FakeMessagesApi:
    call: str  # the tool to call, as Claude Code names it: mcp__<server>__<tool>; "" never calls one
    arguments: dict[str, Any]
    requests: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    tool_results: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    base_url: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _waits: set[str] = field(default_factory=set[str])  # ids of the WaitForMcpServers calls made

    def answer(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The content blocks of the reply to `body` (and what it shows is recorded)."""
        with self._lock:
            self.requests.append(body)
            result = _last_tool_result(body)
            if result is not None and result.get("tool_use_id") not in self._waits:
                self.tool_results.append(result)
                return [{"type": "text", "text": "Read it."}]
            offered = {tool.get("name") for tool in body.get("tools", [])}
            if self.call in offered:
                return [{"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:20]}", "name": self.call}]
            if self.call and WAIT_TOOL in offered and len(self._waits) < MAX_WAITS:  # "Still connecting (try again …)"
                self._waits.add(ident := f"toolu_{uuid.uuid4().hex[:20]}")
                return [{"type": "tool_use", "id": ident, "name": WAIT_TOOL, "input": {}}]
            return [{"type": "text", "text": "ok"}]

    def result_text(self) -> str:
        """The text of the one tool_result the model was given (Claude Code's own reminder blocks left out)."""
        assert len(self.tool_results) == 1, self.tool_results
        content = self.tool_results[0].get("content")
        texts = [content] if isinstance(content, str) else [b["text"] for b in content or [] if b.get("type") == "text"]
        return "\n".join(t.split(REMINDER, 1)[0].rstrip() for t in texts if not t.lstrip().startswith(REMINDER))


def _last_tool_result(body: dict[str, Any]) -> dict[str, Any] | None:
    messages = body.get("messages") or []
    if not messages or messages[-1].get("role") != "user" or not isinstance(messages[-1].get("content"), list):
        return None
    return next((b for b in messages[-1]["content"] if b.get("type") == "tool_result"), None)


def _events(blocks: list[dict[str, Any]], arguments: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The streamed form of a reply of `blocks`: message_start … message_stop."""
    message: dict[str, Any] = {
        "id": f"msg_{uuid.uuid4().hex[:20]}",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    yield "message_start", {"type": "message_start", "message": message}
    for index, block in enumerate(blocks):
        if block["type"] == "tool_use":
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block.get("input", arguments))}
        else:
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": start}
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    ending: dict[str, Any] = {"stop_reason": stop, "stop_sequence": None}
    done = {"type": "message_delta", "delta": ending, "usage": {"output_tokens": 5}}
    yield "message_delta", done
    yield "message_stop", {"type": "message_stop"}


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's signature
        return

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            body = {}
        if not self.path.startswith("/v1/messages") or self.path.startswith("/v1/messages/count_tokens"):
            self._json({"input_tokens": 10} if "count_tokens" in self.path else {})
            return
        fake = self.server.fake
        blocks = fake.answer(body)
        if not body.get("stream"):
            content = [{"input": fake.arguments, **b} if b["type"] == "tool_use" else b for b in blocks]
            stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
            usage = {"input_tokens": 10, "output_tokens": 5}
            reply = {"id": "msg_x", "type": "message", "role": "assistant", "model": MODEL, "content": content}
            self._json({**reply, "stop_reason": stop, "stop_sequence": None, "usage": usage})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        for name, data in _events(blocks, fake.arguments):
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()

    def do_GET(self) -> None:
        self._json({})

    def _json(self, data: dict[str, Any]) -> None:
        raw = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, fake: FakeMessagesApi) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.fake = fake


@contextmanager
def fake_messages_api(call: str, arguments: dict[str, Any]) -> Iterator[FakeMessagesApi]:
    """A FakeMessagesApi serving on a free loopback port for the block."""
    fake = FakeMessagesApi(call, arguments)
    server = _Server(fake)
    fake.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="fake-messages-api", daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
