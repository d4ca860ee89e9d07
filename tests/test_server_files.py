"""Files the relay writes land where they were asked to and nowhere else: with the fake agy making the image, a link
planted at a temporary name in the project is replaced, never followed. The rest (the api path, a link at the final
name, a destination the OS cannot take refused before anything is generated or billed):
tests/inmemory/test_image_destinations.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness import Relay
from tests.media_results import assert_saved_not_through, plant_outside, text

pytestmark = pytest.mark.anyio


async def test_a_link_named_like_the_temporary_file_is_not_followed_on_agy(agy_relay: Relay, tmp_path: Path) -> None:
    victims = plant_outside(tmp_path, agy_relay.project)
    async with agy_relay.client() as client:
        result = await client.call_tool("gemini-image", {"prompt": "[[agy:image]] x", "outputPath": "art/red.png"})
    assert not result.is_error, text(result)
    saved = agy_relay.project / "art" / "red.png"
    assert_saved_not_through(saved, victims)
