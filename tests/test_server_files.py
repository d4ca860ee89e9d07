"""Files the relay writes land where they were asked to and nowhere else: a link planted in the project (at the
temporary name or the final one) is replaced, never followed, and a destination the OS cannot take is refused by
field before anything is generated (nothing billed)."""

from __future__ import annotations

from pathlib import Path

import mcp_types as types
import pytest

from tests.harness import Relay
from tests.media_results import text
from tests.test_server_image import image_runs
from tests.test_server_media import media_env

pytestmark = pytest.mark.anyio

PLANTED = b"precious: not an image"


def plant_links(directory: Path, name: str, outside: Path) -> list[Path]:
    """Links named like the file the relay writes and the temporary names it used to write through."""
    directory.mkdir(parents=True, exist_ok=True)
    victims = []
    for n, link in enumerate((f"{name}.part", f"{name}.json", f"{name}.json.part")):
        victim = outside / f"victim-{n}"
        victim.write_bytes(PLANTED)
        (directory / link).symlink_to(victim)
        victims.append(victim)
    return victims


async def test_a_link_named_like_the_temporary_file_is_not_followed_on_the_api_path(
    relay: Relay, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    victims = plant_links(relay.project / "art", "red.png", outside)
    async with relay.client(**media_env(tmp_path / "state")) as client:
        result = await client.call_tool("gemini-image", {"prompt": "a red square", "outputPath": "art/red.png"})
    assert not result.is_error, text(result)
    saved = relay.project / "art" / "red.png"
    assert f"Saved to: {saved.resolve()}" in text(result) and str(outside) not in text(result)
    assert not saved.is_symlink() and saved.read_bytes().startswith(b"\x89PNG")
    assert [v.read_bytes() for v in victims] == [PLANTED] * len(victims)


async def test_a_link_named_like_the_temporary_file_is_not_followed_on_agy(agy_relay: Relay, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    victims = plant_links(agy_relay.project / "art", "red.png", outside)
    async with agy_relay.client() as client:
        result = await client.call_tool("gemini-image", {"prompt": "[[agy:image]] x", "outputPath": "art/red.png"})
    assert not result.is_error, text(result)
    saved = agy_relay.project / "art" / "red.png"
    assert not saved.is_symlink() and saved.read_bytes().startswith(b"\x89PNG")
    assert [v.read_bytes() for v in victims] == [PLANTED] * len(victims)


async def test_a_link_at_the_final_name_is_replaced_not_written_through_on_agy(
    agy_relay: Relay, tmp_path: Path
) -> None:
    victim = tmp_path / "victim.png"
    victim.write_bytes(PLANTED)
    (agy_relay.project / "art").mkdir()
    (agy_relay.project / "art" / "red.png").symlink_to(agy_relay.project / "art" / "dangling.png")
    async with agy_relay.client() as client:
        result = await client.call_tool("gemini-image", {"prompt": "[[agy:image]] x", "outputPath": "art/red.png"})
    assert not result.is_error, text(result)
    assert not (agy_relay.project / "art" / "red.png").is_symlink()
    assert not (agy_relay.project / "art" / "dangling.png").exists()


def assert_refused(result: types.CallToolResult, reason: str) -> None:
    assert result.is_error
    assert text(result).startswith("Error executing gemini-image: Invalid arguments for gemini-image: outputPath: ")
    assert reason in text(result)


@pytest.mark.parametrize("name", ["x" * 255, "x" * 252 + ".pn", "é" * 127])
async def test_an_output_name_too_long_once_suffixed_is_refused_before_the_api_bills(
    relay: Relay, tmp_path: Path, name: str
) -> None:
    async with relay.client(**media_env(tmp_path / "state")) as client:
        result = await client.call_tool("gemini-image", {"prompt": "a red square", "outputPath": f"art/{name}"})
    assert_refused(result, "the limit is 255")
    assert relay.api.media.generation_count() == 0


async def test_an_output_name_too_long_once_suffixed_is_refused_before_agy_runs(agy_relay: Relay) -> None:
    async with agy_relay.client() as client:
        result = await client.call_tool("gemini-image", {"prompt": "[[agy:image]] x", "outputPath": "x" * 255})
    assert_refused(result, "the limit is 255")
    assert image_runs(agy_relay) == 0


async def test_a_path_too_long_in_the_project_is_refused_before_the_api_bills(relay: Relay, tmp_path: Path) -> None:
    deep = "/".join(["d" * 200] * 20 + ["d" * 60])  # each part and the argument fit; under the project root not
    async with relay.client(**media_env(tmp_path / "state")) as client:
        result = await client.call_tool("gemini-image", {"prompt": "a red square", "outputPath": f"{deep}/red.png"})
    assert_refused(result, "(PATH_MAX 4096)")
    assert relay.api.media.generation_count() == 0
