"""The emulator scenarios added for the review toolset, over real loopback HTTP (no CLI)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from .fake_gemini_api import (
    ECHO_PREFIX,
    SEARCH_ANSWER_TEXT,
    SEARCH_SOURCES,
    SEARCH_SUMMARY_TEXT,
    FakeGeminiApi,
    iter_sse_events,
)
from .test_fake_gemini_api import MODEL, main_turn, stream


@pytest.fixture
def api() -> Iterator[FakeGeminiApi]:
    with FakeGeminiApi() as fake:
        yield fake


def texts(raw: bytes) -> str:
    return "".join(
        p.get("text", "") for e in iter_sse_events(raw) for p in e["candidates"][0].get("content", {}).get("parts", [])
    )


def parts(raw: bytes) -> list[dict[str, Any]]:
    return [p for e in iter_sse_events(raw) for p in e["candidates"][0].get("content", {}).get("parts", [])]


def test_the_search_scenario_calls_google_web_search_then_cites_what_it_returned(api: FakeGeminiApi) -> None:
    _, raw = stream(api, main_turn("[[fake:search:tides today]] look it up"))
    assert parts(raw) == [{"functionCall": {"name": "google_web_search", "args": {"query": "tides today"}}}]
    tool_output = "Web search results:\n\nSources:\n[1] A (https://a.example/x)\n[2] B (https://b.example/y)"
    history = [
        {"role": "user", "parts": [{"text": "[[fake:search:tides today]] look it up"}]},
        {"role": "model", "parts": parts(raw)},
    ]
    body = main_turn("", history=history)
    body["contents"][-1] = {
        "role": "user",
        "parts": [{"functionResponse": {"name": "google_web_search", "response": {"output": tool_output}}}],
    }
    _, answer = stream(api, body)
    assert texts(answer) == f"{SEARCH_ANSWER_TEXT}\n\nSources:\n- https://a.example/x\n- https://b.example/y"


def test_a_google_search_grounded_request_gets_grounding_metadata(api: FakeGeminiApi) -> None:
    body = {"contents": [{"role": "user", "parts": [{"text": "tides"}]}], "tools": [{"googleSearch": {}}]}
    _, raw = stream(api, body)
    events = list(iter_sse_events(raw))
    assert texts(raw) == SEARCH_SUMMARY_TEXT
    chunks = events[-1]["candidates"][0]["groundingMetadata"]["groundingChunks"]
    assert [(c["web"]["title"], c["web"]["uri"]) for c in chunks] == list(SEARCH_SOURCES)
    assert api.requests[-1].kind == "web_search"


def test_json_turns_answers_by_turn_number_and_repeats_the_last(api: FakeGeminiApi) -> None:
    api.set_scenario("json_turns", json.dumps(["not json", {"a": 1}]))
    _, first = stream(api, main_turn("q"))
    history = [{"role": "user", "parts": [{"text": "q"}]}, {"role": "model", "parts": [{"text": "not json"}]}]
    _, second = stream(api, main_turn("fix it", history=history))
    longer = [*history, {"role": "user", "parts": [{"text": "fix it"}]}, {"role": "model", "parts": [{"text": "x"}]}]
    _, third = stream(api, main_turn("again", history=longer))
    assert (texts(first), texts(second), texts(third)) == ("not json", '{"a": 1}', '{"a": 1}')


def test_capacity_for_one_model_spares_the_others(api: FakeGeminiApi) -> None:
    status, raw = stream(api, main_turn(f"[[fake:quota_for:{MODEL}]] hi"))
    assert status == 429 and json.loads(raw)["error"]["status"] == "RESOURCE_EXHAUSTED"
    status, raw = stream(api, main_turn(f"[[fake:unavailable_for:{MODEL}]] hi"))
    assert status == 503 and json.loads(raw)["error"]["status"] == "UNAVAILABLE"
    status, raw = stream(api, main_turn(f"[[fake:quota_for:{MODEL}]] hi"), model="gemini-2.5-flash")
    assert status == 200 and texts(raw).startswith(ECHO_PREFIX)
