"""Per-call controls on every backend, end to end: continueLatest continues the newest conversation of the project
(the Gemini CLI cold and warm, the API, agy through its fake) and timeoutSeconds ends a run that outlives it, saying
which limit it hit. The in-memory tier (tests/inmemory/test_controls.py) covers the refusals and every tool."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest

from tests.harness import Relay, install_fake_agy
from tests.test_server_surface import text_of

pytestmark = pytest.mark.anyio

THREAD = re.compile(r"🧵 conversationId: ([A-Za-z0-9_-]+)")
BACKENDS = ["cli-cold", "cli-warm", "api", "agy"]


def env_for(relay: Relay, backend: str, tmp_path: Path) -> dict[str, str]:
    if backend == "api":
        return {"GEMINI_MCP_BACKEND": "api", "GEMINI_CLI_PATH": None, "GEMINI_RELAY_STATE_DIR": str(tmp_path / "s")}  # type: ignore[dict-item]
    if backend == "agy":
        agy = install_fake_agy(relay.base / "bin", relay.base / "fake-agy.log")
        return {"GEMINI_MCP_BACKEND": "agy", "AGY_CLI_PATH": str(agy)}
    return {"GEMINI_RELAY_WARM": "on" if backend == "cli-warm" else "off"}


def thread_of(text: str) -> str:
    found = THREAD.search(text)
    assert found is not None, text
    return found.group(1)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_continue_latest_continues_the_newest_conversation_on_every_backend(
    relay: Relay, backend: str, tmp_path: Path
) -> None:
    async with relay.client(**env_for(relay, backend, tmp_path)) as client:
        refused = await client.call_tool("gemini-ask", {"prompt": "hello", "continueLatest": True})
        await client.call_tool("gemini-ask", {"prompt": "older thread"})
        newest = thread_of(text_of(await client.call_tool("gemini-ask", {"prompt": "newest thread"})))
        result = await client.call_tool("gemini-ask", {"prompt": "and again", "continueLatest": True})
    assert refused.is_error and "continueLatest: no saved" in text_of(refused), text_of(refused)
    assert not result.is_error, text_of(result)
    assert thread_of(text_of(result)) == newest


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_run_past_its_timeout_seconds_fails_naming_that_limit_on_every_backend(
    relay: Relay, backend: str, tmp_path: Path
) -> None:
    stall = "[[agy:hang]] wait" if backend == "agy" else "[[fake:stall]] wait"
    async with relay.client(**env_for(relay, backend, tmp_path)) as client:
        result = await client.call_tool("gemini-ask", {"prompt": stall, "timeoutSeconds": 2})
    assert result.is_error
    text = text_of(result)
    assert "timed out after 2s" in text and "The limit hit was this call's timeoutSeconds (2 s)." in text, text


PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6360000002000154a24f5d"
    "0000000049454e44ae426082"
)


def inline_images(relay: Relay) -> list[dict[str, object]]:
    """The inline image parts of every generate request the emulator saw."""
    found: list[dict[str, object]] = []
    for request in relay.api.requests:
        body = request.body if isinstance(request.body, dict) else {}
        for content in body.get("contents", []):
            found += [p.get("inlineData") or p["inline_data"] for p in content.get("parts", []) if _inline(p)]
    return found


def _inline(part: dict[str, object]) -> bool:
    return "inlineData" in part or "inline_data" in part


@pytest.mark.parametrize("backend", ["api", "cli-warm"])
async def test_images_reach_the_model_on_the_backends_that_see_images(
    relay: Relay, backend: str, tmp_path: Path
) -> None:
    (relay.project / "shot.png").write_bytes(PNG)
    async with relay.client(**env_for(relay, backend, tmp_path)) as client:
        result = await client.call_tool("gemini-ask", {"prompt": "what is this", "images": ["shot.png"]})
        plan = await client.call_tool("gemini-plan", {"task": "draw it", "images": ["shot.png"]})
    assert not result.is_error, text_of(result)
    assert not plan.is_error, text_of(plan)
    sent = inline_images(relay)
    # Both calls sent the image (the CLI repeats a turn's parts in its router request too).
    assert len(sent) >= 2 and all((p.get("mimeType") or p.get("mime_type")) == "image/png" for p in sent), sent
    assert {p["data"] for p in sent} == {base64.b64encode(PNG).decode()}


@pytest.mark.parametrize("backend", ["cli-cold", "agy"])
async def test_images_are_refused_with_the_reason_on_backends_that_cannot_see_them(
    relay: Relay, backend: str, tmp_path: Path
) -> None:
    (relay.project / "shot.png").write_bytes(PNG)
    async with relay.client(**env_for(relay, backend, tmp_path)) as client:
        result = await client.call_tool("gemini-ask", {"prompt": "what is this", "images": ["shot.png"]})
    assert result.is_error
    assert "takes text prompts only" in text_of(result) and "GEMINI_RELAY_WARM=on" in text_of(result)


async def test_an_image_outside_the_project_is_refused(relay: Relay, tmp_path: Path) -> None:
    (relay.base / "outside.png").write_bytes(PNG)
    async with relay.client(**env_for(relay, "api", tmp_path)) as client:
        result = await client.call_tool("gemini-ask", {"prompt": "x", "images": ["../outside.png"]})
        private = await client.call_tool("gemini-ask", {"prompt": "x", "images": ["https://127.0.0.1/a.png"]})
    assert result.is_error and "resolves outside" in text_of(result), text_of(result)
    assert private.is_error and "Refusing image URL https://127.0.0.1/a.png" in text_of(private), text_of(private)
    assert inline_images(relay) == []


def image_facts(result: object) -> dict[str, object]:
    data = getattr(result, "structured_content", None)
    assert isinstance(data, dict), result
    return data


async def test_gemini_image_through_the_api_takes_the_media_job_controls_and_a_repeated_key_bills_once(
    relay: Relay, tmp_path: Path
) -> None:
    args = {"prompt": "a blue circle", "idempotencyKey": "image-retry-1"}
    async with relay.client(**env_for(relay, "api", tmp_path)) as client:  # the default toolset only
        first = await client.call_tool("gemini-image", args)
        second = await client.call_tool("gemini-image", args)
        billed = relay.api.media.generation_count("image")
        started = await client.call_tool("gemini-image", {"prompt": "a green square", "async": True})
    assert not first.is_error and not second.is_error, text_of(second)
    assert image_facts(second)["reused"] is True and image_facts(second)["files"] == image_facts(first)["files"]
    assert billed == 1
    assert not started.is_error, text_of(started)
    assert image_facts(started)["job_id"] and text_of(started).startswith("Started as a job")


async def test_gemini_image_on_agy_refuses_the_job_controls_with_the_reason(relay: Relay, tmp_path: Path) -> None:
    async with relay.client(**env_for(relay, "agy", tmp_path)) as client:
        result = await client.call_tool("gemini-image", {"prompt": "[[agy:image]] x", "idempotencyKey": "k"})
    assert result.is_error
    assert "async, maxWaitMs and idempotencyKey apply when the Gemini API makes the image" in text_of(result)


async def test_gemini_models_lists_agys_agents(relay: Relay, tmp_path: Path) -> None:
    (relay.project / ".agents" / "agents" / "reviewer").mkdir(parents=True)
    (relay.project / ".agents" / "agents" / "reviewer" / "agent.md").write_text("# reviewer\n", encoding="utf-8")
    async with relay.client(**env_for(relay, "agy", tmp_path)) as client:
        result = await client.call_tool("gemini-models", {})
    assert not result.is_error, text_of(result)
    assert "Agents — pass the name as `agent`:\n- reviewer" in text_of(result)
    assert image_facts(result)["agents"] == ["reviewer"]


@pytest.mark.parametrize("backend", ["cli-cold", "api"])
async def test_gemini_models_says_a_backend_without_agents_has_none(relay: Relay, backend: str, tmp_path: Path) -> None:
    async with relay.client(**env_for(relay, backend, tmp_path)) as client:
        result = await client.call_tool("gemini-models", {})
    assert "Agents: this backend has no agents" in text_of(result)
    assert image_facts(result)["agents"] is None
