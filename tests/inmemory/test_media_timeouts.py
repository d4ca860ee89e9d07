"""The media toolset's upstream request timeout (seed 003's GEMINI_TIMEOUT_MS and per-call timeout_ms): a request the
emulator never answers ends the call with a message naming the bound, by either spelling of the argument."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from gemini_relay.config import Settings
from gemini_relay.errors import ConfigError
from gemini_relay.tools.common.media_config import MediaConfig
from tests.fakes.fake_gemini_api import FakeGeminiApi
from tests.inmemory.conftest import InMemory, on_the_api
from tests.media_results import text

pytestmark = pytest.mark.anyio
BOUND = 60.0  # without a request timeout the hung call would wait forever; this bound makes that a failure


def media_config(tmp_path: Path, **env: str) -> MediaConfig:
    return MediaConfig.from_settings(Settings.from_env({"GEMINI_RELAY_PROJECT_ROOT": str(tmp_path), **env}))


async def test_a_hung_image_request_ends_at_the_calls_timeout_by_either_spelling(
    relay: InMemory, emulator: FakeGeminiApi
) -> None:
    with anyio.fail_after(BOUND):
        async with relay.client(**on_the_api(emulator, GEMINI_RELAY_TOOLSETS="media")) as client:
            camel = await client.call_tool("gemini-image-edit", {"prompt": "[[fake:hang]] x", "timeoutMs": 300})
            seed = await client.call_tool(
                "gemini-image-set", {"masterPrompt": "[[fake:hang]] x", "scenes": ["y"], "timeout_ms": 400}
            )
    assert camel.is_error and "did not answer within 300 ms" in text(camel)
    assert seed.is_error and "did not answer within 400 ms" in text(seed)


async def test_gemini_timeout_ms_bounds_every_image_request(relay: InMemory, emulator: FakeGeminiApi) -> None:
    env = on_the_api(emulator, GEMINI_RELAY_TOOLSETS="media", GEMINI_TIMEOUT_MS="350")
    with anyio.fail_after(BOUND):
        async with relay.client(**env) as client:
            result = await client.call_tool("gemini-image-edit", {"prompt": "[[fake:hang]] x"})
    assert result.is_error and "did not answer within 350 ms" in text(result)


def test_the_default_is_a_minute_for_images_two_at_4k_and_the_runs_own_for_video_and_music(tmp_path: Path) -> None:
    default = media_config(tmp_path)
    assert default.request_timeout_ms(None, "1K") == 60_000 and default.request_timeout_ms(None, "4K") == 120_000
    assert default.request_timeout_ms(None, image=False) is None
    assert default.request_timeout_ms(5_000, "4K") == 5_000
    chosen = media_config(tmp_path, GEMINI_TIMEOUT_MS="90000")
    assert chosen.request_timeout_ms(None, "4K") == 90_000 and chosen.request_timeout_ms(None, image=False) == 90_000
    assert chosen.request_timeout_ms(1_000) == 1_000
    with pytest.raises(ConfigError, match="GEMINI_TIMEOUT_MS"):
        media_config(tmp_path, GEMINI_TIMEOUT_MS="soon")
