"""A gemini-consensus panel the emulator answers each model its own way (the judge too, with tagged JSON), and what
its answer must hold."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

from tests.fakes.fake_gemini_api import USAGE, FakeGeminiApi, LoggedRequest
from tests.test_server_surface import text_of

REVIEW = {"GEMINI_RELAY_TOOLSETS": "review"}
PRO, FLASH, JUDGE, LITE = "gemini-2.5-pro", "gemini-2.5-flash", "gemini-3.1-pro-preview", "gemini-2.5-flash-lite"
AGAINST = f"{FLASH} (against)"
PANEL = {"prompt": "Ship on Friday?", "models": [PRO, {"model": FLASH, "stance": "against"}], "synthesisModel": JUDGE}
TAGGED = {
    "findings": [
        {"text": "The release notes are ready.", "found_by": [PRO, AGAINST], "severity": "low"},
        {"text": "Nobody is on call over the weekend.", "found_by": [AGAINST], "severity": "high"},
    ],
    "disagreements": [
        {
            "topic": "Friday or Monday",
            "positions": [{"position": "Friday", "held_by": [PRO]}, {"position": "Monday", "held_by": [AGAINST]}],
        }
    ],
    "recommendation": "Ship on Monday.",
    "verdict": "fix_first",
}


def generate_requests(api: FakeGeminiApi) -> list[Any]:
    return [r for r in api.requests if "enerateContent" in r.path]


def data_of(result: types.CallToolResult) -> dict[str, Any]:
    assert not result.is_error, text_of(result)
    data: dict[str, Any] | None = result.structured_content
    assert data is not None
    return data


def assert_two_answers_and_a_synthesis_naming_them(data: dict[str, Any], *, calls_each: int = 1) -> None:
    answers = {a["label"]: a for a in data["answers"]}
    assert answers[PRO]["text"] == "Pro: yes, ship it." and answers[PRO]["model"] == PRO
    assert answers[AGAINST]["text"] == "Flash: no, wait for Monday."
    synthesis = data["synthesis"]
    assert synthesis["ok"] and synthesis["model"] == JUDGE
    for call in [*data["answers"], synthesis]:
        assert call["usage"]["input_tokens"] == USAGE["promptTokenCount"] * calls_each
    assert data["usage"]["input_tokens"] == 3 * USAGE["promptTokenCount"] * calls_each  # all three calls
    assert data["estimated_usd"] is not None and data["estimated_usd"] > 0
    assert_tagged(data, review=False)


def prompt_of(request: LoggedRequest) -> str:
    """Every text part the request sent, joined."""
    return "\n".join(p.get("text", "") for c in request.body["contents"] for p in c.get("parts", []))


def assert_judge_saw_both_answers(prompt: str) -> None:
    assert f'<answer model="{PRO}" stance="none">\nPro: yes, ship it.' in prompt
    assert f'<answer model="{AGAINST}" stance="against">\nFlash: no, wait for Monday.' in prompt


def assert_tagged(data: dict[str, Any], *, review: bool) -> None:
    """TAGGED as the tool reports it: who agrees counted from the tags, a severity and a verdict for a review."""
    assert data["tagged"] and data["panel"]["answered"] == [PRO, AGAINST]
    low, high = data["findings"]
    assert (low["found_by"], low["agreement"]) == ([PRO, AGAINST], "all")
    assert (high["found_by"], high["agreement"]) == ([AGAINST], "some")
    assert data["disagreements"] == TAGGED["disagreements"]
    assert data["verdict"] == ("fix_first" if review else None)
    assert ("severity" in high) is review


def by_model(api: FakeGeminiApi, flash: str | int, judge: Any = None, **others: str | int) -> None:
    """Each model's answer; the judge's is TAGGED (as JSON) unless given (a text is sent as it is)."""
    judged = json.dumps(TAGGED if judge is None else judge) if not isinstance(judge, str) else judge
    answers = {PRO: "Pro: yes, ship it.", FLASH: flash, JUDGE: judged, **others}
    api.set_scenario("by_model", json.dumps(answers))
