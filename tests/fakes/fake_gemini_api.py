"""A local fake of the Gemini REST API for tests and benchmarks (stdlib only).

It serves the two endpoints the Gemini CLI 0.61.0 calls with API-key auth and the ones google-genai uses:

- ``POST /v1beta/models/{model}:streamGenerateContent?alt=sse``: SSE, one ``data: <json>\\r\\n\\r\\n`` event per chunk,
  sent with HTTP/1.1 chunked transfer encoding so connections stay alive;
- ``POST /v1beta/models/{model}:generateContent``: the same answer merged into one JSON object;
- ``POST /v1beta/models/{model}:countTokens`` (:func:`count_tokens`: characters / 3), ``GET /v1beta/models`` and
  ``GET /v1beta/models/{model}``;
- ``POST /_control`` ``{"scenario": "<name>", "arg": ...}`` sets a sticky scenario, ``{"scenario": null}`` clears it;
  ``GET /_control`` returns the current one.

Requests are classified before a scenario is applied:

- ``title``: a user text contains the session-title prompt ("Summarize the user's primary intent") -> a short title;
- ``router`` / ``schema``: ``generationConfig.responseMimeType == "application/json"`` plus ``responseJsonSchema`` or
  ``responseSchema`` -> schema-shaped JSON (the router gets exactly :data:`ROUTER_ANSWER`, other schemas a generated
  instance);
- ``web_search``: ``tools`` holds ``googleSearch`` (the CLI's google_web_search tool calling the model) -> a short
  summary with ``groundingMetadata`` naming :data:`SEARCH_SOURCES` (the CLI appends them as ``Sources:``);
- ``main``: the body carries ``tools`` (a CLI agent turn); ``plain``: anything else (google-genai calls).

Only ``main`` and ``plain`` requests get scenarios. The scenario comes from, in order: a marker in the latest user text
(``[[fake:<name>]]`` or ``[[fake:<name>:<arg>]]``), the sticky mode, the default echo. The latest user text is the last
text part, not starting with ``<session_context>``, of the last user content that has such a part. Unknown scenario
names or bad arguments answer HTTP 400 ``INVALID_ARGUMENT`` with a message that starts with ``fake_gemini_api:``.

Scenarios (``<arg>`` defaults in brackets; text answers stream in the chunks named, the last one with STOP + usage):

- default: ``Hello from fake Gemini! You said: <latest user text>`` (see :func:`echo_text`), 2 chunks (20 chars + rest)
- ``echo:<text>``: exactly ``<text>``, 1 chunk (the text cannot contain ``]]``)
- ``slow:<seconds>`` [0.5]: :data:`SLOW_CHUNKS`, that many seconds between the 5 chunks
- ``stall``: 200, one chunk (:data:`STALL_TEXT`), then nothing until stop() closes the connection
- ``cut:<how>`` [end]: 200, one chunk (:data:`CUT_TEXT`) without a finish reason, then ``end``: the body ends (its
  closing chunk), as the API's stream sometimes ends early; ``reset``: the connection is reset (TCP RST, no closing
  chunk), a network path cut mid-answer
- ``hang``: reads the request, never sends headers, until stop()
- ``gate``: reads the request, then waits for :attr:`FakeGeminiApi.gate` (or stop()) before :data:`GATE_TEXT`: a test
  holds a run open (and its slot) for exactly as long as it needs, with no clock
- ``tool_call:<path>`` [hello.txt]: ``functionCall read_file {"file_path": <path>}``; when the last content is a
  ``functionResponse`` turn: :data:`TOOL_DONE_TEXT`
- ``write_file:<path>`` [written.txt]: ``functionCall write_file``, then :data:`TOOL_DONE_TEXT` (plan mode denies it)
- ``shell:<command>`` [echo shell-ran]: ``functionCall run_shell_command {"command": <command>}`` (ACP default mode
  asks permission for it); when the last content is a ``functionResponse`` turn: ``Shell result: `` followed by that
  response as JSON (the command's output when it ran, the refusal when it did not)
- ``loop``: :data:`LOOP_LINE` (one sentence) in :data:`LOOP_REPEATS` chunks, then STOP: a model chanting the same
  line, what the CLI's loop detection stops (it asks again once with a "Potential loop detected" message, which
  has no marker: set ``loop`` as the sticky scenario to have that answer loop too)
- ``thought``: a ``thought: true`` part (:data:`THOUGHT_TEXT`), then :data:`THOUGHT_ANSWER_TEXT`
- ``empty``: one ``""`` text part; ``empty_after_tool``: ``functionCall read_file {"file_path": "hello.txt"}``,
  then, after the ``functionResponse`` turn, one ``""`` text part; ``safety``: no content, ``finishReason: SAFETY``
- ``max_tokens``: :data:`MAX_TOKENS_TEXT` ending with ``finishReason: MAX_TOKENS`` (the output limit cut it off)
- ``blocked_prompt``: no candidates, ``promptFeedback.blockReason: SAFETY`` (the API refused the prompt itself)
- ``nonjson``: 200 with body ``this is not json``
- ``error:<status>`` [500]: Google error body for 400/401/403/404/429/500/503/504 (any 400-599 accepted)
- ``bad_key``: 400 :data:`INVALID_KEY_ERROR`, what the API answers a key it does not know (also: ``reject_key``)
- ``quota``: 429 RESOURCE_EXHAUSTED; ``quota_daily``: + QuotaFailure PerDay detail; ``quota_retry``: + RetryInfo 1s
- ``big:<kb>[:<chars>]`` [10, 1024]: :func:`big_text` in chunks of that many characters
- ``unicode``: :data:`UNICODE_TEXT`, one chunk per line
- ``json:<JSON value>``: exactly that text in 2 chunks (the argument is parsed as one JSON value, so it may hold ``]]``)
- ``history``: ``turns=<number of user contents without a functionResponse part>``
- ``image``: a text part (:data:`IMAGE_TEXT`) and an ``inlineData`` image/png part holding :data:`TINY_PNG`
- ``search:<query>`` [fake query]: ``functionCall google_web_search {"query": <query>}``; when the last content is a
  ``functionResponse`` turn: :data:`SEARCH_ANSWER_TEXT` followed by ``Sources:`` and every URL in that response
- ``json_turns:<JSON array>``: answer number n (n = user turns, see ``history``) is element n of the array, the last
  one repeating; a string element is sent verbatim, anything else as JSON (first-bad-then-good repair turns)
- ``quota_for:<model>`` / ``unavailable_for:<model>``: 429 RESOURCE_EXHAUSTED / 503 UNAVAILABLE when the request is for
  ``<model>``, the default echo for any other model (a capacity failure that a fallback model escapes)
- ``by_model:<JSON object>``: per model (the request's): a string value answers that text, an integer fails with that
  HTTP status as ``error:<status>`` does; a model not named gets the default echo (a consensus panel). Set as the
  sticky scenario, it answers a ``schema`` request for a model it names too (a consensus judge asked for JSON)
- ``quota_free``: 429 RESOURCE_EXHAUSTED as a free-tier key gets it from image models (every quota ``limit: 0``)
- ``image_safety``: no content, ``finishReason: IMAGE_SAFETY`` and a ``finishMessage``; ``prompt_blocked``: no
  candidates, ``promptFeedback.blockReason: PROHIBITED_CONTENT``

Image output: a ``generateContent`` request whose ``generationConfig.responseModalities`` holds ``IMAGE`` and that
names no scenario gets the echo text and an ``inlineData`` :data:`TINY_PNG` part, and counts one generation in
:attr:`FakeGeminiApi.media`. A ``fileData`` part naming an unknown or expired ``files/<id>`` answers 403
PERMISSION_DENIED. The Files API, Veo operations, the Interactions API and ``/_control/generations`` are answered by
``fake_gemini_media`` (and ``fake_gemini_interactions``), whose docstring is their contract; their requests are
logged with kind ``media_<route>``.

Keys: every key is accepted, except those given to :meth:`FakeGeminiApi.reject_key`: a request carrying one (in
``x-goog-api-key``, ``Authorization: Bearer`` or ``?key=``), on any route but ``/_control``, gets what the real API
answers a bad key: 400 ``INVALID_ARGUMENT`` "API key not valid. Please pass a valid API key." with an ``ErrorInfo``
detail of reason ``API_KEY_INVALID`` (see :data:`INVALID_KEY_ERROR`). A key given to :meth:`FakeGeminiApi.deny_key`
is known but may not use the models (all, or those named): its ``generateContent``, ``streamGenerateContent`` and
``countTokens`` requests for them get 403 ``PERMISSION_DENIED`` (:data:`PERMISSION_DENIED_ERROR`, logged with kind
``denied``) — the same permission guards a count and a generation — while model listings still answer.

Every successful answer ends with ``finishReason`` (``STOP`` unless the scenario says otherwise) and the fixed
:data:`USAGE` (prompt 12, candidates 8, thoughts 3, total 23), whatever the text length.

Run as a script (``python tests/fakes/fake_gemini_api.py [--port N] [--scenario NAME [--arg ARG]]``) it prints
``PORT=<n>`` and serves until SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import re
import signal
import socket
import struct
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from socketserver import TCPServer
from types import FrameType, TracebackType
from typing import Any, Final, Self
from urllib.parse import urlsplit

try:
    from tests.fakes.fake_gemini_media import MediaRequest, MediaState, file_denied_message, free_tier_quota_error
except ModuleNotFoundError:  # run as a script: put the repository root on sys.path for the media modules
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[2]))
    from tests.fakes.fake_gemini_media import MediaRequest, MediaState, file_denied_message, free_tier_quota_error

__all__ = [
    "QuietHandler",
    "DEFAULT_SLOW_DELAY",
    "CHARS_PER_COUNTED_TOKEN",
    "ECHO_LIMIT",
    "ECHO_PREFIX",
    "IMAGE_TEXT",
    "MAX_TOKENS_TEXT",
    "PERMISSION_DENIED_ERROR",
    "ROUTER_ANSWER",
    "SCENARIOS",
    "SEARCH_ANSWER_TEXT",
    "SEARCH_SOURCES",
    "SEARCH_SUMMARY_TEXT",
    "SLOW_CHUNKS",
    "STALL_TEXT",
    "GATE_TEXT",
    "CUT_TEXT",
    "LOOP_LINE",
    "LOOP_REPEATS",
    "THOUGHT_ANSWER_TEXT",
    "THOUGHT_TEXT",
    "TINY_PNG",
    "TITLE_TEXT",
    "TOOL_DONE_TEXT",
    "UNICODE_TEXT",
    "USAGE",
    "FakeGeminiApi",
    "LoggedRequest",
    "ScenarioError",
    "big_text",
    "count_tokens",
    "echo_text",
    "iter_sse_events",
    "latest_user_text",
    "main",
    "parse_marker",
]

ECHO_PREFIX: Final = "Hello from fake Gemini! You said: "
CHARS_PER_COUNTED_TOKEN: Final = 3
"""``countTokens`` counts three characters a token (the relay's estimate is four)."""
ECHO_LIMIT: Final = 2000
"""Prompts longer than this are echoed as their first ``ECHO_LIMIT`` characters followed by ``…``."""

USAGE: Final[dict[str, Any]] = {
    "promptTokenCount": 12,
    "candidatesTokenCount": 8,
    "thoughtsTokenCount": 3,
    "totalTokenCount": 23,
    "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 12}],
}
ROUTER_ANSWER: Final[dict[str, Any]] = {"complexity_reasoning": "simple", "complexity_score": 1}
TITLE_TEXT: Final = "Fake session title"
TOOL_DONE_TEXT: Final = "Read it."
SHELL_RESULT_PREFIX: Final = "Shell result: "
THOUGHT_TEXT: Final = "**Considering the request** The user wants a short answer."
THOUGHT_ANSWER_TEXT: Final = "Answer after thinking."
STALL_TEXT: Final = "Partial answer before the stall"
GATE_TEXT: Final = "Answered once the gate opened"
CUT_TEXT: Final = "Partial answer before the connection was cut"
LOOP_LINE: Final = "I will check the file again to be completely sure. "
LOOP_REPEATS: Final = 20
MAX_TOKENS_TEXT: Final = "An answer that the output token limit cut"
SLOW_CHUNKS: Final = (*(f"slow chunk {i} of 5. " for i in range(1, 5)), "slow chunk 5 of 5.")
DEFAULT_SLOW_DELAY: Final = 0.5
IMAGE_TEXT: Final = "Here is a tiny PNG."
SEARCH_SOURCES: Final = (
    ("Fake source one", "https://example.com/fake-source-1"),
    ("Fake source two", "https://docs.example.org/guide/fake-source-2"),
)
SEARCH_SUMMARY_TEXT: Final = "Fake web results say the answer is 42."
SEARCH_ANSWER_TEXT: Final = "Grounded answer: it is 42 [1][2]."
UNICODE_TEXT: Final = (
    "Unicode round trip: caf\u00e9 na\u00efve \u2014 \u201cquotes\u201d\n"
    "Emoji: \U0001f44b\U0001f30d\U0001f680 \U0001f469\u200d\U0001f4bb \U0001f1ef\U0001f1f5 \U0001f44d\U0001f3fd\n"
    "CJK: \u4f60\u597d\u4e16\u754c \u3053\u3093\u306b\u3061\u306f \ud55c\uad6d\uc5b4\n"
    "RTL: \u05e9\u05dc\u05d5\u05dd \u0645\u0631\u062d\u0628\u0627\n"
    "Combining: e\u0301 n\u0303 a\u030a Z\u0351\u0357\n"
    "Math: \u2211 \u222b \u221a \u221e \u2260 \u2264"
)

_TITLE_PROMPT = "Summarize the user's primary intent"
_SESSION_CONTEXT = "<session_context>"
_MARKER_START = re.compile(r"\[\[fake:([A-Za-z_]+)")
_URL = re.compile(r"https?://[^\s()\\\"'<>\]]+")
INVALID_KEY_ERROR: Final[dict[str, Any]] = {
    "code": 400,
    "message": "API key not valid. Please pass a valid API key.",
    "status": "INVALID_ARGUMENT",
    "details": [
        {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "API_KEY_INVALID",
            "domain": "googleapis.com",
            "metadata": {"service": "generativelanguage.googleapis.com"},
        }
    ],
}
"""The error body the real Gemini API answers a request with an invalid key (HTTP 400)."""
PERMISSION_DENIED_ERROR: Final[dict[str, Any]] = {
    "code": 403,
    "message": "The caller does not have permission",
    "status": "PERMISSION_DENIED",
}
"""What the real API answers a known key that may not call a model (HTTP 403); listings still work for it."""
_API_PATH = re.compile(r"^/(v1|v1beta|v1alpha)/models/([^/:]+)(?::([A-Za-z]+))?$")
_MODELS_PATH = re.compile(r"^/(v1|v1beta|v1alpha)/models/?$")
_ECHO_FIRST_CHUNK = 20
_BIG_CHUNK = 1024
_BIG_MAX_KB = 64 * 1024
_STOP_JOIN_TIMEOUT = 2.0
"""Upper bound for stop() to wait on the serve loop and on connection threads."""
_POLL_INTERVAL = 0.05
"""serve_forever() poll interval; bounds how long stop() waits for the accept loop."""

_ERRORS: Final[dict[int, tuple[str, str]]] = {
    400: ("INVALID_ARGUMENT", "Request contains an invalid argument."),
    401: ("UNAUTHENTICATED", "Request had invalid authentication credentials."),
    403: (
        "PERMISSION_DENIED",
        "Method doesn't allow unregistered callers (callers without established identity). "
        "Please use API Key or other form of API consumer identity to call this API.",
    ),
    404: (
        "NOT_FOUND",
        "models/{model} is not found for API version {version}, or is not supported for generateContent. "
        "Call ListModels to see the list of available models and their supported methods.",
    ),
    429: ("RESOURCE_EXHAUSTED", "You exceeded your current quota, please check your plan and billing details."),
    500: (
        "INTERNAL",
        "An internal error has occurred. Please retry or report in "
        "https://developers.generativeai.google/guide/troubleshooting",
    ),
    503: ("UNAVAILABLE", "The model is overloaded. Please try again later."),
    504: ("DEADLINE_EXCEEDED", "The request timed out. Please try again."),
}

_MODELS: Final = ("gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-image", "gemini-3.5-flash-lite")

_WORDS: Final = (
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
    "november",
    "oscar",
    "papa",
    "quebec",
    "romeo",
    "sierra",
    "tango",
    "uniform",
    "victor",
    "whiskey",
    "xray",
    "yankee",
    "zulu",
    "stream",
    "chunk",
    "relay",
    "gemini",
    "fake",
    "token",
)


def _make_png(width: int, height: int, rgba: tuple[int, int, int, int]) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    row = b"\x00" + bytes(rgba) * width
    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * height, 9))
        + chunk(b"IEND", b"")
    )


