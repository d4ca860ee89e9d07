"""gemini-image refuses a destination outside the project root before agy runs (nothing generated, nothing billed),
and its default folder stays out of the diff."""

from __future__ import annotations

import json

import pytest

from gemini_relay.jobs.store.files import FileJobStore
from tests.git_repo import GitRepo
from tests.harness import Relay
from tests.test_server_surface import text_of

pytestmark = pytest.mark.anyio


def image_runs(relay: Relay) -> int:
    """Runs of the fake agy that took a prompt (the --help probe does not)."""
    log = relay.base / "fake-agy.log"
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    starts = [json.loads(line) for line in lines]
    return sum(1 for e in starts if e["event"] == "start" and "--output-format" in e["argv"])


@pytest.mark.parametrize("output_path", ["../out.png", "link/out.png", "link/", "~/out.png"])
async def test_an_escaping_output_path_is_refused_by_name_before_agy_runs(agy_relay: Relay, output_path: str) -> None:
    (agy_relay.project / "link").symlink_to(agy_relay.base)
    async with agy_relay.client() as client:
        result = await client.call_tool("gemini-image", {"prompt": "[[agy:image]] x", "outputPath": output_path})
    assert result.is_error
    assert text_of(result).startswith(
        f"Error executing gemini-image: Invalid arguments for gemini-image: outputPath: {output_path!r} resolves "
        "outside the project root"
    )
    assert image_runs(agy_relay) == 0
    assert not list(agy_relay.base.glob("*.png"))


async def test_a_default_image_folder_symlinked_out_of_the_root_is_refused_before_agy_runs(agy_relay: Relay) -> None:
    outside = agy_relay.base / "elsewhere"
    outside.mkdir()
    (agy_relay.project / "gemini-images").symlink_to(outside)
    async with agy_relay.client() as client:
        result = await client.call_tool("gemini-image", {"prompt": "[[agy:image]] x"})
        inside = await client.call_tool("gemini-image", {"prompt": "[[agy:image]] x", "outputPath": "art/"})
    assert result.is_error
    assert text_of(result).startswith("Error executing gemini-image: The default image folder ")
    assert "resolves outside the project root" in text_of(result)
    assert list(outside.iterdir()) == []
    assert not inside.is_error, text_of(inside)  # an explicit destination inside the root still works
    assert image_runs(agy_relay) == 1


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("a\x00b.png", "a path cannot contain a NUL byte"),
        ("x" * 300, "a path component is 300 bytes; the limit is 255"),
    ],
)
async def test_an_output_path_the_os_cannot_take_is_a_field_named_error(
    agy_relay: Relay, value: str, reason: str
) -> None:
    async with agy_relay.client() as client:
        result = await client.call_tool("gemini-image", {"prompt": "x", "outputPath": value})
    assert text_of(result) == f"Error executing gemini-image: Invalid arguments for gemini-image: outputPath: {reason}"
    assert image_runs(agy_relay) == 0


async def test_a_saved_image_is_recorded_in_its_job_for_the_page(agy_relay: Relay) -> None:
    async with agy_relay.client() as client:
        result = await client.call_tool("gemini-image", {"prompt": "[[agy:image]] x", "outputPath": "art/"})
    assert not result.is_error and result.meta is not None, text_of(result)
    store = FileJobStore(agy_relay.home / ".local" / "state" / "gemini-relay")
    recorded = [store.files(job_id) for job_id in store.job_ids()]
    assert recorded == [[result.meta["path"]]]


async def test_an_image_in_the_default_folder_leaves_git_status_clean(agy_relay: Relay) -> None:
    repo = GitRepo.create(agy_relay.project, {"a.py": "x = 1\n"})
    async with agy_relay.client() as client:
        result = await client.call_tool("gemini-image", {"prompt": "[[agy:image]] a red square"})
    assert not result.is_error and result.meta is not None, text_of(result)
    assert result.meta["path"].startswith(str((agy_relay.project / "gemini-images").resolve()))
    assert repo.git("status", "--porcelain") == ""
