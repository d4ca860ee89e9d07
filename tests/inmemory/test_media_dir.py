"""Generated media stays out of the diff: the default media folder ignores itself (a `.gitignore` of `*`), so after
an image is made neither `git status` nor gemini-assess shows anything new; a folder the user chose is left as is."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.fake_gemini_api import FakeGeminiApi
from tests.git_repo import GitRepo
from tests.inmemory.conftest import InMemory, text_of

pytestmark = [pytest.mark.anyio, pytest.mark.spawns_git]


@pytest.fixture
def api() -> Iterator[FakeGeminiApi]:
    with FakeGeminiApi() as fake:
        yield fake


def media_world(relay: InMemory, api: FakeGeminiApi, **more: str) -> dict[str, str]:
    return {
        "GEMINI_API_KEY": "dummy",  # gemini-image on the gemini backend: the Gemini API makes it
        "GOOGLE_GEMINI_BASE_URL": api.base_url,
        "GEMINI_RELAY_TOOLSETS": "review,media",
        "PATH": "/usr/bin:/bin",  # gemini-assess runs git
        **more,
    }


async def test_an_image_made_in_a_clean_repository_leaves_git_status_and_gemini_assess_empty(
    relay: InMemory, api: FakeGeminiApi
) -> None:
    repo = GitRepo.create(relay.project, {"a.py": "x = 1\n"})
    async with relay.client(**media_world(relay, api)) as client:
        image = await client.call_tool("gemini-image", {"prompt": "a red square"})
        edit = await client.call_tool("gemini-image-edit", {"prompt": "a blue square"})
        assessed = await client.call_tool("gemini-assess", {})
    assert not image.is_error and not edit.is_error, text_of(image)
    made = [Path(p) for r in (image, edit) for p in (r.structured_content or {})["files"]]
    assert all(p.is_file() and p.parent == (relay.project / "gemini-media").resolve() for p in made)
    assert repo.git("status", "--porcelain") == ""
    assert (assessed.structured_content or {})["untrackedFiles"] == []
    assert (assessed.structured_content or {})["diffStat"]["files"] == 0


async def test_a_media_folder_the_user_chose_gets_no_gitignore(relay: InMemory, api: FakeGeminiApi) -> None:
    GitRepo.create(relay.project, {"a.py": "x = 1\n"})
    chosen = relay.project / "assets"
    async with relay.client(**media_world(relay, api, GEMINI_RELAY_MEDIA_DIR=str(chosen))) as client:
        made = await client.call_tool("gemini-image-edit", {"prompt": "a logo"})
    assert not made.is_error, text_of(made)
    assert Path((made.structured_content or {})["files"][0]).parent == chosen.resolve()
    assert not (chosen / ".gitignore").exists()  # the user's folder, to commit or not