TINY_PNG: Final = _make_png(2, 2, (255, 0, 0, 255))
"""A valid 2x2 red RGBA PNG, sent base64-encoded by the ``image`` scenario."""


def big_text(kb: int) -> str:
    """Return exactly the text of scenario ``big:<kb>``: ``kb * 1024`` ASCII characters of varied numbered lines."""
    size = kb * 1024
    lines: list[str] = []
    total = 0
    i = 0
    while total < size:
        words = " ".join(_WORDS[(i * 7 + j * j * 3 + j) % len(_WORDS)] for j in range(2 + i % 11))
        line = f"{i:06d} {words} #{(i * 2654435761) % 1000003:07d}\n"
        lines.append(line)
        total += len(line)
        i += 1
    return "".join(lines)[:size]


def echo_text(prompt: str) -> str:
    """Return the default answer for a latest user text ``prompt``."""
    if len(prompt) > ECHO_LIMIT:
        prompt = prompt[:ECHO_LIMIT] + "\u2026"
    return ECHO_PREFIX + prompt


@dataclass(frozen=True)
class LoggedRequest:
    """One request the fake received (control requests are not logged).

    ``headers`` keys are lower-cased. ``body`` is the parsed JSON (``None`` when empty or not JSON).
    ``kind`` is ``main``, ``plain``, ``router``, ``schema``, ``title``, ``count_tokens``, ``models``,
    ``rejected_key`` or ``unknown``.
    ``scenario`` is the scenario applied to ``main``/``plain`` requests (``default`` for the echo, ``invalid`` for a
    malformed marker), ``arg`` its argument; both are ``None`` for other kinds.
    """

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    kind: str
    model: str | None = None
    scenario: str | None = None
    arg: str | None = None
    at: float = field(default_factory=time.monotonic)


