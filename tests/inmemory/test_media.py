"""The media toolset in memory, on the real api backend and the emulator (google-genai over HTTP to a thread of this
process): files on disk and their links, idempotent retries billed once, calls in flight merged, maxWaitMs handing
back the job, a clear message for each media failure, the Files API with a confirm-gated delete, usage priced per
model, progress heartbeats. A job that outlives its server: tests/test_server_media.py."""

from __future__ import annotations

import json

import anyio
import mcp_types as types
import pytest

from gemini_relay.backends.api.media import interactions
from gemini_relay.backends.api.media import video_generation as video
from tests.elicitation import OFF_SCHEMA, Recorder, accept, let_the_client_send_anything, off_schema
from tests.fakes.fake_gemini_api import TINY_PNG, FakeGeminiApi
from tests.inmemory.conftest import InMemory, on_the_api
from tests.media_results import assert_files_linked, call_ok, facts, text

pytestmark = pytest.mark.anyio
HELD_BOUND = 30.0  # a held operation is let go by the first heartbeat that quotes it; a loaded machine may be slow


@pytest.fixture(autouse=True)
def quick_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    """The emulator's operations finish after a set number of polls: the relay's first look, not its back-off,
    needs no half second here (the polling itself is what runs)."""
    monkeypatch.setattr(video, "POLL_FIRST", 0.01)
    monkeypatch.setattr(interactions, "POLL_FIRST", 0.01)
    monkeypatch.setattr(
        video, "POLL_MAX", 0.2
    )  # a held operation is polled often enough to end soon after it is let go


def media_env(api: FakeGeminiApi, toolsets: str = "media") -> dict[str, str]:
    return on_the_api(api, GEMINI_RELAY_TOOLSETS=toolsets)


async def test_every_generation_tool_answers_with_a_file_on_disk_and_its_link(
    relay: InMemory, emulator: FakeGeminiApi
) -> None:
    (relay.project / "photo.png").write_bytes(TINY_PNG)
    media_dir = (relay.project / "gemini-media").resolve()
    async with relay.client(**media_env(emulator)) as client:
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
    assert emulator.media.generation_count() == 9


async def test_gemini_image_on_the_api_path_honours_output_path_inside_the_project(
    relay: InMemory, emulator: FakeGeminiApi
) -> None:
    async with relay.client(**media_env(emulator)) as client:
        named = await call_ok(client, "gemini-image", {"prompt": "a red square", "outputPath": "art/red"})
        escaped = await client.call_tool("gemini-image", {"prompt": "a red square", "outputPath": "../red.png"})
    assert assert_files_linked(named, ".png")[0] == (relay.project / "art" / "red.png").resolve()
    assert escaped.is_error and "outputPath: '../red.png' resolves outside the project root" in text(escaped)
    assert emulator.media.generation_count() == 1


async def test_with_jobs_and_media_each_tool_is_listed_once(relay: InMemory, emulator: FakeGeminiApi) -> None:
    async with relay.client(**media_env(emulator, "jobs,media")) as client:
        names = [t.name for t in (await client.list_tools()).tools]
    assert len(names) == len(set(names)) and {"gemini-status", "gemini-video", "gemini-usage"} <= set(names)


async def test_a_repeated_idempotency_key_bills_once(relay: InMemory, emulator: FakeGeminiApi) -> None:
    args = {"prompt": "a blue circle", "idempotencyKey": "retry-1"}
    async with relay.client(**media_env(emulator)) as client:
        first = await call_ok(client, "gemini-image-edit", args)
        second = await call_ok(client, "gemini-image-edit", args)
        counts = json.loads(urlopen_text(emulator, "/_control/generations"))
    assert emulator.media.generation_count("image") == 1 and counts["total"] == 1
    assert facts(second)["reused"] is True and facts(second)["files"] == facts(first)["files"]


async def test_two_identical_calls_in_flight_merge_into_one_job(relay: InMemory, emulator: FakeGeminiApi) -> None:
    emulator.media.operation_polls = 2
    results: list[types.CallToolResult] = []
    async with relay.client(**media_env(emulator)) as client:

        async def one() -> None:
            results.append(await call_ok(client, "gemini-video", {"prompt": "twin waves"}))

        async with anyio.create_task_group() as tg:
            tg.start_soon(one)
            tg.start_soon(one)
        later = await call_ok(client, "gemini-video", {"prompt": "twin waves"})  # not in flight: a new job
    assert {facts(r)["job_id"] for r in results} != {facts(later)["job_id"]}
    assert len({facts(r)["job_id"] for r in results}) == 1
    assert any(facts(r).get("merged") for r in results)
    assert emulator.media.generation_count("video") == 2


async def test_max_wait_hands_back_the_job_id(relay: InMemory, emulator: FakeGeminiApi) -> None:
    emulator.media.operation_polls = 3
    async with relay.client(**media_env(emulator)) as client:
        result = await call_ok(client, "gemini-video", {"prompt": "slow", "maxWaitMs": 100})
    assert text(result).startswith("Still ") and facts(result)["job_id"]


async def test_safety_quota_and_expired_file_failures_each_say_what_happened(
    relay: InMemory, emulator: FakeGeminiApi
) -> None:
    file_id = emulator.media.add_file(TINY_PNG, "image/png")
    emulator.media.expire_file(file_id)
    async with relay.client(**media_env(emulator)) as client:
        safety = await client.call_tool("gemini-image-edit", {"prompt": "[[fake:image_safety]] x"})
        quota = await client.call_tool("gemini-image-edit", {"prompt": "[[fake:quota_free]] x"})
        expired = await client.call_tool("gemini-image-edit", {"prompt": "x", "imagesFileUris": [f"files/{file_id}"]})
        outside = await client.call_tool("gemini-image-edit", {"prompt": "x", "images": ["../../etc/passwd"]})
    assert safety.is_error and "blocked by the safety filter" in text(safety)
    assert quota.is_error and "has no free-tier quota (every quota is `limit: 0`)" in text(quota)
    assert "billed project" in text(quota)
    assert expired.is_error and f"files/{file_id} has expired or does not exist" in text(expired)
    assert outside.is_error and "images: '../../etc/passwd' resolves outside" in text(outside)
    assert emulator.media.generation_count() == 0


