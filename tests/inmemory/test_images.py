"""The `images` argument in memory: on the api backend (google-genai on the emulator) each image reaches the model as
an inline part of gemini-ask and gemini-plan; an image outside the project or a private URL is refused before any
request; a backend that takes text only refuses images, saying why and what would see them. gemini-models says
whether the backend has agents. The real warm CLI sending an image: tests/test_server_controls.py."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.types import CallToolResult

from tests.fakes.fake_gemini_api import FakeGeminiApi
from tests.inmemory.conftest import InMemory, on_the_api, text_of

pytestmark = pytest.mark.anyio

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6360000002000154a24f5d"
    "0000000049454e44ae426082"
)


async def ask_and_plan_with_an_image(client: Client, project: Path) -> None:
    """gemini-ask and gemini-plan, each given shot.png (a PNG written to `project`): both answer."""
    (project / "shot.png").write_bytes(PNG)
    result = await client.call_tool("gemini-ask", {"prompt": "what is this", "images": ["shot.png"]})
    plan = await client.call_tool("gemini-plan", {"task": "draw it", "images": ["shot.png"]})
    assert not result.is_error, text_of(result)
    assert not plan.is_error, text_of(plan)


def only_the_png(sent: list[dict[str, object]]) -> bool:
    """Every inline image part the upstream received is that PNG."""
    encoded = base64.b64encode(PNG).decode()
    return all((p.get("mimeType") or p.get("mime_type")) == "image/png" and p["data"] == encoded for p in sent)


async def test_on_the_api_backend_images_reach_the_model_from_ask_and_plan(
    relay: InMemory, emulator: FakeGeminiApi
) -> None:
    async with relay.client(**on_the_api(emulator)) as client:
        await ask_and_plan_with_an_image(client, relay.project)
    sent = emulator.inline_images()
    assert len(sent) == 2 and only_the_png(sent), sent


async def test_an_image_outside_the_project_or_at_a_private_url_is_refused(
    relay: InMemory, emulator: FakeGeminiApi
) -> None:
    (relay.base / "outside.png").write_bytes(PNG)
    async with relay.client(**on_the_api(emulator)) as client:
        result = await client.call_tool("gemini-ask", {"prompt": "x", "images": ["../outside.png"]})
        private = await client.call_tool("gemini-ask", {"prompt": "x", "images": ["https://127.0.0.1/a.png"]})
    assert result.is_error and "resolves outside" in text_of(result), text_of(result)
    assert private.is_error and "Refusing image URL https://127.0.0.1/a.png" in text_of(private), text_of(private)
    assert emulator.inline_images() == []


async def test_a_text_only_backend_refuses_images_with_the_reason(relay: InMemory) -> None:
    (relay.project / "shot.png").write_bytes(PNG)
    async with relay.client() as client:  # the scripted backend refuses what every text-only backend refuses
        result = await client.call_tool("gemini-ask", {"prompt": "what is this", "images": ["shot.png"]})
    assert result.is_error
    assert "takes text prompts only" in text_of(result) and "GEMINI_RELAY_WARM=on" in text_of(result)
    assert relay.backend.specs == []


@pytest.mark.parametrize("backend", ["scripted", "api"])
async def test_gemini_models_says_a_backend_without_agents_has_none(
    relay: InMemory, emulator: FakeGeminiApi, backend: str
) -> None:
    async with relay.client(**(on_the_api(emulator) if backend == "api" else {})) as client:
        result = await client.call_tool("gemini-models", {})
    assert "Agents: this backend has no agents" in text_of(result)
    assert result.structured_content is not None and result.structured_content["agents"] is None


async def test_an_image_swapped_for_a_link_out_while_its_call_waits_in_the_queue_is_sent_as_it_was_checked(
    relay: InMemory, emulator: FakeGeminiApi
) -> None:
    picture = relay.project / "pic.png"
    picture.write_bytes(PNG)
    outside = relay.base / "private.png"
    outside.write_bytes(PNG + b"private bytes from outside the project")
    waiting = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        if message is not None and "Waiting in the queue" in message:
            waiting.set()

    env = on_the_api(emulator, GEMINI_RELAY_MAX_CONCURRENT="1", GEMINI_RELAY_PROGRESS_INTERVAL="0.05")
    results: dict[str, CallToolResult] = {}

    async def call(name: str, arguments: dict[str, Any], client: Client) -> None:
        watch = on_progress if name == "second" else None
        results[name] = await client.call_tool("gemini-ask", arguments, progress_callback=watch)

    with anyio.fail_after(60):
        async with relay.client(**env) as client, anyio.create_task_group() as tg:
            tg.start_soon(call, "first", {"prompt": "[[fake:gate]] hold the only slot"}, client)
            await anyio.to_thread.run_sync(emulator.wait_for_requests, 1)
            tg.start_soon(call, "second", {"prompt": "what is this", "images": ["pic.png"]}, client)
            await waiting.wait()  # checked, and queued behind the first
            picture.unlink()
            picture.symlink_to(outside)
            emulator.gate.set()
    assert not results["second"].is_error, text_of(results["second"])
    assert [p["data"] for p in emulator.inline_images()] == [base64.b64encode(PNG).decode()]


@pytest.mark.parametrize(
    ("name", "data"),
    [("pic.svg", b'<svg xmlns="http://www.w3.org/2000/svg"><rect/></svg>'), ("notes.png", b"plain notes\n")],
)
async def test_a_file_that_is_not_an_image_by_its_content_is_refused_naming_the_field(
    relay: InMemory, emulator: FakeGeminiApi, name: str, data: bytes
) -> None:
    (relay.project / name).write_bytes(data)
    async with relay.client(**on_the_api(emulator)) as client:
        result = await client.call_tool("gemini-ask", {"prompt": "what is this", "images": [name]})
    assert result.is_error
    assert f"images: '{name}' is not a PNG, JPEG, WebP or GIF image by its content" in text_of(result), text_of(result)
    assert not any("generateContent" in r.path for r in emulator.requests)
