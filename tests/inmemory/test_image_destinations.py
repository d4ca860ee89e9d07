"""Where gemini-image's file goes, in memory. On a backend whose agent makes the file itself (agy's kind, scripted:
tests/inmemory/scripted.py ScriptedImageBackend, copying with agy's own code) a destination outside the project
root, a default folder linked out of it, or a path the OS cannot take is refused by name before the run starts
(nothing generated); a saved image is recorded in its job; a link planted at the temporary or the final name is
replaced, never followed. On the api backend (the emulator) the same refusals come before anything is billed and a
planted link is not followed either. agy itself making the file: tests/test_server_agy.py, test_server_image.py,
test_server_files.py."""

from __future__ import annotations

import mcp_types as types
import pytest

from gemini_relay.jobs.store.file_store import FileJobStore
from tests.fakes.fake_gemini_api import FakeGeminiApi
from tests.inmemory.conftest import InMemory, on_the_api, text_of
from tests.inmemory.scripted import ScriptedImageBackend
from tests.media_results import assert_saved_not_through, plant_outside, text

pytestmark = pytest.mark.anyio


@pytest.fixture
def makes_images(relay: InMemory) -> InMemory:
    """The in-memory world, served by a scripted agent that makes image files itself."""
    relay.backend = ScriptedImageBackend(project_root=relay.project, agent_state=relay.base / "agent-state")
    return relay


@pytest.mark.parametrize("output_path", ["../out.png", "link/out.png", "link/", "~/out.png"])
async def test_an_escaping_output_path_is_refused_by_name_before_the_agent_runs(
    makes_images: InMemory, output_path: str
) -> None:
    (makes_images.project / "link").symlink_to(makes_images.base)
    async with makes_images.client() as client:  # `~` is this process's home, outside the project too
        result = await client.call_tool("gemini-image", {"prompt": "x", "outputPath": output_path})
    assert result.is_error
    assert text_of(result).startswith(
        f"Error executing gemini-image: Invalid arguments for gemini-image: outputPath: {output_path!r} resolves "
        "outside the project root"
    )
    assert makes_images.backend.specs == []
    assert not list(makes_images.base.glob("*.png"))


async def test_a_default_image_folder_symlinked_out_of_the_root_is_refused_before_the_agent_runs(
    makes_images: InMemory,
) -> None:
    outside = makes_images.base / "elsewhere"
    outside.mkdir()
    (makes_images.project / "gemini-images").symlink_to(outside)
    async with makes_images.client() as client:
        result = await client.call_tool("gemini-image", {"prompt": "x"})
        inside = await client.call_tool("gemini-image", {"prompt": "x", "outputPath": "art/"})
    assert result.is_error
    assert text_of(result).startswith("Error executing gemini-image: The default image folder ")
    assert "resolves outside the project root" in text_of(result)
    assert list(outside.iterdir()) == []
    assert not inside.is_error, text_of(inside)  # an explicit destination inside the root still works
    assert len(makes_images.backend.specs) == 1


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("a\x00b.png", "a path cannot contain a NUL byte"),
        ("x" * 300, "a path component is 300 bytes; the limit is 255"),
        ("x" * 255, "the limit is 255"),  # too long once the agent's suffix is added
    ],
)
async def test_an_output_path_the_os_cannot_take_is_a_field_named_error(
    makes_images: InMemory, value: str, reason: str
) -> None:
    async with makes_images.client() as client:
        result = await client.call_tool("gemini-image", {"prompt": "x", "outputPath": value})
    assert text_of(result).startswith("Error executing gemini-image: Invalid arguments for gemini-image: outputPath: ")
    assert reason in text_of(result)
    assert makes_images.backend.specs == []


async def test_a_saved_image_is_recorded_in_its_job_for_the_page(makes_images: InMemory) -> None:
    async with makes_images.client() as client:
        result = await client.call_tool("gemini-image", {"prompt": "x", "outputPath": "art/"})
    assert not result.is_error and result.meta is not None, text_of(result)
    store = FileJobStore(makes_images.base / "state")
    recorded = [store.files(job_id) for job_id in store.job_ids()]
    assert recorded == [[result.meta["path"]]]


async def test_a_link_named_like_the_temporary_file_is_not_followed_by_the_agents_copy(makes_images: InMemory) -> None:
    victims = plant_outside(makes_images.base, makes_images.project)
    async with makes_images.client() as client:
        result = await client.call_tool("gemini-image", {"prompt": "x", "outputPath": "art/red.png"})
    assert not result.is_error, text_of(result)
    saved = makes_images.project / "art" / "red.png"
    assert_saved_not_through(saved, victims)


async def test_a_link_at_the_final_name_is_replaced_not_written_through(makes_images: InMemory) -> None:
    (makes_images.project / "art").mkdir()
    (makes_images.project / "art" / "red.png").symlink_to(makes_images.project / "art" / "dangling.png")
    async with makes_images.client() as client:
        result = await client.call_tool("gemini-image", {"prompt": "x", "outputPath": "art/red.png"})
    assert not result.is_error, text_of(result)
    assert not (makes_images.project / "art" / "red.png").is_symlink()
    assert not (makes_images.project / "art" / "dangling.png").exists()


def assert_refused(result: types.CallToolResult, reason: str) -> None:
    assert result.is_error
    assert text(result).startswith("Error executing gemini-image: Invalid arguments for gemini-image: outputPath: ")
    assert reason in text(result)


async def test_a_link_named_like_the_temporary_file_is_not_followed_on_the_api_path(
    relay: InMemory, emulator: FakeGeminiApi
) -> None:
    victims = plant_outside(relay.base, relay.project)
    async with relay.client(**on_the_api(emulator)) as client:
        result = await client.call_tool("gemini-image", {"prompt": "a red square", "outputPath": "art/red.png"})
    assert not result.is_error, text(result)
    saved = relay.project / "art" / "red.png"
    assert f"Saved to: {saved.resolve()}" in text(result) and str(relay.base / "outside") not in text(result)
    assert_saved_not_through(saved, victims)


@pytest.mark.parametrize("name", ["x" * 255, "x" * 252 + ".pn", "é" * 127])
async def test_an_output_name_too_long_once_suffixed_is_refused_before_the_api_bills(
    relay: InMemory, emulator: FakeGeminiApi, name: str
) -> None:
    async with relay.client(**on_the_api(emulator)) as client:
        result = await client.call_tool("gemini-image", {"prompt": "a red square", "outputPath": f"art/{name}"})
    assert_refused(result, "the limit is 255")
    assert emulator.media.generation_count() == 0


async def test_a_path_too_long_in_the_project_is_refused_before_the_api_bills(
    relay: InMemory, emulator: FakeGeminiApi
) -> None:
    deep = "/".join(["d" * 200] * 20 + ["d" * 60])  # each part and the argument fit; under the project root not
    async with relay.client(**on_the_api(emulator)) as client:
        result = await client.call_tool("gemini-image", {"prompt": "a red square", "outputPath": f"{deep}/red.png"})
    assert_refused(result, "(PATH_MAX 4096)")
    assert emulator.media.generation_count() == 0
