"""A local fake of the OpenAI Responses API, as the Codex CLI 0.169.0 speaks it (stdlib only).

``POST /v1/responses`` (streaming) answers with the SSE events Codex reads: ``response.created``,
``response.output_item.added`` and ``response.output_item.done`` for one output item, and ``response.completed``
with ``usage``. Every request body is kept (:attr:`FakeResponsesApi.requests`): what Codex's model would have seen.

What the model does is scripted: request number n is answered with ``turns[n]`` when the test gave one (a
:class:`Call` becomes a ``function_call`` item, a string an assistant message), else with :data:`FINAL_TEXT`. Codex
runs a tool call and sends its result back as a ``function_call_output`` item of the next request's ``input``.
Anything else (another path or method) answers 404 and is logged too.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

FINAL_TEXT = "done"
USAGE = {
    "input_tokens": 10,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 5,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 15,
}


@dataclass(frozen=True)
class Call:
    """A tool call the model makes: Codex's name for the tool and, for an MCP tool, its namespace."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict[str, Any])
    namespace: str | None = None
    call_id: str = "call_1"

    def item(self) -> dict[str, Any]:
        item: dict[str, Any] = {
            "type": "function_call",
            "id": f"fc_{self.call_id}",
            "call_id": self.call_id,
            "status": "completed",
            "name": self.name,
            "arguments": json.dumps(self.arguments),
        }
        if self.namespace is not None:
            item["namespace"] = self.namespace
        return item


@dataclass
class ModelRequest:
    """One request Codex sent: its path and JSON body."""

    path: str
    body: dict[str, Any]

    def namespaces(self) -> dict[str, list[str]]:
        """The namespace tools (Codex's MCP servers) and the names of their tools."""
        return {
            tool["name"]: [inner["name"] for inner in tool.get("tools", [])]
            for tool in self.body.get("tools", [])
            if tool.get("type") == "namespace"
        }

    def namespace(self, name: str) -> dict[str, Any] | None:
        found = [t for t in self.body.get("tools", []) if t.get("type") == "namespace" and t.get("name") == name]
        return found[0] if found else None

    def output_of(self, call_id: str) -> str | None:
        """What the model receives as the result of the call `call_id` (None: not in this request)."""
        for item in self.body.get("input", []):
            if item.get("type") == "function_call_output" and item.get("call_id") == call_id:
                output = item.get("output")
                return output if isinstance(output, str) else json.dumps(output)
        return None


class FakeResponsesApi:
    """The fake on 127.0.0.1 with an OS-chosen port; a context manager that serves in a thread."""

    def __init__(self, turns: list[Call | str] | None = None) -> None:
        self.turns: list[Call | str] = list(turns or [])
        self.requests: list[ModelRequest] = []
        self.other: list[str] = []  # requests to other paths: "<method> <path>"
        self._changed = threading.Condition()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-responses", daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}/v1"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)

    def wait_for(self, count: int, timeout: float) -> list[ModelRequest]:
        """The requests once at least `count` have arrived (fewer when `timeout` passes first)."""
        with self._changed:
            self._changed.wait_for(lambda: len(self.requests) >= count, timeout)
            return list(self.requests)

    def _answer(self, path: str, body: dict[str, Any]) -> bytes:
        with self._changed:
            index = len(self.requests)
            self.requests.append(ModelRequest(path, body))
            self._changed.notify_all()
        turn = self.turns[index] if index < len(self.turns) else FINAL_TEXT
        item = turn.item() if isinstance(turn, Call) else _message(turn, index)
        response_id = f"resp_{index}"
        events: list[dict[str, Any]] = [
            {"type": "response.created", "response": {"id": response_id}},
            {"type": "response.output_item.added", "output_index": 0, "item": item},
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            {"type": "response.completed", "response": {"id": response_id, "usage": USAGE}},
        ]
        return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode("utf-8")

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
                return

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                self._missing()

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path.split("?")[0] != "/v1/responses":
                    self._missing()
                    return
                payload = api._answer(self.path, json.loads(raw))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _missing(self) -> None:
                api.other.append(f"{self.command} {self.path}")
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

        return Handler


def _message(text: str, index: int) -> dict[str, Any]:
    return {
        "type": "message",
        "id": f"msg_{index}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