class ScenarioError(ValueError):
    """An unknown scenario name, a malformed marker or a bad scenario argument."""


@dataclass(frozen=True)
class _Plan:
    """What to answer: either ``chunks`` (GenerateContentResponse objects) or a raw ``body`` with ``status``."""

    status: int = 200
    chunks: tuple[dict[str, Any], ...] = ()
    body: bytes | None = None
    content_type: str = "application/json; charset=UTF-8"
    delay: float = 0.0
    stall: bool = False
    hang: bool = False
    gate: bool = False
    reset: bool = False  # after the chunks, reset the connection (no closing chunk)


# ---------------------------------------------------------------------------------------------------------------------
# Request inspection


def _user_contents(body: dict[str, Any]) -> list[dict[str, Any]]:
    contents = body.get("contents")
    if not isinstance(contents, list):
        return []
    return [c for c in contents if isinstance(c, dict) and c.get("role", "user") == "user"]


def _parts(content: dict[str, Any]) -> list[dict[str, Any]]:
    parts = content.get("parts")
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def _prompt_texts(content: dict[str, Any]) -> list[str]:
    texts = [p["text"] for p in _parts(content) if isinstance(p.get("text"), str)]
    return [t for t in texts if not t.lstrip().startswith(_SESSION_CONTEXT)]


