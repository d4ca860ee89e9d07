"""The media toolset through the MCP client, on the emulator: files on disk and their links, durable jobs,
idempotent retries billed once, and a clear message for each media failure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import anyio
import mcp_types as types
import pytest
from mcp import Client

from tests.elicitation import Recorder, accept
from tests.fakes.fake_gemini_api import TINY_PNG
from tests.harness import Relay

pytestmark = pytest.mark.anyio


def media_env(state: Path, toolsets: str = "media") -> dict[str, str]:
    return {"GEMINI_MCP_BACKEND": "api", "GEMINI_RELAY_TOOLSETS": toolsets, "GEMINI_RELAY_STATE_DIR": str(state)}


def text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def links(result: types.CallToolResult) -> list[types.ResourceLink]:
    return [b for b in result.content if isinstance(b, types.ResourceLink)]


def facts(result: types.CallToolResult) -> dict[str, Any]:
    data: dict[str, Any] | None = result.structured_content  # the text is for a person: the files, then a line of facts
    assert data is not None, text(result)
    return data


async def call_ok(client: Client, tool: str, args: dict[str, Any]) -> types.CallToolResult:
    result = await client.call_tool(tool, args)
    assert not result.is_error, text(result)
    return result


def assert_files_linked(result: types.CallToolResult, suffix: str, count: int = 1) -> list[Path]:
    found = links(result)
    assert len(found) == count, result.content
    paths = []
    for link in found:
        path = Path(unquote(urlsplit(str(link.uri)).path))
        assert str(link.uri).startswith("file:///") and path.is_file() and path.suffix == suffix
        assert f"Saved to: {path}" in text(result) and f"]({link.uri})" in text(result)
        paths.append(path)
    return paths


async def test_every_generation_tool_answers_with_a_file_on_disk_and_its_link(relay: Relay, tmp_path: Path) -> None:
    (relay.project / "photo.png").write_bytes(TINY_PNG)
    media_dir = (relay.project / "gemini-media").resolve()
    async with relay.client(**media_env(tmp_path / "state")) as client:
        image = await call_ok(client, "gemini-image", {"prompt": "a red square"})
        edit = await call_ok(client, "gemini-image-edit", {"prompt": "make it winter", "images": ["photo.png"]})
        image_set = await call_ok(client, "gemini-image-set", {"masterPrompt": "a fox", "scenes": ["runs", "sleeps"]})
        first = await call_ok(client, "gemini-image-interact", {"input": "a lighthouse"})
        again = await call_ok(client, "gemini-image-interact", {"input": "add fog", "continueLast": True})
        video = await call_ok(client, "gemini-video", {"prompt": "waves"})
        music = await call_ok(client, "gemini-music", {"prompt": "calm piano", "inline": True})
    for path in [
        *assert_files_linked(image, ".png"),
        *assert_files_linked(edit, ".png"),
        *assert_files_linked(image_set, ".png", 3),
        *assert_files_linked(first, ".png"),
        *assert_files_linked(video, ".mp4"),
        *assert_files_linked(music, ".mp3"),
    ]:
        assert path.parent == media_dir
    sidecar = assert_files_linked(again, ".png")[0].with_suffix(".png.json")
    assert json.loads(sidecar.read_text())["previous_interaction_id"] == facts(first)["interaction_id"]
    assert "continued_from_sidecar" not in facts(again)  # this server remembered the id itself
    assert any(isinstance(b, types.AudioContent) for b in music.content)  # inline only on request
    assert not any(isinstance(b, types.ImageContent) for b in image.content)
    assert relay.api.media.generation_count() == 9


async def test_gemini_image_on_the_api_path_honours_output_path_inside_the_project(
    relay: Relay, tmp_path: Path
) -> None:
    async with relay.client(**media_env(tmp_path / "state")) as client:
        named = await call_ok(client, "gemini-image", {"prompt": "a red square", "outputPath": "art/red"})
        escaped = await client.call_tool("gemini-image", {"prompt": "a red square", "outputPath": "../red.png"})
    assert assert_files_linked(named, ".png")[0] == (relay.project / "art" / "red.png").resolve()
    assert escaped.is_error and "outputPath: '../red.png' resolves outside the project root" in text(escaped)
    assert relay.api.media.generation_count() == 1


async def test_an_async_generation_survives_a_server_restart_and_is_collected(relay: Relay, tmp_path: Path) -> None:
    env = media_env(tmp_path / "state")  # the media toolset brings gemini-status and gemini-wait along
    relay.api.media.operation_polls = 3  # the video is still rendering when the first server exits
    async with relay.client(**env) as client:
        started = await call_ok(client, "gemini-video", {"prompt": "slow waves", "async": True})
    job_id = facts(started)["job_id"]
    assert facts(started)["state"] in ("queued", "starting", "running")
    async with relay.client(**env) as client:
        waited = await call_ok(client, "gemini-wait", {"jobId": job_id, "wait": 30})
        status = facts(await call_ok(client, "gemini-status", {"jobId": job_id}))
    assert facts(waited)["state"] == "done"
    async with relay.client(**env) as client:  # a fresh server has no id in memory: the newest sidecar resumes
        await call_ok(client, "gemini-image-interact", {"input": "a lighthouse"})
    async with relay.client(**env) as client:
        resumed = await call_ok(client, "gemini-image-interact", {"input": "add fog", "continueLast": True})
    assert facts(resumed)["continued_from_sidecar"] is True
    assert status["state"] == "done" and len(status["files"]) == 1 and Path(status["files"][0]).is_file()
    assert relay.api.media.generation_count("video") == 1


async def test_with_jobs_and_media_each_tool_is_listed_once(relay: Relay, tmp_path: Path) -> None:
    async with relay.client(**media_env(tmp_path / "state", "jobs,media")) as client:
        names = [t.name for t in (await client.list_tools()).tools]
    assert len(names) == len(set(names)) and {"gemini-status", "gemini-video", "gemini-usage"} <= set(names)


async def test_a_repeated_idempotency_key_bills_once(relay: Relay, tmp_path: Path) -> None:
    args = {"prompt": "a blue circle", "idempotencyKey": "retry-1"}
    async with relay.client(**media_env(tmp_path / "state")) as client:
        first = await call_ok(client, "gemini-image-edit", args)
        second = await call_ok(client, "gemini-image-edit", args)
        counts = json.loads(urlopen_text(relay, "/_control/generations"))
    assert relay.api.media.generation_count("image") == 1 and counts["total"] == 1
    assert facts(second)["reused"] is True and facts(second)["files"] == facts(first)["files"]


async def test_two_identical_calls_in_flight_merge_into_one_job(relay: Relay, tmp_path: Path) -> None:
    relay.api.media.operation_polls = 2
    results: list[types.CallToolResult] = []
    async with relay.client(**media_env(tmp_path / "state")) as client:

        async def one() -> None:
            results.append(await call_ok(client, "gemini-video", {"prompt": "twin waves"}))

        async with anyio.create_task_group() as tg:
            tg.start_soon(one)
            tg.start_soon(one)
        later = await call_ok(client, "gemini-video", {"prompt": "twin waves"})  # not in flight: a new job
    assert {facts(r)["job_id"] for r in results} != {facts(later)["job_id"]}
    assert len({facts(r)["job_id"] for r in results}) == 1
    assert any(facts(r).get("merged") for r in results)
    assert relay.api.media.generation_count("video") == 2


async def test_max_wait_hands_back_the_job_id(relay: Relay, tmp_path: Path) -> None:
    relay.api.media.operation_polls = 3
    async with relay.client(**media_env(tmp_path / "state")) as client:
        result = await call_ok(client, "gemini-video", {"prompt": "slow", "maxWaitMs": 100})
    assert text(result).startswith("Still ") and facts(result)["job_id"]


async def test_safety_quota_and_expired_file_failures_each_say_what_happened(relay: Relay, tmp_path: Path) -> None:
    file_id = relay.api.media.add_file(TINY_PNG, "image/png")
    relay.api.media.expire_file(file_id)
    async with relay.client(**media_env(tmp_path / "state")) as client:
        safety = await client.call_tool("gemini-image-edit", {"prompt": "[[fake:image_safety]] x"})
        quota = await client.call_tool("gemini-image-edit", {"prompt": "[[fake:quota_free]] x"})
        expired = await client.call_tool("gemini-image-edit", {"prompt": "x", "imagesFileUris": [f"files/{file_id}"]})
        outside = await client.call_tool("gemini-image-edit", {"prompt": "x", "images": ["../../etc/passwd"]})
    assert safety.is_error and "blocked by the safety filter" in text(safety)
    assert quota.is_error and "has no free-tier quota (every quota is `limit: 0`)" in text(quota)
    assert "billed project" in text(quota)
    assert expired.is_error and f"files/{file_id} has expired or does not exist" in text(expired)
    assert outside.is_error and "images: '../../etc/passwd' resolves outside" in text(outside)
    assert relay.api.media.generation_count() == 0


async def test_files_upload_list_and_a_confirm_gated_delete(relay: Relay, tmp_path: Path) -> None:
    (relay.project / "ref.png").write_bytes(TINY_PNG)
    async with relay.client(**media_env(tmp_path / "state")) as client:
        uploaded = facts(await call_ok(client, "gemini-files", {"action": "upload", "path": "ref.png"}))
        listed = facts(await call_ok(client, "gemini-files", {"action": "list"}))
        refused = await client.call_tool("gemini-files", {"action": "delete", "name": uploaded["file_uri"]})
        used = await call_ok(client, "gemini-image-edit", {"prompt": "x", "imagesFileUris": [uploaded["file_uri"]]})
        deleted = await call_ok(
            client, "gemini-files", {"action": "delete", "name": uploaded["file_uri"], "confirm": True}
        )
        after = facts(await call_ok(client, "gemini-files", {"action": "list"}))
    assert uploaded["file_uri"] in [f["name"] for f in listed["files"]]
    assert refused.is_error and "confirm: true" in text(refused)
    assert_files_linked(used, ".png")
    assert "Deleted" in text(deleted) and uploaded["file_uri"] not in [f["name"] for f in after["files"]]


async def test_usage_prices_each_call_against_its_own_model(relay: Relay, tmp_path: Path) -> None:
    async with relay.client(**media_env(tmp_path / "state")) as client:
        await call_ok(client, "gemini-image-edit", {"prompt": "one"})
        await call_ok(client, "gemini-music", {"prompt": "two"})
        usage = facts(await call_ok(client, "gemini-usage", {}))
        models = text(await call_ok(client, "gemini-media-models", {}))
    assert [c["model"] for c in usage["calls"]].count("gemini-3.1-flash-image") == 1
    assert "lyria-3-clip-preview" in [c["model"] for c in usage["calls"]]
    assert usage["estimated_usd"] > 0 and usage["rate_card"]["as_of"]
    assert "veo-3.1-generate-preview" in models


def urlopen_text(relay: Relay, path: str) -> str:
    import urllib.request

    with urllib.request.urlopen(relay.api.base_url.rstrip("/") + path, timeout=5) as response:  # noqa: S310
        body: bytes = response.read()
    return body.decode()


async def test_progress_heartbeats_quote_the_generation_while_it_runs(relay: Relay, tmp_path: Path) -> None:
    relay.api.media.operation_polls = 3
    seen: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message or "")

    async with relay.client(**media_env(tmp_path / "state"), GEMINI_HEARTBEAT_MS="200") as client:
        result = await client.call_tool("gemini-video", {"prompt": "beat"}, progress_callback=on_progress)
    assert not result.is_error, text(result)
    assert any("Generating video with veo-3.1-generate-preview" in m for m in seen), seen


@pytest.mark.parametrize(("choice", "deleted"), [("delete", True), ("keep", False)])
async def test_a_delete_without_confirm_asks_a_client_that_can_answer(
    relay: Relay, tmp_path: Path, choice: str, deleted: bool
) -> None:
    (relay.project / "ref.png").write_bytes(TINY_PNG)
    recorder = Recorder(accept(choice))
    async with relay.asking_client(recorder, **media_env(tmp_path / "state")) as client:
        uploaded = facts(await call_ok(client, "gemini-files", {"action": "upload", "path": "ref.png"}))
        answered = await call_ok(client, "gemini-files", {"action": "delete", "name": uploaded["file_uri"]})
        after = facts(await call_ok(client, "gemini-files", {"action": "list"}))
    [params] = recorder.asked
    assert uploaded["file_uri"] in params.message
    assert (answered.structured_content or {})["deleted"] is deleted
    assert (uploaded["file_uri"] not in [f["name"] for f in after["files"]]) is deleted
