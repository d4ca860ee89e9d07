"""Native response schemas and Google Search grounding through the API."""

from __future__ import annotations

import pytest

from gemini_relay.content.search_prompt import source_urls
from gemini_relay.core.events import TextDelta
from tests.fakes.fake_gemini_api import SEARCH_SOURCES, SEARCH_SUMMARY_TEXT

from .conftest import ApiWorld, collect, finished

pytestmark = pytest.mark.anyio

SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": ["ok", "bad"]}, "score": {"type": "integer", "minimum": 3}},
    "required": ["verdict", "score"],
}


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "single"])
async def test_a_json_schema_is_sent_natively_and_the_answer_is_structured_output(
    world: ApiWorld, stream: bool
) -> None:
    done = finished(await collect(world.backend(stream=stream), world.spec("rate it", json_schema=SCHEMA)))
    config = world.api.requests[-1].body["generationConfig"]
    assert config["responseMimeType"] == "application/json" and config["responseJsonSchema"] == SCHEMA
    assert done.has_structured_output and done.structured_output == {"verdict": "ok", "score": 3}
    assert world.api.requests[-1].kind == "schema"


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "single"])
async def test_gemini_search_grounds_on_google_search_and_appends_the_sources(world: ApiWorld, stream: bool) -> None:
    events = await collect(world.backend(stream=stream), world.spec("what is it?", tool="gemini-search"))
    assert world.api.requests[-1].body["tools"] == [{"googleSearch": {}}]
    done = finished(events)
    assert done.text is not None and done.text.startswith(SEARCH_SUMMARY_TEXT + "\n\nSources:\n")
    for index, (title, uri) in enumerate(SEARCH_SOURCES, start=1):
        assert f"[{index}] {title} ({uri})" in done.text
    assert source_urls(done.text) == [uri for _, uri in SEARCH_SOURCES]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == done.text


async def test_other_tools_get_no_search_tool(world: ApiWorld) -> None:
    await collect(world.backend(), world.spec("hi"))
    assert "tools" not in world.api.requests[-1].body