def count_tokens(body: dict[str, Any]) -> int:
    """What ``countTokens`` answers: every text part's characters / :data:`CHARS_PER_COUNTED_TOKEN`, rounded up, so a
    test tells the API's count from the relay's 4-characters-a-token estimate."""
    contents = body.get("contents")
    items = contents if isinstance(contents, list) else []
    chars = sum(
        len(p["text"]) for c in items if isinstance(c, dict) for p in _parts(c) if isinstance(p.get("text"), str)
    )
    return -(-chars // CHARS_PER_COUNTED_TOKEN)


def latest_user_text(body: dict[str, Any]) -> str:
    """Return the last non-``<session_context>`` text part of the last user content that has one ("" if none)."""
    for content in reversed(_user_contents(body)):
        texts = _prompt_texts(content)
        if texts:
            return texts[-1]
    return ""


def _is_function_response(content: dict[str, Any]) -> bool:
    return any("functionResponse" in p for p in _parts(content))


def _last_is_function_response(body: dict[str, Any]) -> bool:
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents or not isinstance(contents[-1], dict):
        return False
    return _is_function_response(contents[-1])


def _response_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    config = body.get("generationConfig")
    if not isinstance(config, dict) or config.get("responseMimeType") != "application/json":
        return None
    schema = config.get("responseJsonSchema", config.get("responseSchema"))
    return schema if isinstance(schema, dict) else None


def _is_web_search(body: dict[str, Any]) -> bool:
    tools = body.get("tools")
    if not isinstance(tools, list):
        return False
    return any(isinstance(t, dict) and "googleSearch" in t for t in tools)


def _classify(body: Any) -> str:
    if not isinstance(body, dict):
        return "plain"
    if any(_TITLE_PROMPT in t for c in _user_contents(body) for t in _prompt_texts(c)):
        return "title"
    if _is_web_search(body):
        return "web_search"
    schema = _response_schema(body)
    if schema is not None:
        props = schema.get("properties")
        return "router" if isinstance(props, dict) and "complexity_score" in props else "schema"
    return "main" if body.get("tools") else "plain"


def parse_marker(text: str) -> tuple[str, str | None] | None:
    """Find the first ``[[fake:<name>]]`` / ``[[fake:<name>:<arg>]]`` marker in ``text``.

    The argument runs to the next ``]]``, except for ``json`` whose argument is one JSON value (so it may contain
    ``]]``). Raises ``ScenarioError`` for a malformed marker.
    """
    match = _MARKER_START.search(text)
    if match is None:
        return None
    name, pos = match.group(1), match.end()
    if text.startswith("]]", pos):
        return name, None
    if not text.startswith(":", pos):
        raise ScenarioError(f"malformed marker at {text[match.start() : pos + 10]!r}")
    pos += 1
    if name == "json":
        try:
            _, end = json.JSONDecoder().raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise ScenarioError(f"json marker argument is not JSON: {exc}") from None
        if not text.startswith("]]", end):
            raise ScenarioError("json marker argument must be followed by ']]'")
        return name, text[pos:end]
    end = text.find("]]", pos)
    if end < 0:
        raise ScenarioError("marker is missing its closing ']]'")
    return name, text[pos:end]


def _schema_instance(schema: Any, depth: int = 0) -> Any:
    """Build a small value that satisfies common JSON-schema / OpenAPI-schema shapes."""
    if not isinstance(schema, dict) or depth > 8:
        return None
    if "const" in schema:
        return schema["const"]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    for key in ("anyOf", "oneOf", "allOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return _schema_instance(options[0], depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if str(k).lower() != "null"), "null")
    kind = str(kind).lower() if kind is not None else ("object" if "properties" in schema else "string")
    if kind == "object":
        props = schema.get("properties")
        return {str(k): _schema_instance(v, depth + 1) for k, v in props.items()} if isinstance(props, dict) else {}
    if kind == "array":
        count = max(int(schema.get("minItems", 1)), 1)
        return [_schema_instance(schema.get("items", {}), depth + 1) for _ in range(count)]
    return _scalar_instance(kind, schema)


def _scalar_instance(kind: str, schema: dict[str, Any]) -> Any:
    if kind in ("integer", "number"):
        low = schema.get("minimum")
        value = low if isinstance(low, int | float) else 1
        return int(value) if kind == "integer" else value
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    min_length = schema.get("minLength")
    return "fake".ljust(min_length, "x") if isinstance(min_length, int) else "fake"


# ---------------------------------------------------------------------------------------------------------------------
# Answer building


class _Answer:
    def __init__(self, model: str, response_id: str) -> None:
        self.model = model
        self.response_id = response_id

    def chunk(
        self, parts: list[dict[str, Any]] | None, finish: str | None = None, extra: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        candidate: dict[str, Any] = {}
        if parts is not None:
            candidate["content"] = {"role": "model", "parts": parts}
        if finish is not None:
            candidate["finishReason"] = finish
        candidate["index"] = 0
        if extra:
            candidate.update(extra)
        out: dict[str, Any] = {"candidates": [candidate]}
        if finish is not None:
            out["usageMetadata"] = dict(USAGE)
        out["modelVersion"] = self.model
        out["responseId"] = self.response_id
        return out

    def texts(self, pieces: list[str], delay: float = 0.0) -> _Plan:
        pieces = pieces or [""]
        chunks = [self.chunk([{"text": p}]) for p in pieces[:-1]]
        chunks.append(self.chunk([{"text": pieces[-1]}], "STOP"))
        return _Plan(chunks=tuple(chunks), delay=delay)


def _error_plan(status: int, model: str, version: str, details: list[dict[str, Any]] | None = None) -> _Plan:
    api_status, message = _ERRORS.get(status, ("UNKNOWN", f"Fake error {status}."))
    error: dict[str, Any] = {
        "code": status,
        "message": message.format(model=model, version=version),
        "status": api_status,
    }
    if details:
        error["details"] = details
    return _Plan(status=status, body=_json_bytes({"error": error}))


def _split(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _int_arg(name: str, arg: str | None, default: int, low: int, high: int) -> int:
    try:
        value = default if arg is None or arg == "" else int(arg)
    except ValueError:
        raise ScenarioError(f"{name} needs an integer argument, got {arg!r}") from None
    if not low <= value <= high:
        raise ScenarioError(f"{name} argument must be in [{low}, {high}], got {value}")
    return value


@dataclass(frozen=True)
class _Ctx:
    arg: str | None
    body: dict[str, Any]
    answer: _Answer
    version: str

    def error(self, status: int, details: list[dict[str, Any]] | None = None) -> _Plan:
        return _error_plan(status, self.answer.model, self.version, details)


_PLANNERS: dict[str, Callable[[_Ctx], _Plan]] = {}


def _scenario(name: str) -> Callable[[Callable[[_Ctx], _Plan]], Callable[[_Ctx], _Plan]]:
    def register(planner: Callable[[_Ctx], _Plan]) -> Callable[[_Ctx], _Plan]:
        _PLANNERS[name] = planner
        return planner

    return register


@_scenario("echo")
def _plan_echo(ctx: _Ctx) -> _Plan:
    return ctx.answer.texts([ctx.arg or ""])


@_scenario("slow")
def _plan_slow(ctx: _Ctx) -> _Plan:
    try:
        delay = DEFAULT_SLOW_DELAY if not ctx.arg else float(ctx.arg)
    except ValueError:
        raise ScenarioError(f"slow needs seconds between chunks, got {ctx.arg!r}") from None
    if not 0 <= delay <= 3600:
        raise ScenarioError(f"slow delay must be in [0, 3600], got {delay}")
    return ctx.answer.texts(list(SLOW_CHUNKS), delay=delay)


@_scenario("gate")
def _plan_gate(ctx: _Ctx) -> _Plan:
    return replace(ctx.answer.texts([GATE_TEXT]), gate=True)


@_scenario("stall")
def _plan_stall(ctx: _Ctx) -> _Plan:
    return _Plan(chunks=(ctx.answer.chunk([{"text": STALL_TEXT}]),), stall=True)


@_scenario("cut")
def _plan_cut(ctx: _Ctx) -> _Plan:
    if ctx.arg not in (None, "", "end", "reset"):
        raise ScenarioError(f"cut needs end or reset, got {ctx.arg!r}")
    return _Plan(chunks=(ctx.answer.chunk([{"text": CUT_TEXT}]),), reset=ctx.arg == "reset")


@_scenario("hang")
def _plan_hang(ctx: _Ctx) -> _Plan:
    return _Plan(hang=True)


@_scenario("tool_call")
def _plan_tool_call(ctx: _Ctx) -> _Plan:
    if _last_is_function_response(ctx.body):
        return ctx.answer.texts([TOOL_DONE_TEXT])
    call = {"functionCall": {"name": "read_file", "args": {"file_path": ctx.arg or "hello.txt"}}}
    return _Plan(chunks=(ctx.answer.chunk([call], "STOP"),))


@_scenario("write_file")
def _plan_write_file(ctx: _Ctx) -> _Plan:
    """The model asks to write a file (denied in plan mode); then it reports what happened."""
    if _last_is_function_response(ctx.body):
        return ctx.answer.texts([TOOL_DONE_TEXT])
    args = {"file_path": ctx.arg or "written.txt", "content": "written by the fake model\n"}
    return _Plan(chunks=(ctx.answer.chunk([{"functionCall": {"name": "write_file", "args": args}}], "STOP"),))


@_scenario("shell")
def _plan_shell(ctx: _Ctx) -> _Plan:
    """The model runs one shell command, then quotes what the CLI answered: the outcome shows whether it ran."""
    if _last_is_function_response(ctx.body):
        response = [p["functionResponse"] for p in _parts(ctx.body["contents"][-1]) if "functionResponse" in p]
        return ctx.answer.texts([SHELL_RESULT_PREFIX + json.dumps(response, ensure_ascii=False)])
    args = {"command": ctx.arg or "echo shell-ran", "description": "run a command for the test"}
    return _Plan(chunks=(ctx.answer.chunk([{"functionCall": {"name": "run_shell_command", "args": args}}], "STOP"),))


@_scenario("loop")
def _plan_loop(ctx: _Ctx) -> _Plan:
    return ctx.answer.texts([LOOP_LINE] * LOOP_REPEATS)


@_scenario("thought")
def _plan_thought(ctx: _Ctx) -> _Plan:
    thought = ctx.answer.chunk([{"text": THOUGHT_TEXT, "thought": True}])
    return _Plan(chunks=(thought, ctx.answer.chunk([{"text": THOUGHT_ANSWER_TEXT}], "STOP")))


@_scenario("empty")
def _plan_empty(ctx: _Ctx) -> _Plan:
    return ctx.answer.texts([""])


@_scenario("empty_after_tool")
def _plan_empty_after_tool(ctx: _Ctx) -> _Plan:
    if _last_is_function_response(ctx.body):
        return ctx.answer.texts([""])
    call = {"functionCall": {"name": "read_file", "args": {"file_path": "hello.txt"}}}
    return _Plan(chunks=(ctx.answer.chunk([call], "STOP"),))


@_scenario("safety")
def _plan_safety(ctx: _Ctx) -> _Plan:
    ratings = [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}]
    return _Plan(chunks=(ctx.answer.chunk(None, "SAFETY", {"safetyRatings": ratings}),))


@_scenario("max_tokens")
def _plan_max_tokens(ctx: _Ctx) -> _Plan:
    return _Plan(chunks=(ctx.answer.chunk([{"text": MAX_TOKENS_TEXT}], "MAX_TOKENS"),))


@_scenario("blocked_prompt")
def _plan_blocked_prompt(ctx: _Ctx) -> _Plan:
    feedback = {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 12}}
    return _Plan(chunks=({**feedback, "modelVersion": ctx.answer.model, "responseId": ctx.answer.response_id},))


@_scenario("nonjson")
def _plan_nonjson(ctx: _Ctx) -> _Plan:
    return _Plan(body=b"this is not json", content_type="text/plain; charset=UTF-8")


@_scenario("error")
def _plan_error(ctx: _Ctx) -> _Plan:
    return ctx.error(_int_arg("error", ctx.arg, 500, 400, 599))


@_scenario("bad_key")
def _plan_bad_key(ctx: _Ctx) -> _Plan:
    return _Plan(status=400, body=_json_bytes({"error": INVALID_KEY_ERROR}))


@_scenario("quota")
def _plan_quota(ctx: _Ctx) -> _Plan:
    return ctx.error(429)


@_scenario("quota_daily")
def _plan_quota_daily(ctx: _Ctx) -> _Plan:
    violation = {
        "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
        "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
        "quotaDimensions": {"location": "global", "model": ctx.answer.model},
        "quotaValue": "50",
    }
    return ctx.error(429, [{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [violation]}])


@_scenario("quota_retry")
def _plan_quota_retry(ctx: _Ctx) -> _Plan:
    return ctx.error(429, [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1s"}])


@_scenario("big")
def _plan_big(ctx: _Ctx) -> _Plan:
    kb, _, chunk = (ctx.arg or "").partition(":")
    size = _int_arg("big", chunk, _BIG_CHUNK, 1, _BIG_MAX_KB * 1024)
    return ctx.answer.texts(_split(big_text(_int_arg("big", kb, 10, 0, _BIG_MAX_KB)), size))


@_scenario("unicode")
def _plan_unicode(ctx: _Ctx) -> _Plan:
    return ctx.answer.texts(UNICODE_TEXT.splitlines(keepends=True))


@_scenario("json")
def _plan_json(ctx: _Ctx) -> _Plan:
    text = ctx.arg or "{}"
    half = max(len(text) // 2, 1)
    return ctx.answer.texts([text[:half], text[half:]] if len(text) > 1 else [text])


@_scenario("history")
def _plan_history(ctx: _Ctx) -> _Plan:
    turns = sum(1 for c in _user_contents(ctx.body) if not _is_function_response(c))
    return ctx.answer.texts([f"turns={turns}"])


@_scenario("image")
def _plan_image(ctx: _Ctx) -> _Plan:
    image = {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(TINY_PNG).decode()}}
    return _Plan(chunks=(ctx.answer.chunk([{"text": IMAGE_TEXT}]), ctx.answer.chunk([image], "STOP")))


@_scenario("search")
def _plan_search(ctx: _Ctx) -> _Plan:
    """The model searches the web once, then answers citing the URLs the search returned."""
    if _last_is_function_response(ctx.body):
        urls = list(dict.fromkeys(_URL.findall(json.dumps(ctx.body["contents"][-1], ensure_ascii=False))))
        return ctx.answer.texts([SEARCH_ANSWER_TEXT + "\n\nSources:\n" + "\n".join(f"- {u}" for u in urls)])
    call = {"functionCall": {"name": "google_web_search", "args": {"query": ctx.arg or "fake query"}}}
    return _Plan(chunks=(ctx.answer.chunk([call], "STOP"),))


@_scenario("json_turns")
def _plan_json_turns(ctx: _Ctx) -> _Plan:
    try:
        answers = json.loads(ctx.arg or "")
    except ValueError:
        raise ScenarioError(f"json_turns needs a JSON array, got {ctx.arg!r}") from None
    if not isinstance(answers, list) or not answers:
        raise ScenarioError("json_turns needs a non-empty JSON array")
    turns = sum(1 for c in _user_contents(ctx.body) if not _is_function_response(c))
    chosen = answers[min(max(turns, 1), len(answers)) - 1]
    return ctx.answer.texts([chosen if isinstance(chosen, str) else json.dumps(chosen, ensure_ascii=False)])


@_scenario("quota_for")
def _plan_quota_for(ctx: _Ctx) -> _Plan:
    return ctx.error(429) if ctx.answer.model == ctx.arg else _echo_plan(ctx.body, ctx.answer)


@_scenario("unavailable_for")
def _plan_unavailable_for(ctx: _Ctx) -> _Plan:
    return ctx.error(503) if ctx.answer.model == ctx.arg else _echo_plan(ctx.body, ctx.answer)


@_scenario("by_model")
def _plan_by_model(ctx: _Ctx) -> _Plan:
    """Each model its own answer (a consensus panel): a string answers that text, an integer fails with that HTTP
    status (the errors of ``error:<status>``); a model not in the object gets the default echo."""
    try:
        plans = json.loads(ctx.arg or "")
    except ValueError:
        raise ScenarioError(f"by_model needs a JSON object, got {ctx.arg!r}") from None
    if not isinstance(plans, dict):
        raise ScenarioError("by_model needs a JSON object of model -> answer text or HTTP status")
    chosen = plans.get(ctx.answer.model)
    if isinstance(chosen, bool) or not isinstance(chosen, str | int | None):
        raise ScenarioError(f"by_model: {ctx.answer.model}'s entry must be a text or an HTTP status")
    if isinstance(chosen, int):
        return ctx.error(_int_arg("by_model", str(chosen), 500, 400, 599))
    return _echo_plan(ctx.body, ctx.answer) if chosen is None else ctx.answer.texts([chosen])


def _scripted_for(scenario: tuple[str | None, str | None], model: str) -> bool:
    """Whether the sticky scenario is a ``by_model`` naming `model`: it answers that model's schema requests too."""
    name, arg = scenario
    if name != "by_model":
        return False
    try:
        plans = json.loads(arg or "")
    except ValueError:
        return False
    return isinstance(plans, dict) and model in plans


@_scenario("served_by")
def _plan_served_by(ctx: _Ctx) -> _Plan:
    """The echo, reported as answered by another model (`modelVersion`): an upstream that fell back silently."""
    return _echo_plan(ctx.body, _Answer(ctx.arg or "gemini-2.5-flash", ctx.answer.response_id))


@_scenario("quota_free")
def _plan_quota_free(ctx: _Ctx) -> _Plan:
    return _Plan(status=429, body=_json_bytes({"error": free_tier_quota_error(ctx.answer.model)}))


@_scenario("image_safety")
def _plan_image_safety(ctx: _Ctx) -> _Plan:
    extra = {"finishMessage": "Unable to show the generated image: it was blocked by the safety filter."}
    return _Plan(chunks=(ctx.answer.chunk(None, "IMAGE_SAFETY", extra),))


@_scenario("prompt_blocked")
def _plan_prompt_blocked(ctx: _Ctx) -> _Plan:
    out = {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "usageMetadata": dict(USAGE)}
    return _Plan(body=_json_bytes({**out, "modelVersion": ctx.answer.model, "responseId": ctx.answer.response_id}))


def _wants_image(body: dict[str, Any]) -> bool:
    config = body.get("generationConfig")
    modalities = config.get("responseModalities") if isinstance(config, dict) else None
    return isinstance(modalities, list) and "IMAGE" in modalities


def _image_plan(answer: _Answer, text: str) -> _Plan:
    """An image-output answer: the echo text, then one image part (what Nano Banana models return)."""
    image = {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(TINY_PNG).decode()}}
    return _Plan(chunks=(answer.chunk([{"text": text}]), answer.chunk([image], "STOP")))


def _web_search_plan(answer: _Answer) -> _Plan:
    """What the search-grounded model call returns: a summary, its sources and which text they support."""
    grounding = {
        "groundingChunks": [{"web": {"uri": uri, "title": title}} for title, uri in SEARCH_SOURCES],
        "groundingSupports": [
            {"segment": {"startIndex": 0, "endIndex": len(SEARCH_SUMMARY_TEXT)}, "groundingChunkIndices": [0, 1]}
        ],
    }
    text = answer.chunk([{"text": SEARCH_SUMMARY_TEXT}], "STOP", {"groundingMetadata": grounding})
    return _Plan(chunks=(text,))


# How long a test waits for a client (a CLI booting on a loaded 2-core machine) to reach the emulator: a bound on a
# hang, never a measure of speed.
REQUEST_BOUND: Final = 90.0
SCENARIOS: Final = frozenset(_PLANNERS)
"""The scenario names (the contract for ``[[fake:<name>]]`` markers and ``/_control``)."""


def _plan_scenario(name: str, arg: str | None, body: dict[str, Any], answer: _Answer, version: str) -> _Plan:
    planner = _PLANNERS.get(name)
    if planner is None:
        raise ScenarioError(f"unknown scenario {name!r}; known: {', '.join(sorted(SCENARIOS))}")
    return planner(_Ctx(arg, body, answer, version))


def _echo_plan(body: dict[str, Any], answer: _Answer) -> _Plan:
    text = echo_text(latest_user_text(body))
    return answer.texts([text[:_ECHO_FIRST_CHUNK], text[_ECHO_FIRST_CHUNK:]])


def _merge(chunks: tuple[dict[str, Any], ...]) -> dict[str, Any]:
    """Merge streamed chunks into one generateContent response (adjacent text parts of one kind are joined)."""
    if not any(chunk.get("candidates") for chunk in chunks):  # a refused prompt has only promptFeedback
        return dict(chunks[-1])
    parts: list[dict[str, Any]] = []
    last_candidate: dict[str, Any] = {}
    for chunk in chunks:
        candidate = chunk["candidates"][0]
        last_candidate = candidate
        for part in candidate.get("content", {}).get("parts", []):
            prev = parts[-1] if parts else None
            if (
                prev is not None
                and "text" in part
                and "text" in prev
                and bool(prev.get("thought")) == bool(part.get("thought"))
            ):
                parts[-1] = {**prev, "text": prev["text"] + part["text"]}
            else:
                parts.append(dict(part))
    merged = dict(chunks[-1])
    candidate = {k: v for k, v in last_candidate.items() if k != "content"}
    if parts or "content" in last_candidate:
        candidate = {"content": {"role": "model", "parts": parts}, **candidate}
    merged["candidates"] = [candidate]
    return merged


# ---------------------------------------------------------------------------------------------------------------------
# HTTP


def _json_bytes(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


class QuietHandler(BaseHTTPRequestHandler):
    """A keep-alive (HTTP/1.1) handler that writes no access log: a test's output stays its own."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - signature fixed by the base class
        pass


class _Handler(QuietHandler):
    server: _Server

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    def do_PUT(self) -> None:
        self._dispatch()

    def _dispatch(self) -> None:
        try:
            self._route()
        except OSError:
            # Client went away or stop() cut the connection.
            self.close_connection = True

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            data = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(data)
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _route(self) -> None:
        raw = self._read_body()
        if urlsplit(self.path).path != "/_control" and self._sent_key() in self.server.fake.rejected_keys:
            self._log("rejected_key", None)
            self._send_json(400, {"error": INVALID_KEY_ERROR})
            return
        if self._route_media(raw):
            return
        try:
            body: Any = json.loads(raw) if raw else None
        except (ValueError, UnicodeDecodeError):
            body = None
            if self.path != "/_control":
                self._log("unknown", body)
                self._send_plan(_error_plan(400, "", "v1beta"), stream=False)
                return
        url = urlsplit(self.path)
        if url.path == "/_control":
            self._control(body)
            return
        if self.command == "GET" and _MODELS_PATH.match(url.path):
            self._log("models", body)
            self._send_models()
            return
        match = _API_PATH.match(url.path)
        if match is None:
            self._log("unknown", body)
            self._send_not_found(url.path)
            return
        version, model, method = match.group(1), match.group(2), match.group(3)
        if self.command == "GET" and method is None:
            self._log("models", body, model=model)
            self._send_model(model)
            return
        if self.command != "POST" or method not in ("generateContent", "streamGenerateContent", "countTokens"):
            self._log("unknown", body, model=model)
            self._send_not_found(url.path)
            return
        if self.server.fake.denied(self._sent_key(), model):
            self._log("denied", body, model=model)
            self._send_json(403, {"error": PERMISSION_DENIED_ERROR})
            return
        if method == "countTokens":
            self._log("count_tokens", body, model=model)
            self._send_json(200, {"totalTokens": count_tokens(body if isinstance(body, dict) else {})})
            return
        self._generate(body, model, version, stream=method == "streamGenerateContent")

    def _sent_key(self) -> str | None:
        bearer = self.headers.get("Authorization", "")
        if bearer.lower().startswith("bearer "):
            return bearer[len("bearer ") :].strip()
        query = dict(item.split("=", 1) for item in urlsplit(self.path).query.split("&") if "=" in item)
        return self.headers.get("x-goog-api-key") or query.get("key")

    def _route_media(self, raw: bytes) -> bool:
        """Answer a media route (fake_gemini_media) and log it with kind ``media_<route>``; False for other paths."""
        headers = {k.lower(): v for k, v in self.headers.items()}
        request = MediaRequest(self.command, self.path, headers, raw)
        answer = self.server.fake.media.dispatch(request)
        if answer is None:
            return False
        self._log(f"media_{answer.kind}", request.json())
        self.send_response(answer.status)
        self.send_header("Content-Type", answer.content_type)
        for key, value in answer.headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(answer.body)))
        self.end_headers()
        self.wfile.write(answer.body)
        return True

    def _generate(self, body: Any, model: str, version: str, *, stream: bool) -> None:
        fake = self.server.fake
        answer = _Answer(model, fake.next_response_id())
        body_dict: dict[str, Any] = body if isinstance(body, dict) else {}
        kind = _classify(body)
        if kind == "title":
            self._log(kind, body, model=model)
            self._send_plan(answer.texts([TITLE_TEXT]), stream)
            return
        if kind == "web_search":
            self._log(kind, body, model=model)
            self._send_plan(_web_search_plan(answer), stream)
            return
        if kind == "schema" and _scripted_for(fake.scenario, model):  # a consensus judge asked for JSON
            name, arg = fake.scenario
            self._log(kind, body, model=model, scenario=name, arg=arg)
            self._send_plan(_plan_scenario(str(name), arg, body_dict, answer, version), stream)
            return
        if kind in ("router", "schema"):
            self._log(kind, body, model=model)
            value = ROUTER_ANSWER if kind == "router" else _schema_instance(_response_schema(body_dict))
            self._send_plan(answer.texts([json.dumps(value, ensure_ascii=False, separators=(",", ":"))]), stream)
            return
        try:
            selected = parse_marker(latest_user_text(body_dict))
        except ScenarioError as exc:
            self._log(kind, body, model=model, scenario="invalid")
            self._send_scenario_error(exc)
            return
        name, arg = selected if selected is not None else fake.scenario
        self._log(kind, body, model=model, scenario=name or "default", arg=arg)
        missing = fake.media.missing_file_refs(body_dict.get("contents"))
        if missing:
            error = {"code": 403, "message": file_denied_message(missing[0]), "status": "PERMISSION_DENIED"}
            self._send_json(403, {"error": error})
            return
        try:
            if name is None and _wants_image(body_dict):
                plan = _image_plan(answer, echo_text(latest_user_text(body_dict)))
                fake.media.record_generation("image", model, body_dict.get("contents"))
            elif name is None:
                plan = _echo_plan(body_dict, answer)
            else:
                plan = _plan_scenario(name, arg, body_dict, answer, version)
        except ScenarioError as exc:
            self._send_scenario_error(exc)
            return
        self._send_plan(plan, stream)

    def _log(
        self,
        kind: str,
        body: Any,
        *,
        model: str | None = None,
        scenario: str | None = None,
        arg: str | None = None,
    ) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.server.fake.record(LoggedRequest(self.command, self.path, headers, body, kind, model, scenario, arg))

    def _control(self, body: Any) -> None:
        fake = self.server.fake
        if self.command == "GET":
            self._send_json(200, fake.control_state())
            return
        try:
            if self.command != "POST" or not isinstance(body, dict) or "scenario" not in body:
                raise ScenarioError('expected POST {"scenario": <name or null>, "arg": <optional>}')
            scenario, arg = body["scenario"], body.get("arg")
            fake.set_scenario(None if scenario is None else str(scenario), None if arg is None else str(arg))
        except ScenarioError as exc:
            self._send_scenario_error(exc)
            return
        self._send_json(200, fake.control_state())

    def _send_scenario_error(self, exc: ScenarioError) -> None:
        error = {"code": 400, "message": f"fake_gemini_api: {exc}", "status": "INVALID_ARGUMENT"}
        self._send_json(400, {"error": error})

    def _send_json(self, status: int, obj: Any) -> None:
        self._send_bytes(status, _json_bytes(obj), "application/json; charset=UTF-8")

    def _send_bytes(self, status: int, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_not_found(self, path: str) -> None:
        error = {"code": 404, "message": f"fake_gemini_api: no route for {self.command} {path}", "status": "NOT_FOUND"}
        self._send_json(404, {"error": error})

    def _model_info(self, model: str) -> dict[str, Any]:
        methods = ["generateContent", "streamGenerateContent", "countTokens"]
        return {
            "name": f"models/{model}",
            "version": "001",
            "displayName": model,
            "inputTokenLimit": 1048576,
            "outputTokenLimit": 65536,
            "supportedGenerationMethods": methods,
        }

    def _send_models(self) -> None:
        self._send_json(200, {"models": [self._model_info(m) for m in _MODELS]})

    def _send_model(self, model: str) -> None:
        if model in _MODELS:
            self._send_json(200, self._model_info(model))
        else:
            self._send_plan(_error_plan(404, model, "v1beta"), stream=False)

    def _wait_for_stop(self, seconds: float | None = None) -> bool:
        """Wait up to ``seconds`` (forever when None) for stop(); True when the server is stopping."""
        return self.server.fake.stop_event.wait(seconds)

    def _send_plan(self, plan: _Plan, stream: bool) -> None:
        if plan.gate:
            fake = self.server.fake
            while not (fake.gate.wait(0.05) or fake.stop_event.is_set()):
                pass
        if plan.hang:
            self._wait_for_stop()
            self.close_connection = True
            return
        if plan.body is not None:
            self._send_bytes(plan.status, plan.body, plan.content_type)
            return
        if not stream:
            self._send_single(plan)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for index, chunk in enumerate(plan.chunks):
            if index and plan.delay and self._wait_for_stop(plan.delay):
                self.close_connection = True
                return
            event = b"data: " + _json_bytes(chunk) + b"\r\n\r\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
        if plan.stall:
            self._wait_for_stop()
            self.close_connection = True
            return
        if plan.reset:
            self._reset()
            return
        self.wfile.write(b"0\r\n\r\n")

    def _reset(self) -> None:
        """Close the socket with SO_LINGER 0: the kernel sends a TCP RST, what a cut network path leaves a client."""
        self.close_connection = True
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.rfile.close()  # the reader holds a reference to the socket; with it gone, close() really closes
        self.connection.close()

    def _send_single(self, plan: _Plan) -> None:
        if plan.delay and self._wait_for_stop(plan.delay * (len(plan.chunks) - 1)):
            self.close_connection = True
            return
        data = _json_bytes(_merge(plan.chunks))
        if not plan.stall:
            self._send_bytes(200, data, "application/json; charset=UTF-8")
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data[: len(data) // 2])
        self._wait_for_stop()
        self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, port: int, fake: FakeGeminiApi) -> None:
        self.fake = fake
        self._conn_lock = threading.Lock()
        self._conns: set[socket.socket] = set()
        self._conn_threads: set[threading.Thread] = set()
        super().__init__(("127.0.0.1", port), _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind() calls socket.getfqdn(), a reverse DNS lookup; stay off the network.
        TCPServer.server_bind(self)
        self.server_name = "127.0.0.1"
        self.server_port = self.server_address[1]

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, addr = super().get_request()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock, addr

    def process_request(self, request: socket.socket | tuple[bytes, socket.socket], client_address: Any) -> None:
        assert isinstance(request, socket.socket)
        thread = threading.Thread(
            target=self._serve_connection, args=(request, client_address), name="fake-gemini-conn", daemon=True
        )
        with self._conn_lock:
            if self.fake.stop_event.is_set():
                self.shutdown_request(request)
                return
            self._conns.add(request)
            self._conn_threads.add(thread)
        thread.start()

    def _serve_connection(self, request: socket.socket, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:  # noqa: BLE001 - connection-level failures are expected (client gone, stop())
            pass
        finally:
            self.shutdown_request(request)
            with self._conn_lock:
                self._conns.discard(request)
                self._conn_threads.discard(threading.current_thread())

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass

    def close_connections(self) -> list[threading.Thread]:
        with self._conn_lock:
            conns, threads = list(self._conns), list(self._conn_threads)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        return threads


class FakeGeminiApi:
    """The fake server. Binds ``127.0.0.1:port`` (0 = any free port) at construction; ``start()`` serves it.

    Use as a context manager (``with FakeGeminiApi() as api: ...``) or call ``start()`` / ``stop()``.
    """

    def __init__(self, port: int = 0) -> None:
        self.stop_event = threading.Event()
        self.gate = threading.Event()
        """Opens every `gate` scenario's answer (set by the test)."""
        self._cond = threading.Condition()
        self._requests: list[LoggedRequest] = []
        self._scenario: tuple[str | None, str | None] = (None, None)
        self.rejected_keys: set[str] = set()
        self._denied: dict[str, frozenset[str] | None] = {}  # key -> the models it may not call (None: every one)
        self._counter = 0
        self.media = MediaState(TINY_PNG)
        """Files, operations, interactions and the generation counters (see fake_gemini_media)."""
        self._server = _Server(port, self)
        self._thread: threading.Thread | None = None
        self._stopped = False

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def requests(self) -> list[LoggedRequest]:
        """A snapshot of the logged requests, oldest first."""
        with self._cond:
            return list(self._requests)

    @property
    def scenario(self) -> tuple[str | None, str | None]:
        """The sticky ``(name, arg)``; ``(None, None)`` means the default echo."""
        with self._cond:
            return self._scenario

    def start(self) -> Self:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever, args=(_POLL_INTERVAL,), name="fake-gemini-api", daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving: close the listener and every open connection (stalled and hanging ones too). Bounded."""
        if self._stopped:
            return
        self._stopped = True
        deadline = time.monotonic() + _STOP_JOIN_TIMEOUT
        self.stop_event.set()
        if self._thread is not None and self._thread.is_alive():
            self._server.shutdown()
            self._thread.join(max(deadline - time.monotonic(), 0))
        self._server.server_close()
        for thread in self._server.close_connections():
            thread.join(max(deadline - time.monotonic(), 0))

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def set_scenario(self, name: str | None, arg: str | None = None) -> None:
        """Set the sticky scenario (``None`` clears it). ``name`` may carry its argument as ``"name:arg"``."""
        if name is not None and arg is None and ":" in name:
            name, arg = name.split(":", 1)
        if name is not None and name not in SCENARIOS:
            raise ScenarioError(f"unknown scenario {name!r}; known: {', '.join(sorted(SCENARIOS))}")
        with self._cond:
            self._scenario = (name, None if name is None else arg)

    def reject_key(self, key: str) -> None:
        """From now on, refuse every request that carries ``key`` as the real API refuses an invalid key."""
        with self._cond:
            self.rejected_keys.add(key)

    def deny_key(self, key: str, models: tuple[str, ...] | None = None) -> None:
        """From now on, answer 403 PERMISSION_DENIED to ``key``'s generate and count requests for ``models`` (every
        model when None); its listings still answer."""
        with self._cond:
            self._denied[key] = None if models is None else frozenset(models)

    def allow_key(self, key: str) -> None:
        """Undo reject_key and deny_key for ``key``: a world shared by several cases starts each one as new."""
        with self._cond:
            self.rejected_keys.discard(key)
            self._denied.pop(key, None)

    def denied(self, key: str | None, model: str) -> bool:
        """Whether ``key`` may not call ``model`` (deny_key)."""
        with self._cond:
            if key is None or key not in self._denied:
                return False
            models = self._denied[key]
            return models is None or model in models

    def control_state(self) -> dict[str, str | None]:
        name, arg = self.scenario
        return {"scenario": name, "arg": arg}

    def clear_requests(self) -> None:
        with self._cond:
            self._requests.clear()

    def record(self, request: LoggedRequest) -> None:
        with self._cond:
            self._requests.append(request)
            self._cond.notify_all()

    def inline_images(self) -> list[dict[str, object]]:
        """The inline image parts of every generate request received (either JSON spelling of the SDKs)."""
        found: list[dict[str, object]] = []
        for request in self.requests:
            body = request.body if isinstance(request.body, dict) else {}
            for content in body.get("contents", []):
                parts = content.get("parts", [])
                found += [
                    p.get("inlineData") or p["inline_data"] for p in parts if "inlineData" in p or "inline_data" in p
                ]
        return found

    def wait_for_requests(self, count: int, timeout: float = REQUEST_BOUND) -> list[LoggedRequest]:
        """Block until at least ``count`` requests are logged; raise ``TimeoutError`` after ``timeout`` seconds."""
        with self._cond:
            if not self._cond.wait_for(lambda: len(self._requests) >= count, timeout):
                raise TimeoutError(f"expected {count} requests within {timeout}s, got {len(self._requests)}")
            return list(self._requests)

    def next_response_id(self) -> str:
        with self._cond:
            self._counter += 1
            return f"fake-{self._counter}"


def iter_sse_events(raw: bytes) -> Iterator[dict[str, Any]]:
    """Decode an SSE body from this fake into its JSON events (a helper for tests)."""
    for block in raw.decode().replace("\r\n", "\n").split("\n\n"):
        if block.startswith("data: "):
            yield json.loads(block[len("data: ") :])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fake Gemini REST API on 127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="port to bind (default: any free port)")
    parser.add_argument("--scenario", default=None, help="initial sticky scenario, e.g. big or slow:0.1")
    parser.add_argument("--arg", default=None, help="argument of --scenario")
    args = parser.parse_args(argv)
    done = threading.Event()

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        done.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    with FakeGeminiApi(args.port) as api:
        if args.scenario:
            api.set_scenario(args.scenario, args.arg)
        print(f"PORT={api.port}", flush=True)
        while not done.wait(1.0):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
