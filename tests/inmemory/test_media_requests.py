"""What the media tools send upstream, read off the emulator's request log: a reference image reaches the video and
music requests (the first inline one makes a video image-to-video), a 4K image asks for imageSize 4K, gemini-image-set
takes the seed's master_images_* names, and gemini-image-interact's thinkingLevel reaches generation_config."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from gemini_relay.backends.api.media import interactions
from gemini_relay.backends.api.media import video_generation as video
from tests.fakes.fake_gemini_api import TINY_PNG, FakeGeminiApi
from tests.inmemory.conftest import InMemory, on_the_api
from tests.media_results import call_ok

pytestmark = pytest.mark.anyio
PNG_B64 = base64.b64encode(TINY_PNG).decode()


@pytest.fixture(autouse=True)
def quick_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(video, "POLL_FIRST", 0.01)
    monkeypatch.setattr(interactions, "POLL_FIRST", 0.01)


def sent(api: FakeGeminiApi, path_part: str) -> list[Any]:
    return [r.body for r in api.requests if path_part in r.path and r.method == "POST"]


async def test_the_first_inline_reference_makes_a_video_image_to_video(
    relay: InMemory, emulator: FakeGeminiApi
) -> None:
    (relay.project / "still.png").write_bytes(TINY_PNG)
    async with relay.client(**on_the_api(emulator, GEMINI_RELAY_TOOLSETS="media")) as client:
        await call_ok(client, "gemini-video", {"prompt": "the still comes alive", "images": ["still.png"]})
        await call_ok(client, "gemini-video", {"prompt": "waves"})
    with_image, text_only = sent(emulator, ":predictLongRunning")
    assert with_image["instances"][0]["image"] == {"bytesBase64Encoded": PNG_B64, "mimeType": "image/png"}
    assert with_image["instances"][0]["prompt"] == "the still comes alive"
    assert "image" not in text_only["instances"][0]


async def test_a_reference_image_reaches_the_music_request(relay: InMemory, emulator: FakeGeminiApi) -> None:
    async with relay.client(**on_the_api(emulator, GEMINI_RELAY_TOOLSETS="media")) as client:
        await call_ok(client, "gemini-music", {"prompt": "music for this picture", "imagesBase64": [PNG_B64]})
    (body,) = sent(emulator, "/interactions")
    assert body["input"][0] == {"type": "text", "text": "music for this picture"}
    assert body["input"][1] == {"type": "image", "mime_type": "image/png", "data": PNG_B64}
    assert "response_format" not in body  # MP3, the only format the stored material shows a request for


async def test_a_4k_image_request_carries_image_size_4k(relay: InMemory, emulator: FakeGeminiApi) -> None:
    async with relay.client(**on_the_api(emulator, GEMINI_RELAY_TOOLSETS="media")) as client:
        await call_ok(client, "gemini-image-edit", {"prompt": "a poster", "imageSize": "4K", "aspectRatio": "16:9"})
        await call_ok(client, "gemini-image-interact", {"input": "a poster", "imageSize": "4K"})
    (generate,) = sent(emulator, ":generateContent")
    assert generate["generationConfig"]["imageConfig"] == {"aspectRatio": "16:9", "imageSize": "4K"}
    (interaction,) = sent(emulator, "/interactions")
    assert interaction["response_format"]["image_size"] == "4K"


async def test_image_set_takes_the_seeds_master_images_names(relay: InMemory, emulator: FakeGeminiApi) -> None:
    (relay.project / "face.png").write_bytes(TINY_PNG)
    file_id = emulator.media.add_file(TINY_PNG, "image/png")
    args = {
        "masterPrompt": "a fox",
        "scenes": ["runs"],
        "master_images": ["face.png"],
        "masterImagesFileUris": [f"files/{file_id}"],
        "master_images_base64": [PNG_B64],
    }
    async with relay.client(**on_the_api(emulator, GEMINI_RELAY_TOOLSETS="media")) as client:
        await call_ok(client, "gemini-image-set", args)
    master, scene = sent(emulator, ":generateContent")
    parts = master["contents"][0]["parts"]
    references = [p for p in parts if "text" not in p]  # the same bytes twice: the second goes by upload
    assert len(references) == 3 and sum("inlineData" in p for p in references) >= 1
    assert any(file_id in str(p.get("fileData")) for p in references)
    assert len(scene["contents"][0]["parts"]) == len(parts) + 1  # every scene is also given the master


async def test_thinking_level_reaches_the_interactions_generation_config(
    relay: InMemory, emulator: FakeGeminiApi
) -> None:
    async with relay.client(**on_the_api(emulator, GEMINI_RELAY_TOOLSETS="media")) as client:
        await call_ok(client, "gemini-image-interact", {"input": "a lighthouse", "thinkingLevel": "high"})
        await call_ok(client, "gemini-image-interact", {"input": "a lighthouse", "thinking_level": "minimal"})
        await call_ok(client, "gemini-image-interact", {"input": "a lighthouse"})
    high, minimal, default = sent(emulator, "/interactions")
    assert high["generation_config"] == {"thinking_level": "high"}
    assert minimal["generation_config"] == {"thinking_level": "minimal"}
    assert "generation_config" not in default