async def test_files_upload_list_and_a_confirm_gated_delete(relay: InMemory, emulator: FakeGeminiApi) -> None:
    (relay.project / "ref.png").write_bytes(TINY_PNG)
    async with relay.client(**media_env(emulator)) as client:
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


async def test_usage_prices_each_call_against_its_own_model(relay: InMemory, emulator: FakeGeminiApi) -> None:
    async with relay.client(**media_env(emulator)) as client:
        await call_ok(client, "gemini-image-edit", {"prompt": "one"})
        await call_ok(client, "gemini-music", {"prompt": "two"})
        usage = facts(await call_ok(client, "gemini-usage", {}))
        models = text(await call_ok(client, "gemini-media-models", {}))
    assert [c["model"] for c in usage["calls"]].count("gemini-3.1-flash-image") == 1
    assert "lyria-3-clip-preview" in [c["model"] for c in usage["calls"]]
    assert usage["estimated_usd"] > 0 and usage["rate_card"]["as_of"]
    assert "veo-3.1-generate-preview" in models


def urlopen_text(api: FakeGeminiApi, path: str) -> str:
    import urllib.request

    with urllib.request.urlopen(api.base_url.rstrip("/") + path, timeout=5) as response:  # noqa: S310
        body: bytes = response.read()
    return body.decode()


async def test_progress_heartbeats_quote_the_generation_while_it_runs(relay: InMemory, emulator: FakeGeminiApi) -> None:
    emulator.media.operation_polls = 1_000_000  # held until a heartbeat has quoted it: no race with the clock
    seen: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message or "")
        if "Generating video with veo-3.1-generate-preview" in (message or ""):
            emulator.media.finish_operations()

    with anyio.fail_after(HELD_BOUND):
        async with relay.client(**media_env(emulator), GEMINI_HEARTBEAT_MS="50") as client:
            result = await client.call_tool("gemini-video", {"prompt": "beat"}, progress_callback=on_progress)
    assert not result.is_error, text(result)
    assert any("Generating video with veo-3.1-generate-preview" in m for m in seen), seen


@pytest.mark.parametrize(("choice", "deleted"), [("delete", True), ("keep", False)])
async def test_a_delete_without_confirm_asks_a_client_that_can_answer(
    relay: InMemory, emulator: FakeGeminiApi, choice: str, deleted: bool
) -> None:
    (relay.project / "ref.png").write_bytes(TINY_PNG)
    recorder = Recorder(accept(choice))
    async with relay.asking_client(recorder, **media_env(emulator)) as client:
        uploaded = facts(await call_ok(client, "gemini-files", {"action": "upload", "path": "ref.png"}))
        answered = await call_ok(client, "gemini-files", {"action": "delete", "name": uploaded["file_uri"]})
        after = facts(await call_ok(client, "gemini-files", {"action": "list"}))
    [params] = recorder.asked
    assert uploaded["file_uri"] in params.message
    assert (answered.structured_content or {})["deleted"] is deleted
    assert (uploaded["file_uri"] not in [f["name"] for f in after["files"]]) is deleted


@pytest.mark.parametrize("raw", OFF_SCHEMA)
async def test_a_delete_answered_off_the_form_keeps_the_file_and_says_the_answer_was_invalid(
    relay: InMemory, emulator: FakeGeminiApi, monkeypatch: pytest.MonkeyPatch, raw: dict[str, object]
) -> None:
    let_the_client_send_anything(monkeypatch)
    (relay.project / "ref.png").write_bytes(TINY_PNG)
    recorder = Recorder(off_schema(raw))
    async with relay.asking_client(recorder, **media_env(emulator)) as client:
        uploaded = facts(await call_ok(client, "gemini-files", {"action": "upload", "path": "ref.png"}))
        answered = await client.call_tool("gemini-files", {"action": "delete", "name": uploaded["file_uri"]})
        after = facts(await call_ok(client, "gemini-files", {"action": "list"}))
    assert answered.is_error and "internal error" not in text(answered).lower()
    assert "confirm: " in text(answered) and "the client's answer was not one the question offered" in text(answered)
    assert uploaded["file_uri"] in [f["name"] for f in after["files"]]


async def test_gemini_image_through_the_api_takes_the_media_job_controls_and_a_repeated_key_bills_once(
    relay: InMemory, emulator: FakeGeminiApi
) -> None:
    args = {"prompt": "a blue circle", "idempotencyKey": "image-retry-1"}
    # gemini-image is in the default toolset: the media toolset is not needed (jobs: gemini-wait collects the job
    # started with async before this server stops)
    async with relay.client(**on_the_api(emulator, GEMINI_RELAY_TOOLSETS="jobs")) as client:
        first = await call_ok(client, "gemini-image", args)
        second = await call_ok(client, "gemini-image", args)
        billed = emulator.media.generation_count("image")
        started = await call_ok(client, "gemini-image", {"prompt": "a green square", "async": True})
        waited = await call_ok(client, "gemini-wait", {"jobId": facts(started)["job_id"], "wait": 30})
    assert facts(second)["reused"] is True and facts(second)["files"] == facts(first)["files"]
    assert billed == 1
    assert facts(started)["job_id"] and text(started).startswith("Started as a job")
    assert facts(waited)["state"] == "done"
