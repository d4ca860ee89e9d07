"""A gemini-consensus panel the emulator answers each model its own way, and what its answer must hold."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

from tests.fakes.fake_gemini_api import USAGE, FakeGeminiApi
from tests.test_server_surface import text_of

REVIEW = {"GEMINI_RELAY_TOOLSETS": "review"}
PRO, FLASH, JUDGE = "gemini-2.5-pro", "gemini-2.5-flash", "gemini-3.1-pro-preview"
PANEL = {"prompt": "Ship on Friday?", "models": [PRO, {"model": FLASH, "stance": "against"}], "synthesisModel": JUDGE}


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
    assert answers[f"{FLASH} (against)"]["text"] == "Flash: no, wait for Monday."
    synthesis = data["synthesis"]
    assert synthesis["ok"] and synthesis["model"] == JUDGE
    # The emulator's echo of the synthesis prompt: it holds both answers under their labels.
    assert f'<answer model="{PRO}"' in synthesis["text"] and f'<answer model="{FLASH} (against)"' in synthesis["text"]
    for call in [*data["answers"], synthesis]:
        assert call["usage"]["input_tokens"] == USAGE["promptTokenCount"] * calls_each
    assert data["usage"]["input_tokens"] == 3 * USAGE["promptTokenCount"] * calls_each  # all three calls
    assert data["estimated_usd"] is not None and data["estimated_usd"] > 0


def by_model(api: FakeGeminiApi, flash: str | int) -> None:
    api.set_scenario("by_model", json.dumps({PRO: "Pro: yes, ship it.", FLASH: flash}))
