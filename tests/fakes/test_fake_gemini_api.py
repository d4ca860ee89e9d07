"""Fast checks of the fake Gemini API itself, over real loopback HTTP with urllib (no CLI)."""

from __future__ import annotations

import base64
import contextlib
import json
import selectors
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from .fake_gemini_api import (
    CUT_TEXT,
    ECHO_PREFIX,
    LOOP_LINE,
    LOOP_REPEATS,
    PERMISSION_DENIED_ERROR,
    ROUTER_ANSWER,
    SLOW_CHUNKS,
    STALL_TEXT,
    THOUGHT_ANSWER_TEXT,
    TINY_PNG,
    TITLE_TEXT,
    TOOL_DONE_TEXT,
    UNICODE_TEXT,
    USAGE,
    FakeGeminiApi,
    big_text,
    echo_text,
    iter_sse_events,
)

MODEL = "gemini-2.5-pro"
SESSION_CONTEXT = "<session_context>\nworkspace: /tmp/x\n</session_context>"
QUOTA_MESSAGE = "You exceeded your current quota, please check your plan and billing details."


def main_turn(prompt: str, *, history: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A body shaped like the CLI's main agent turn (session context part, prompt part, tools)."""
    if history is None:
        contents = [{"role": "user", "parts": [{"text": SESSION_CONTEXT}, {"text": prompt}]}]
    else:
        contents = [*history, {"role": "user", "parts": [{"text": prompt}]}]
    return {
        "contents": contents,
        "systemInstruction": {"parts": [{"text": "You are a CLI."}]},
        "tools": [{"functionDeclarations": [{"name": "read_file", "description": "Read a file."}]}],
        "generationConfig": {"temperature": 1},
    }


def post(url: str, body: Any) -> tuple[int, str, bytes]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.headers.get("Content-Type", ""), exc.read()


def stream(api: FakeGeminiApi, body: Any, model: str = MODEL) -> tuple[int, bytes]:
    status, _, raw = post(f"{api.base_url}/v1beta/models/{model}:streamGenerateContent?alt=sse", body)
    return status, raw


def generate(api: FakeGeminiApi, body: Any, model: str = MODEL) -> tuple[int, Any]:
    status, _, raw = post(f"{api.base_url}/v1beta/models/{model}:generateContent", body)
    return status, json.loads(raw)


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(p.get("text", "") for e in events for p in e["candidates"][0].get("content", {}).get("parts", []))


def test_default_echo_streams_exact_sse_frames(api: FakeGeminiApi) -> None:
    status, content_type, raw = post(
        f"{api.base_url}/v1beta/models/{MODEL}:streamGenerateContent?alt=sse", main_turn("say hi")
    )

    assert (status, content_type) == (200, "text/event-stream")
    frames = raw.split(b"\r\n\r\n")
    assert frames[-1] == b""
    assert all(f.startswith(b"data: {") and b"\n" not in f for f in frames[:-1])
    events = list(iter_sse_events(raw))
    assert len(events) >= 2
    assert text_of(events) == "Hello from fake Gemini! You said: say hi"
    assert "finishReason" not in events[0]["candidates"][0]
    assert events[-1]["candidates"][0]["finishReason"] == "STOP"
    assert events[-1]["usageMetadata"] == USAGE
    assert events[0]["modelVersion"] == MODEL
    logged = api.requests
    assert [(r.kind, r.scenario, r.model) for r in logged] == [("main", "default", MODEL)]
    assert logged[0].headers["content-type"] == "application/json"
    assert logged[0].body["contents"][0]["parts"][1]["text"] == "say hi"


def test_echo_truncates_long_prompts_and_skips_function_responses(api: FakeGeminiApi) -> None:
    long_prompt = "x" * 2500
    _, raw = stream(api, main_turn(long_prompt))
    assert text_of(list(iter_sse_events(raw))) == ECHO_PREFIX + "x" * 2000 + "\u2026"

    body = main_turn("read it please")
    body["contents"].append({"role": "model", "parts": [{"functionCall": {"name": "read_file", "args": {}}}]})
    body["contents"].append({"role": "user", "parts": [{"functionResponse": {"name": "read_file", "response": {}}}]})
    _, raw = stream(api, body)
    assert text_of(list(iter_sse_events(raw))) == echo_text("read it please")


def test_markers_select_scenarios_on_main_turns(api: FakeGeminiApi) -> None:
    _, raw = stream(api, main_turn("[[fake:echo:exact words]]"))
    assert text_of(list(iter_sse_events(raw))) == "exact words"

    payload = '{"items":[[1,2]],"ok":true}'
    status, merged = generate(api, main_turn(f"please [[fake:json:{payload}]] now"))
    assert status == 200
    assert merged["candidates"][0]["content"]["parts"] == [{"text": payload}]
    assert merged["candidates"][0]["finishReason"] == "STOP"

    _, raw = stream(api, main_turn("[[fake:big:3]]"))
    events = list(iter_sse_events(raw))
    assert len(events) == 3
    assert text_of(events) == big_text(3)
    assert len(big_text(3).encode()) == 3 * 1024

    _, raw = stream(api, main_turn("[[fake:unicode]]"))
    assert text_of(list(iter_sse_events(raw))) == UNICODE_TEXT

    _, raw = stream(api, main_turn("[[fake:thought]]"))
    events = list(iter_sse_events(raw))
    assert events[0]["candidates"][0]["content"]["parts"][0]["thought"] is True
    assert events[-1]["candidates"][0]["content"]["parts"] == [{"text": THOUGHT_ANSWER_TEXT}]

    _, raw = stream(api, main_turn("[[fake:slow:0]]"))
    assert [text_of([e]) for e in iter_sse_events(raw)] == list(SLOW_CHUNKS)

    _, raw = stream(api, main_turn("[[fake:empty]]"))
    (event,) = iter_sse_events(raw)
    assert event["candidates"][0]["content"]["parts"] == [{"text": ""}]

    _, raw = stream(api, main_turn("[[fake:safety]]"))
    (event,) = iter_sse_events(raw)
    candidate = event["candidates"][0]
    assert "content" not in candidate
    assert candidate["finishReason"] == "SAFETY"

    status, raw = stream(api, main_turn("[[fake:nonjson]]"))
    assert (status, raw) == (200, b"this is not json")

    assert [r.scenario for r in api.requests] == [
        "echo",
        "json",
        "big",
        "unicode",
        "thought",
        "slow",
        "empty",
        "safety",
        "nonjson",
    ]


def test_tool_call_then_text_after_function_response(api: FakeGeminiApi) -> None:
    body = main_turn("[[fake:tool_call:notes.md]]")
    _, raw = stream(api, body)
    (event,) = iter_sse_events(raw)
    call = event["candidates"][0]["content"]["parts"][0]
    assert call == {"functionCall": {"name": "read_file", "args": {"file_path": "notes.md"}}}

    body["contents"].append({"role": "model", "parts": [call]})
    response = {"functionResponse": {"name": "read_file", "response": {"output": "hi"}, "id": "read_file_1_0"}}
    body["contents"].append({"role": "user", "parts": [response]})
    _, raw = stream(api, body)
    assert text_of(list(iter_sse_events(raw))) == TOOL_DONE_TEXT


def test_history_counts_user_turns_without_function_responses(api: FakeGeminiApi) -> None:
    history = [
        {"role": "user", "parts": [{"text": SESSION_CONTEXT}, {"text": "first"}]},
        {"role": "model", "parts": [{"text": "answer"}]},
    ]
    _, raw = stream(api, main_turn("[[fake:history]]", history=history))
    assert text_of(list(iter_sse_events(raw))) == "turns=2"


def test_sticky_control_mode_applies_until_cleared(api: FakeGeminiApi) -> None:
    status, _, raw = post(f"{api.base_url}/_control", {"scenario": "error", "arg": 503})
    assert (status, json.loads(raw)) == (200, {"scenario": "error", "arg": "503"})

    assert stream(api, main_turn("hello"))[0] == 503
    assert generate(api, {"contents": [{"role": "user", "parts": [{"text": "plain genai"}]}]})[0] == 503
    # A marker still wins over the sticky mode.
    assert text_of(list(iter_sse_events(stream(api, main_turn("[[fake:echo:marker]]"))[1]))) == "marker"

    assert post(f"{api.base_url}/_control", {"scenario": None})[0] == 200
    _, raw = stream(api, main_turn("hello"))
    assert text_of(list(iter_sse_events(raw))) == echo_text("hello")

    status, _, raw = post(f"{api.base_url}/_control", {"scenario": "no_such"})
    assert status == 400
    assert "unknown scenario" in json.loads(raw)["error"]["message"]


@pytest.mark.parametrize("prompt", ["[[fake:no_such]]", "[[fake:big:lots]]", "[[fake:json:{oops]]", "[[fake:echo"])
def test_bad_markers_answer_400_naming_the_fake(api: FakeGeminiApi, prompt: str) -> None:
    status, raw = stream(api, main_turn(prompt))

    assert status == 400
    error = json.loads(raw)["error"]
    assert (error["status"], error["message"].split(":")[0]) == ("INVALID_ARGUMENT", "fake_gemini_api")
    assert len(api.requests) == 1


QUOTA_DAILY_DETAILS = [
    {
        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
        "violations": [
            {
                "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
                "quotaDimensions": {"location": "global", "model": MODEL},
                "quotaValue": "50",
            }
        ],
    }
]


@pytest.mark.parametrize(
    ("marker", "status", "api_status", "message_start", "details"),
    [
        ("error:400", 400, "INVALID_ARGUMENT", "Request contains an invalid argument.", None),
        ("error:403", 403, "PERMISSION_DENIED", "Method doesn't allow unregistered callers", None),
        ("error:404", 404, "NOT_FOUND", f"models/{MODEL} is not found for API version v1beta", None),
        ("error:500", 500, "INTERNAL", "An internal error has occurred.", None),
        ("error:503", 503, "UNAVAILABLE", "The model is overloaded. Please try again later.", None),
        ("quota", 429, "RESOURCE_EXHAUSTED", QUOTA_MESSAGE, None),
        ("quota_daily", 429, "RESOURCE_EXHAUSTED", QUOTA_MESSAGE, QUOTA_DAILY_DETAILS),
        (
            "quota_retry",
            429,
            "RESOURCE_EXHAUSTED",
            QUOTA_MESSAGE,
            [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1s"}],
        ),
    ],
)
def test_error_scenarios_send_google_error_bodies(
    api: FakeGeminiApi, marker: str, status: int, api_status: str, message_start: str, details: Any
) -> None:
    got_status, content_type, raw = post(
        f"{api.base_url}/v1beta/models/{MODEL}:streamGenerateContent?alt=sse", main_turn(f"[[fake:{marker}]]")
    )

    assert (got_status, content_type) == (status, "application/json; charset=UTF-8")
    error = json.loads(raw)["error"]
    assert set(error) == ({"code", "message", "status"} | ({"details"} if details else set()))
    assert (error["code"], error["status"]) == (status, api_status)
    assert error["message"].startswith(message_start)
    assert error.get("details") == details


def test_router_and_title_calls_get_benign_answers(api: FakeGeminiApi) -> None:
    api.set_scenario("quota")
    router_schema = {
        "type": "object",
        "properties": {
            "complexity_reasoning": {"type": "string"},
            "complexity_score": {"type": "integer", "minimum": 1, "maximum": 100},
        },
        "required": ["complexity_reasoning", "complexity_score"],
    }
    router: dict[str, Any] = {
        "contents": [{"role": "user", "parts": [{"text": "[[fake:error:500]] do things"}]}],
        "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": router_schema},
    }
    status, body = generate(api, router, model="gemini-3.5-flash-lite")
    assert status == 200
    assert json.loads(body["candidates"][0]["content"]["parts"][0]["text"]) == ROUTER_ANSWER
    assert ROUTER_ANSWER == {"complexity_reasoning": "simple", "complexity_score": 1}

    other_schema = {"type": "object", "properties": {"next_speaker": {"type": "string", "enum": ["user", "model"]}}}
    router["generationConfig"]["responseJsonSchema"] = other_schema
    status, body = generate(api, router)
    assert json.loads(body["candidates"][0]["content"]["parts"][0]["text"]) == {"next_speaker": "user"}

    title = {
        "contents": [{"role": "user", "parts": [{"text": "Summarize the user's primary intent ... [[fake:hang]]"}]}]
    }
    status, body = generate(api, title, model="gemini-3.5-flash-lite")
    assert (status, body["candidates"][0]["content"]["parts"][0]["text"]) == (200, TITLE_TEXT)
    assert [r.kind for r in api.requests] == ["router", "schema", "title"]
    assert all(r.scenario is None for r in api.requests)


def test_google_genai_paths_image_and_models(api: FakeGeminiApi) -> None:
    status, body = generate(api, {"contents": [{"role": "user", "parts": [{"text": "draw [[fake:image]]"}]}]})
    assert status == 200
    parts = body["candidates"][0]["content"]["parts"]
    assert parts[0]["text"]
    assert parts[1]["inlineData"]["mimeType"] == "image/png"
    png = base64.b64decode(parts[1]["inlineData"]["data"])
    assert png == TINY_PNG
    assert png.startswith(b"\x89PNG\r\n\x1a\n")

    with urllib.request.urlopen(f"{api.base_url}/v1beta/models", timeout=5) as response:
        names = [m["name"] for m in json.loads(response.read())["models"]]
    assert f"models/{MODEL}" in names
    assert api.requests[0].kind == "plain"


def test_a_denied_key_lists_models_but_may_neither_count_nor_generate_on_them(api: FakeGeminiApi) -> None:
    api.deny_key("limited", models=(MODEL,))
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}

    def call(method: str, model: str = MODEL) -> tuple[int, Any]:
        request = urllib.request.Request(
            f"{api.base_url}/v1beta/models/{model}:{method}",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "x-goog-api-key": "limited"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            with exc:
                return exc.code, json.loads(exc.read())

    denied = {"error": PERMISSION_DENIED_ERROR}
    assert call("generateContent") == (403, denied)
    assert call("countTokens") == (403, denied)  # the same permission guards a count
    assert call("streamGenerateContent")[0] == 403
    assert call("countTokens", "gemini-2.5-flash")[0] == 200  # another model is allowed
    listing = urllib.request.Request(f"{api.base_url}/v1beta/models", headers={"x-goog-api-key": "limited"})
    with urllib.request.urlopen(listing, timeout=5) as response:
        assert response.status == 200
    assert [r.kind for r in api.requests] == ["denied", "denied", "denied", "count_tokens", "models"]
    assert generate(api, body)[0] == 200  # no key: not the denied one


def test_a_cut_stream_ends_after_one_chunk_without_a_finish_reason(api: FakeGeminiApi) -> None:
    status, raw = stream(api, main_turn("[[fake:cut]]"))
    events = list(iter_sse_events(raw))
    assert status == 200 and text_of(events) == CUT_TEXT
    assert all("finishReason" not in e["candidates"][0] and "usageMetadata" not in e for e in events)


def test_a_reset_stream_sends_one_chunk_then_resets_the_connection_without_the_closing_chunk(
    api: FakeGeminiApi,
) -> None:
    data = json.dumps(main_turn("[[fake:cut:reset]]")).encode()
    head = (
        f"POST /v1beta/models/{MODEL}:streamGenerateContent?alt=sse HTTP/1.1\r\n"
        f"Host: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
    )
    received, reset = b"", False
    with socket.create_connection(("127.0.0.1", api.port), timeout=5) as sock:
        sock.sendall(head.encode() + data)
        while True:  # each recv is bounded by the 5 s socket timeout
            try:
                piece = sock.recv(65536)
            except ConnectionResetError:
                reset = True
                break
            if not piece:
                break
            received += piece
    assert reset and CUT_TEXT.encode() in received and b"0\r\n\r\n" not in received


def test_a_loop_chants_one_line_and_an_empty_answer_after_a_tool_call_is_one_empty_part(api: FakeGeminiApi) -> None:
    _, raw = stream(api, main_turn("[[fake:loop]]"))
    assert text_of(list(iter_sse_events(raw))) == LOOP_LINE * LOOP_REPEATS
    _, raw = stream(api, main_turn("[[fake:empty_after_tool]]"))
    assert next(iter_sse_events(raw))["candidates"][0]["content"]["parts"][0]["functionCall"]["name"] == "read_file"
    answered = [*main_turn("[[fake:empty_after_tool]]")["contents"], {"role": "model", "parts": [{"text": "x"}]}]
    answered.append({"role": "user", "parts": [{"functionResponse": {"name": "read_file", "response": {}}}]})
    _, raw = stream(api, {**main_turn("x"), "contents": answered})
    assert [e["candidates"][0]["content"]["parts"] for e in iter_sse_events(raw)] == [[{"text": ""}]]


def test_stop_does_not_hang_with_hanging_and_stalled_connections() -> None:
    with contextlib.ExitStack() as stack:
        api = FakeGeminiApi().start()
        stack.callback(api.stop)
        sockets = []
        for marker in ("hang", "stall"):
            data = json.dumps(main_turn(f"[[fake:{marker}]]")).encode()
            head = (
                f"POST /v1beta/models/{MODEL}:streamGenerateContent?alt=sse HTTP/1.1\r\n"
                f"Host: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
            )
            sock = stack.enter_context(socket.create_connection(("127.0.0.1", api.port), timeout=5))
            sock.sendall(head.encode() + data)
            sockets.append(sock)
        api.wait_for_requests(2, timeout=5)
        stalled = b""
        while STALL_TEXT.encode() not in stalled:  # each recv is bounded by the 5 s socket timeout
            piece = sockets[1].recv(65536)
            assert piece, "connection closed before the first chunk"
            stalled += piece
        assert stalled.startswith(b"HTTP/1.1 200 OK")

        started = time.monotonic()
        api.stop()
        assert time.monotonic() - started < 1.5

        for sock in sockets:
            # Both connections are closed by the server: EOF (or reset), never a blocked read or a final chunk.
            try:
                rest = sock.recv(65536)
            except ConnectionResetError:
                rest = b""
            assert b"0\r\n\r\n" not in rest


def test_script_prints_port_and_exits_on_sigterm() -> None:
    script = Path(__file__).with_name("fake_gemini_api.py")
    with subprocess.Popen(
        [sys.executable, str(script), "--scenario", "echo:from script"], stdout=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(proc.stdout, selectors.EVENT_READ)
            assert selector.select(timeout=10), "no PORT line within 10 s"
        line = proc.stdout.readline()
        assert line.startswith("PORT=")
        base_url = f"http://127.0.0.1:{int(line.strip().split('=')[1])}"
        _, _, raw = post(f"{base_url}/v1beta/models/{MODEL}:streamGenerateContent?alt=sse", main_turn("x"))
        assert text_of(list(iter_sse_events(raw))) == "from script"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=5) == 0
